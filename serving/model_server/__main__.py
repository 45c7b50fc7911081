"""``python -m serving.model_server``: the same command as ``python -m serving.server``."""

import sys

from serving.model_server.flags import exit_before_tensorflow

exit_before_tensorflow(sys.argv[1:])  # --help, bad flags: before TensorFlow loads

from serving.model_server.main import main  # noqa: E402

sys.exit(main())
