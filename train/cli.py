"""What every ``train.*`` command shares at the terminal; importing this does not import TensorFlow.

* :class:`TrainCommand` is a :class:`serving.command_flags.Command` (the command's own
  flags, never absl's global ``FLAGS``, so any number of commands can be imported into one
  process): ``--help`` prints its flags grouped by purpose with their defaults and exits
  0 without starting TensorFlow; a training command's old ``--preset SIZE`` spelling
  is read as ``--size SIZE`` with a notice on stderr.
* :func:`run` parses the command line and runs ``main(args)``: an error ends the command
  with one line saying what failed and exit status 1 (2 for a usage error; the
  traceback only with ``--debug`` or ``TPR_KERAS_DEBUG=1``).
* :func:`load_flagged_preset` starts TensorFlow (:mod:`train.backend`, which holds the
  backend's set-up) and loads ``--preset``.

The command-line half of the project: this package (``train``) parses flags, the library
(``tpr_keras``) does not.
"""

from __future__ import annotations

import os
import re
import sys

from absl import flags as absl_flags
from absl import logging

from serving.command_flags import Command
from tpr_keras import runtime
from tpr_keras.presets import load_preset, preset_files
from train import backend
from train.errors import UsageError  # noqa: F401  (cli.UsageError: what commands raise)

DEBUG_ENV = "TPR_KERAS_DEBUG"


def debug_enabled(args=None) -> bool:
    """``--debug`` (when ``args`` has it) or ``TPR_KERAS_DEBUG=1``."""
    return runtime.truthy(os.environ.get(DEBUG_ENV)) or bool(getattr(args, "debug", False))


# ---------------------------------------------------------------------- commands
#: The spellings absl reads as ``--preset`` (``-preset`` too), with or without ``=value``.
_PRESET = re.compile(r"^--?preset(?:=(.*))?$")


class TrainCommand(Command):
    """A ``train.*`` command line: a :class:`~serving.command_flags.Command` that, given
    ``sizes``, reads the old ``--preset SIZE`` spelling of its ``--size`` flag.

    Args:
        prog: ``python -m train.NAME``.
        doc: The command's docstring; its first paragraph heads ``--help``.
        example: One typical command line, shown under the description.
        sizes: The paper sizes ``--size`` takes (``--preset`` in commands recorded before
            the rename; those keep running); None: the command has no ``--size``.
        presets_task: The task whose trained presets ``--list_presets`` prints
            (``"babi"``, ``"math"``, ``"entailment"``; None: all).
    """

    def __init__(self, prog: str, doc: str | None, example: str = "",
                 sizes=None, presets_task: str | None = None):
        first = (doc or "").strip().split("\n\n")[0].replace("``", "")
        super().__init__(prog, first, example)
        self.sizes = tuple(sizes) if sizes is not None else None
        self.presets_task = presets_task

    def parse(self, argv=None):
        argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
        if self.sizes is not None:
            argv = self._sizes_from_preset(argv)
        return super().parse(argv)

    def _sizes_from_preset(self, argv):
        out, i = [], 0
        while i < len(argv):
            arg = argv[i]
            if arg == "--":
                return out + argv[i:]
            match = _PRESET.match(arg)
            if not match:
                out.append(arg)
                i += 1
                continue
            value = match.group(1)
            if value is None:
                if i + 1 >= len(argv):
                    self.error("--preset needs a value; sizes are --size now")
                value, i = argv[i + 1], i + 2
            else:
                i += 1
            if value not in self.sizes:
                self.error(f"--preset {value}: --preset names a trained preset, which "
                           f"{self.prog} does not take; sizes are --size "
                           f"({', '.join(self.sizes)})"
                           + ("; start from a trained preset with --init_from"
                              if "init_from" in self.flag_values else ""))
            if any(a == "--size" or a.startswith("--size=") for a in argv):
                self.error("--preset and --size both given: sizes are --size now")
            print(f"--preset {value}: sizes are --size now; read as --size {value}",
                  file=sys.stderr, flush=True)
            out += ["--size", value]
        return out


def command_flags(command) -> dict:
    """``{name: Flag}`` of every flag a train command accepts (``command``: a
    :class:`TrainCommand`, e.g. ``train.babi.command()``)."""
    values = command.flag_values
    return {name: values[name] for name in values if values[name].name == name}


def format_preset_list(command) -> str:
    """What ``--list_presets`` prints: the trained presets of the command's task and its
    paper sizes (the choices of its ``--size`` flag, when it has them)."""
    out = ["Trained presets (config + weights + vocabulary; load with <Model>.from_preset, "
           "check with python -m train.evaluate --preset NAME, serve with python -m "
           "train.export --preset NAME):", preset_files.describe_presets(command.presets_task)]
    if command.sizes:
        out.append(f"Paper sizes (untrained; --size, <Model>.from_paper_size): "
                   f"{', '.join(command.sizes)}")
    return "\n".join(out) + "\n"


def define_preset_flag(command) -> None:
    """``--preset``: a trained preset, by name or folder (the preset commands')."""
    command.string("preset", None, "A trained preset's name (--list_presets) or the path of "
                   "a preset folder (save_to_preset).")


def define_output_flags(command, list_presets: bool = True) -> None:
    """The ``Output`` group of the preset commands: ``--list_presets`` (with
    ``list_presets``), ``--debug`` and ``--tf_logs``."""
    command.group("Terminal output")
    if list_presets:
        command.boolean("list_presets", False, "Print the trained presets, then exit.")
    command.boolean("debug", False, "Show the full traceback when the command fails.")
    command.boolean("tf_logs", False, "Keep TensorFlow's start-up logging.")


def load_flagged_preset(args):
    """Starts TensorFlow and loads ``--preset`` (verified); a missing flag is a usage error."""
    if not args.preset:
        raise UsageError("--preset is required (--list_presets names them)")
    backend.import_tensorflow(args)
    return load_preset(args.preset)


# --------------------------------------------------------------------------- run
def run(command, main, argv=None):
    """Parses the command line with ``command()`` and runs ``main(args)``, with short errors.

    ``--help`` prints the command's flags and exits 0, and ``--list_presets`` its presets,
    both without TensorFlow. absl's logging is set up as ``absl.app.run`` sets it up (its
    global flags, which no train command defines, are marked parsed; INFO verbosity, which
    :func:`train.backend.import_tensorflow` lowers to WARNING unless ``--tf_logs``).

    Args:
        command: Builds the command's :class:`TrainCommand` (a fresh one per call).
        main: ``main(args)``, ``args`` as :meth:`Command.parse` returns them.
        argv: The arguments after the program (default ``sys.argv[1:]``).
    """
    command = command()
    args = command.parse(argv)
    if getattr(args, "list_presets", False):
        sys.stdout.write(format_preset_list(command))
        sys.stdout.flush()
        sys.exit(0)
    if not absl_flags.FLAGS.is_parsed():
        absl_flags.FLAGS.mark_as_parsed()
    logging.use_absl_handler()
    if absl_flags.FLAGS["verbosity"].using_default_value:  # INFO, as absl.app.run makes it
        absl_flags.FLAGS.verbosity = 0
    backend.quiet_environment(args)
    if debug_enabled(args):
        main(args)
        return
    try:
        main(args)
    except UsageError as error:
        _fail(f"{error}  (--help lists the flags)", status=2)
    except KeyboardInterrupt:
        _fail("interrupted", status=130)
    except Exception as error:  # noqa: BLE001 - one message; --debug gives the traceback
        _fail(f"{_describe(error)}\n(run with --debug for the traceback)")


def _describe(error: BaseException) -> str:
    message = str(error).strip() or type(error).__name__
    if type(error).__module__ == "builtins":  # FileNotFoundError, ValueError, ...
        return message
    return f"{type(error).__name__}: {message}"


def _fail(message: str, status: int = 1):
    sys.stdout.flush()
    print(f"error: {message}", file=sys.stderr, flush=True)
    sys.exit(status)
