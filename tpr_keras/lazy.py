"""Package attributes imported on first use (a module ``__getattr__``, PEP 562)."""

import importlib
import sys


def lazy_getattr(package, exports):
    """A module ``__getattr__`` for ``package`` that imports ``name`` from the submodule
    ``exports[name]`` the first time it is asked for, and keeps it. A submodule name is
    relative to ``package`` unless it is a full ``tpr_keras.…`` path (a re-export from
    another package); ``"submodule:attribute"`` exports ``attribute`` under another name.

    Used where a submodule is heavy or optional (TensorFlow's export code), so that
    importing the package does not import it.

    Example:
    >>> __getattr__ = lazy_getattr(__name__, {"export_babi_model": "babi"})
    """

    def __getattr__(name):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = exports[name].partition(":")
        if not module.startswith("tpr_keras."):
            module = f"{package}.{module}"
        value = getattr(importlib.import_module(module), attribute or name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
