"""What every ``train.*`` command shares at the terminal; importing this does not import TensorFlow.

* :func:`run` replaces ``absl.app.run``: ``--help`` prints the command's own flags,
  grouped, with their defaults, and exits 0 without starting TensorFlow (absl's own
  flags stay under ``--helpfull``); an error ends the command with one line saying what
  failed and exit status 1 (the traceback only with ``--debug`` or
  ``TPR_KERAS_DEBUG=1``).
* :func:`import_tensorflow` is :func:`tpr_keras.runtime.import_tensorflow` (TensorFlow
  imported with its start-up noise filtered out) with the ``--tf_logs`` flag honoured
  besides ``TPR_KERAS_TF_LOGS=1``.

The command-line half of the project: this package (``train``) parses flags, the library
(``tpr_keras``) does not.
"""

from __future__ import annotations

import os
import re
import sys
import textwrap

from tpr_keras import runtime

DEBUG_ENV = "TPR_KERAS_DEBUG"

#: absl's own flags: listed by ``--helpfull`` only.
_ABSL_MODULE = re.compile(r"^absl(\.|$)")


def debug_enabled() -> bool:
    """``--debug`` (when defined and parsed) or ``TPR_KERAS_DEBUG=1``."""
    return runtime.truthy(os.environ.get(DEBUG_ENV)) or _flag_value("debug", False)


def tf_logs_enabled() -> bool:
    """``--tf_logs`` (when defined and parsed) or ``TPR_KERAS_TF_LOGS=1``."""
    return runtime.tf_logs_enabled() or _flag_value("tf_logs", False)


def _flag_value(name, default):
    from absl import flags

    FLAGS = flags.FLAGS
    if name not in FLAGS or not FLAGS.is_parsed():
        return default
    return FLAGS[name].value


def quiet_environment() -> None:
    """:func:`tpr_keras.runtime.quiet_environment`, ``--tf_logs`` honoured."""
    runtime.quiet_environment(tf_logs=tf_logs_enabled())


def import_tensorflow():
    """:func:`tpr_keras.runtime.import_tensorflow`, ``--tf_logs`` honoured; a quiet start
    also caps absl's ``--verbosity`` at WARNING (TensorFlow's INFO lines go through it).

    Returns the ``tensorflow`` module.
    """
    tf_logs = tf_logs_enabled()
    tf = runtime.import_tensorflow(tf_logs=tf_logs)
    if not tf_logs:
        from absl import logging as absl_logging

        if absl_logging.get_verbosity() > absl_logging.WARNING:
            absl_logging.set_verbosity(absl_logging.WARNING)
    return tf


# ------------------------------------------------------------------------- --help
def _default_text(flag) -> str:
    value = flag.default
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value)) or "''"
    return str(value) if str(value) != "" else "''"


def _flag_line(flag) -> str:
    name = f"--[no]{flag.name}" if flag.flag_type() == "bool" else f"--{flag.name}"
    choices = getattr(flag.parser, "enum_values", None)
    kind = "{" + "|".join(choices) + "}" if choices else flag.flag_type()
    if flag.flag_type() == "bool":
        return f"  {name} (default {_default_text(flag)})"
    return f"  {name}={kind} (default {_default_text(flag)})"


def command_flags():
    """``{name: Flag}`` of every flag the running command accepts, absl's own excluded."""
    from absl import flags

    found = {}
    for module, module_flags in flags.FLAGS.flags_by_module_dict().items():
        if _ABSL_MODULE.match(module) or module.startswith("absl"):
            continue
        for flag in module_flags:
            found[flag.name] = flag
    return found


def format_help(command: str, doc: str | None, groups, width: int = 100) -> str:
    """The ``--help`` text: usage, the first paragraph of ``doc``, then ``groups``.

    ``groups`` is a list of ``(title, [flag names])``; flags the command accepts that
    no group names are listed under "Other flags", so nothing is ever hidden.
    """
    accepted = command_flags()
    out = [f"usage: {command} [--flag=value ...]", ""]
    if doc:
        first = doc.strip().split("\n\n")[0]
        out += [textwrap.fill(" ".join(first.split()), width), ""]
    listed = set()
    sections = list(groups)
    rest = sorted(set(accepted) - {n for _, names in sections for n in names})
    if rest:
        sections.append(("Other flags", rest))
    for title, names in sections:
        names = [n for n in names if n in accepted and n not in listed]
        if not names:
            continue
        out.append(f"{title}:")
        for name in names:
            flag = accepted[name]
            listed.add(name)
            out.append(_flag_line(flag))
            text = re.sub(r"^<[^>]*>: ", "", " ".join((flag.help or "").split()))
            out += textwrap.wrap(text, width,
                                 initial_indent="      ", subsequent_indent="      ")
        out.append("")
    out.append("Flags take --flag=value or --flag value; --helpfull adds absl's own flags "
               "(logging, profiling).")
    return "\n".join(out) + "\n"


def _wants_help(argv) -> bool:
    for arg in argv[1:]:
        if arg == "--":
            return False
        if arg in ("-h", "-?", "--help", "--helpshort", "-help", "-helpshort"):
            return True
    return False


# --------------------------------------------------------------------------- run
def _wants_preset_list(argv) -> bool:
    return any(arg in ("--list_presets", "--list_presets=true", "--list_presets=True")
               for arg in argv[1:])


def format_preset_list(task: str | None) -> str:
    """What ``--list_presets`` prints: the trained presets of ``task`` and the command's
    paper sizes (the choices of its ``--preset`` flag, when it has one)."""
    from absl import flags

    from tpr_keras.presets import preset_files

    out = ["Trained presets (config + weights + vocabulary; load with <Model>.from_preset, "
           "check with python -m train.evaluate --preset NAME, serve with python -m "
           "train.export --preset NAME):", preset_files.describe_presets(task)]
    preset_flag = flags.FLAGS["preset"] if "preset" in flags.FLAGS else None
    choices = getattr(getattr(preset_flag, "parser", None), "enum_values", None)
    if choices:
        out.append(f"Paper sizes (untrained; --preset, <Model>.from_paper_size): "
                   f"{', '.join(choices)}")
    return "\n".join(out) + "\n"


def define_preset_flags(preset: bool = True) -> None:
    """The flags of the preset commands (``train.evaluate``, ``train.export``,
    ``train.save_preset``): ``--preset`` and ``--list_presets`` (with ``preset``),
    ``--debug`` and ``--tf_logs``."""
    from absl import flags

    if preset:
        flags.DEFINE_string("preset", None, "A trained preset's name (--list_presets) or the "
                            "path of a preset folder (save_to_preset).")
        flags.DEFINE_bool("list_presets", False, "Print the trained presets, then exit.")
    flags.DEFINE_bool("debug", False, "Show the full traceback when the command fails.")
    flags.DEFINE_bool("tf_logs", False, "Keep TensorFlow's start-up logging.")


def load_flagged_preset():
    """Starts TensorFlow and loads ``--preset`` (verified); a missing flag is a usage error."""
    from absl import app, flags

    if not flags.FLAGS.preset:
        raise app.UsageError("--preset is required (--list_presets names them)")
    import_tensorflow()
    from tpr_keras.presets import load_preset

    return load_preset(flags.FLAGS.preset)


def run(main, command: str, doc: str | None = None, groups=(),
        presets_task: str | None = None) -> None:
    """``absl.app.run(main)`` with a fast ``--help``, quiet TensorFlow and short errors.

    Args:
        main: ``main(argv)``, as for ``absl.app.run``.
        command: How the user runs it (``python -m train.babi``), for the usage line.
        doc: The command's docstring (its first paragraph heads ``--help``).
        groups: ``(title, [flag names])`` pairs ordering ``--help``.
        presets_task: The task whose trained presets ``--list_presets`` prints
            (``"babi"``, ``"math"``, ``"entailment"``; None: all).
    """
    if _wants_help(sys.argv):
        sys.stdout.write(format_help(command, doc, groups))
        sys.stdout.flush()
        sys.exit(0)
    if _wants_preset_list(sys.argv):
        sys.stdout.write(format_preset_list(presets_task))
        sys.stdout.flush()
        sys.exit(0)
    from absl import app

    def guarded(argv):
        if _flag_value("list_presets", False):  # spellings the fast path did not catch
            sys.stdout.write(format_preset_list(presets_task))
            return 0
        quiet_environment()
        if debug_enabled():
            return main(argv)
        try:
            return main(argv)
        except app.UsageError as error:
            _fail(f"{error}  (--help lists the flags)", status=2)
        except KeyboardInterrupt:
            _fail("interrupted", status=130)
        except Exception as error:  # noqa: BLE001 - one message; --debug gives the traceback
            _fail(f"{_describe(error)}\n(run with --debug for the traceback)")

    app.run(guarded)


def _describe(error: BaseException) -> str:
    message = str(error).strip() or type(error).__name__
    if type(error).__module__ == "builtins":  # FileNotFoundError, ValueError, ...
        return message
    return f"{type(error).__name__}: {message}"


def _fail(message: str, status: int = 1):
    sys.stdout.flush()
    print(f"error: {message}", file=sys.stderr, flush=True)
    sys.exit(status)
