"""``python -m serving.client`` (:func:`serving.client.cli.main`).

A reader that stops early (``python -m serving.client ... | head -1``) closes the pipe: the
command then ends quietly with status 141 (128 + SIGPIPE, what a shell reports for a
process killed by a closed pipe), as the Python docs' recipe for SIGPIPE advises, instead
of printing a ``BrokenPipeError`` traceback. Interrupted (Ctrl-C), it ends with status 130
(128 + SIGINT) and one line, without a ``KeyboardInterrupt`` traceback. The other exit
statuses: :mod:`serving.client.cli`.
"""

import os
import sys

from serving.client.cli import main


def run() -> int:
    try:
        try:
            status = main()
        except SystemExit as stop:  # --help, a usage error
            status = stop.code
        sys.stdout.flush()  # a buffered reply meets the closed pipe here, not at exit
        return status
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr, flush=True)
        return 130
    except BrokenPipeError:
        # Python flushes stdout again at exit: point it at devnull so that fails quietly too
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


sys.exit(run())
