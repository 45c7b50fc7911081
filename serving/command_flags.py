"""One command's absl flags: its own ``FlagValues``, ``--help``, and one-line usage errors.

Every command line (``train``, ``serving``, ``bench``, ``experiments``, ``tools`` and the
serving fuzzer) parses its flags with this. Each :class:`Command` keeps its flags in a
fresh ``flags.FlagValues`` rather than absl's global registry, so commands that one process
imports together (the tests import many) never define a name twice, and ``main(argv)`` can
be called again with another list. :meth:`Command.group` sorts ``--help`` by purpose.
Flags take ``--flag=value`` or ``--flag value``; booleans ``--flag``, ``--noflag`` or
``--flag=true|false|1|0``.

This module imports absl only (no TensorFlow): ``serving.client`` uses it too.

Example:

    command = Command("python -m tools.example", "Print a greeting.",
                      example="python -m tools.example --name you --times 2")
    command.group("Greeting")
    command.string("name", "world", "who to greet")
    command.integer("times", 1, "how often")
    args = command.parse(["--name=you", "--times", "2"])
    print(args.name, args.times)  # you 2
"""

from __future__ import annotations

import re
import sys
import textwrap
import types
from collections.abc import Sequence

from absl import flags

_HELP = ("-h", "-help", "--help", "-?", "--helpshort", "--helpfull")


class Command:
    """The flags and positional arguments of one command line.

    Args:
        prog: How the user runs it (``python -m tools.report``), for usage and errors.
        description: What ``--help`` says under the usage line (a docstring's first
            paragraph is enough).
        example: One typical command line, shown under the description.
    """

    def __init__(self, prog: str, description: str = "", example: str = ""):
        self.prog = prog
        self.description = " ".join(description.split())
        self.example = example
        self.flag_values = flags.FlagValues()
        self._groups: list[tuple[str, list[str]]] = []  # (title, flag names), in order
        self._required: list[str] = []
        self._positionals: list[tuple[str, str, str]] = []  # (name, count, help)

    # ------------------------------------------------------------------- definitions
    def group(self, title: str) -> None:
        """The flags defined next are listed under ``title`` in ``--help`` (those defined
        before any group come first, untitled)."""
        self._groups.append((title, []))

    def _define(self, define, name, default, help, required, **kwargs):
        define(name=name, default=default, help=help or "", flag_values=self.flag_values,
               **kwargs)
        if required:
            self._required.append(name)
        if self._groups:
            self._groups[-1][1].append(name)

    def string(self, name: str, default: str | None = None, help: str = "",
               required: bool = False) -> None:
        """A ``--name=TEXT`` flag."""
        self._define(flags.DEFINE_string, name, default, help, required)

    def integer(self, name: str, default: int | None = None, help: str = "",
                required: bool = False, lower_bound: int | None = None) -> None:
        """A ``--name=N`` flag (an int), at least ``lower_bound`` when one is given."""
        self._define(flags.DEFINE_integer, name, default, help, required,
                     lower_bound=lower_bound)

    def float(self, name: str, default: float | None = None, help: str = "",
              required: bool = False) -> None:
        """A ``--name=X`` flag (a float)."""
        self._define(flags.DEFINE_float, name, default, help, required)

    def boolean(self, name: str, default: bool = False, help: str = "") -> None:
        """A ``--[no]name`` flag; also ``--name=true|false|1|0``."""
        self._define(flags.DEFINE_bool, name, default, help, False)

    def enum(self, name: str, default: str | None, choices: Sequence[str], help: str = "",
             required: bool = False) -> None:
        """A ``--name=CHOICE`` flag."""
        self._define(flags.DEFINE_enum, name, default, help, required,
                     enum_values=[str(c) for c in choices])

    def multi(self, name: str, help: str = "", choices: Sequence[str] | None = None,
              required: bool = False) -> None:
        """A flag given any number of times (``--name=A --name=B``): a list, [] if never."""
        if choices is None:
            self._define(flags.DEFINE_multi_string, name, [], help, required)
        else:
            self._define(flags.DEFINE_multi_enum, name, [], help, required,
                         enum_values=[str(c) for c in choices])

    def alias(self, name: str, original: str) -> None:
        """``--name`` as another spelling of ``--original``."""
        flags.DEFINE_alias(name, original, flag_values=self.flag_values)

    def positional(self, name: str, help: str = "", count: str = "1") -> None:
        """A positional argument: ``count`` ``"1"`` (exactly one), ``"?"`` (none or one,
        None if absent), ``"*"`` or ``"+"`` (a list of the rest; only the last one)."""
        if count not in ("1", "?", "*", "+"):
            raise ValueError(f"count must be 1, ?, * or +, not {count!r}")
        self._positionals.append((name, count, help))

    # ----------------------------------------------------------------------- parsing
    def error(self, message: str):
        """Ends the command: one line ``PROG: error: MESSAGE`` on stderr, exit status 2."""
        sys.stdout.flush()
        print(f"{self.prog}: error: {' '.join(str(message).split())} (--help lists the "
              "flags)", file=sys.stderr, flush=True)
        raise SystemExit(2)

    def parse(self, argv: Sequence[str] | None = None) -> types.SimpleNamespace:
        """The values of ``argv`` (the arguments after the program; default
        ``sys.argv[1:]``) as attributes, positionals by their names; ``given`` is the set of
        flag names the command line set. ``--help`` prints the help and exits 0; a bad
        command line is :meth:`error`."""
        argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
        head = argv[:argv.index("--")] if "--" in argv else argv
        if any(arg in _HELP for arg in head):
            sys.stdout.write(self.help_text())
            raise SystemExit(0)
        values = self.flag_values
        if values.is_parsed():  # a fresh Command per command line (main builds its own)
            raise RuntimeError(f"{self.prog}: this Command has parsed a command line already")
        try:
            rest = values([self.prog, *argv])[1:]
        except flags.Error as error:
            self.error(error)
        missing = [f"--{name}" for name in self._required if values[name].value in (None, [])]
        if missing:
            self.error(f"{', '.join(missing)} is required" if len(missing) == 1 else
                       f"{', '.join(missing)} are required")
        out = {name: values[name].value for name in values}
        out.update(self._assign(rest))
        out["given"] = {name for name in values if values[name].present}
        return types.SimpleNamespace(**out)

    def _assign(self, rest: list[str]) -> dict:
        out = {}
        for i, (name, count, _) in enumerate(self._positionals):
            if count in ("*", "+"):
                out[name], rest = rest, []
                if count == "+" and not out[name]:
                    self.error(f"{name.upper()} is required")
            elif rest:
                out[name], rest = rest[0], rest[1:]
            elif count == "1":
                self.error(f"{name.upper()} is required")
            else:
                out[name] = None
        if rest:
            self.error(f"unexpected argument(s): {' '.join(rest)}")
        return out

    # -------------------------------------------------------------------------- help
    def help_text(self, width: int = 100) -> str:
        """What ``--help`` prints: usage, description, example, then each argument and flag
        with its default, under its group's title."""
        usage = "".join(f" {name.upper()}" if count == "1" else f" [{name.upper()}]"
                        if count == "?" else f" {name.upper()} ..." if count == "+" else
                        f" [{name.upper()} ...]" for name, count, _ in self._positionals)
        out = [f"usage: {self.prog} [--flag=value ...]{usage}", ""]
        if self.description:
            out += [textwrap.fill(self.description, width), ""]
        if self.example:
            out += [f"Example: {self.example}", ""]
        grouped = {name for _, names in self._groups for name in names}
        first = [(name.upper(), text) for name, _, text in self._positionals]
        first += [self._entry(name) for name in self.flag_values
                  if name not in grouped and self.flag_values[name].name == name]
        sections = [("", first)] + [(title, [self._entry(name) for name in names])
                                    for title, names in self._groups]
        for title, entries in sections:
            if not entries:
                continue
            if title:
                out.append(f"{title}:")
            for head, text in entries:
                out.append(f"  {head}")
                if text:
                    out += textwrap.wrap(" ".join(text.split()), width,
                                         initial_indent="      ", subsequent_indent="      ")
            if title:
                out.append("")
        if out[-1] != "":
            out.append("")
        out += ["Flags take --flag=value or --flag value; booleans --flag, --noflag or "
                "--flag=true|false."]
        return "\n".join(out) + "\n"

    def _entry(self, name: str) -> tuple[str, str]:
        flag = self.flag_values[name]
        text = re.sub(r"^<[^>]*>: |^\(no help available\)$", "", flag.help or "")
        text = text.replace("; repeat this option to specify a list of values", "")
        return _flag_line(flag, name in self._required), text


def _flag_line(flag, required: bool) -> str:
    kind = flag.flag_type()
    choices = getattr(flag.parser, "enum_values", None)
    if kind == "bool":
        default = "none" if flag.default is None else "true" if flag.default else "false"
        return f"--[no]{flag.name} (default {default})"
    shown = "{" + "|".join(choices) + "}" if choices else kind.replace("multi ", "")
    many = " (repeatable)" if isinstance(flag, flags.MultiFlag) else ""
    if required:
        return f"--{flag.name}={shown} (required){many}"
    default = flag.default
    text = "none" if default in (None, []) else "''" if default == "" else str(default)
    return f"--{flag.name}={shown} (default {text}){many}"
