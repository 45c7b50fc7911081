"""``python -m serving.client`` (:func:`serving.client.cli.main`)."""

import sys

from serving.client.cli import main

sys.exit(main())
