"""``python -m serving.model_server``: the same command as ``python -m serving.server``."""

import sys

from serving.model_server.main import main

sys.exit(main())
