"""The error a ``train.*`` command reports as a usage error: one line on stderr and exit
status 2 (:func:`train.cli.run`), for a command line that cannot run as given. Its own
module so that :mod:`train.backend` and :mod:`train.cli` both raise it without importing
each other."""


class UsageError(Exception):
    """A command line that cannot run as given: one line on stderr, exit status 2."""
