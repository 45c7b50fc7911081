"""Regenerate every table of ``results/*.md`` (and ``results/studies/``), the README and
``docs/`` from committed JSON (and the flag listings of docs/flags_*.md from the train
commands' ``--help``).

    python -m tools.report            # rewrite the generated blocks in place
    python -m tools.report --check    # rewrite nothing; exit 1 with a diff if any block differs
    python -m tools.report --print math-steps          # one block's Markdown on stdout
    python -m tools.report --figure math-sizes --out results/figures/math/sizes.png

A generated block is the text between two HTML comments naming it::

    <!-- report:entailment-table1 -->
    ...made by tools.report.blocks.BLOCKS["entailment-table1"]...
    <!-- /report:entailment-table1 -->

Text outside the markers is never touched. A begin marker without its end marker, an end
marker without a begin, a nested block or an unknown block name is an error naming the file.
Figures (PNG) are not rewritten with the blocks: ``--figure NAME`` draws one
(:data:`tools.report.blocks.FIGURES`; needs the ``analysis`` extra).
"""

import difflib
import glob
import os
import re
import sys

from tools.report.common import ReportError

MARKER = re.compile(r"<!-- (/?)report:([A-Za-z0-9_.-]+) -->")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def blocks_of(text, path):
    """``[(name, start, end)]``: the offsets of each block's body (between its markers)."""
    found, open_block = [], None
    for match in MARKER.finditer(text):
        closing, name = match.group(1) == "/", match.group(2)
        line = text.count("\n", 0, match.start()) + 1
        if not closing:
            if open_block:
                raise ReportError(f"{path}:{line}: block {name!r} begins inside block "
                                  f"{open_block[0]!r}, which has no end marker before it")
            open_block = (name, match.end())
        elif not open_block or open_block[0] != name:
            raise ReportError(f"{path}:{line}: end marker of {name!r} without its begin marker")
        else:
            found.append((name, open_block[1], match.start()))
            open_block = None
    if open_block:
        raise ReportError(f"{path}: block {open_block[0]!r} has no end marker "
                          f"<!-- /report:{open_block[0]} -->")
    return found


def rewrite(text, path, generate):
    """``text`` with every block's body replaced by ``"\\n" + generate(name) + "\\n"``."""
    pieces, position = [], 0
    for name, start, end in blocks_of(text, path):
        body = generate(name)
        pieces += [text[position:start], "\n", body.strip("\n"), "\n"]
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def generator(root, blocks):
    """``generate(name)``: the Markdown of one block, made from the JSON under ``root``."""
    def generate(name):
        if name not in blocks:
            raise ReportError(f"unknown block {name!r}; known: {', '.join(sorted(blocks))}")
        return blocks[name](root)
    return generate


def run(root, files, check, blocks=None, out=sys.stdout):
    """Rewrite (or with ``check`` compare) ``files``; the number of files that differ."""
    if blocks is None:
        from tools.report.blocks import BLOCKS as blocks
    generate = generator(root, blocks)
    differ = 0
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            new = rewrite(text, path, generate)
        except ReportError as error:
            if str(error).startswith("unknown block"):
                raise ReportError(f"{path}: {error}") from None
            raise
        if new == text:
            continue
        differ += 1
        if check:
            name = os.path.relpath(path, root)
            out.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True),
                                                f"{name} (committed)",
                                                f"{name} (from the JSON)"))
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
            print(f"updated {os.path.relpath(path, root)}", file=out)
    return differ


def default_files(root):
    """``results/*.md``, ``results/studies/*.md`` (investigations), the README (its
    presets table) and ``docs/*.md`` (the flags)."""
    return (sorted(glob.glob(os.path.join(root, "results", "*.md")))
            + sorted(glob.glob(os.path.join(root, "results", "studies", "*.md")))
            + [os.path.join(root, "README.md")]
            + sorted(glob.glob(os.path.join(root, "docs", "*.md"))))


def missing_extra():
    """Why the tables cannot be generated here, or ``None``: the math seed tables' p-values
    need scipy (the ``analysis`` extra), without which every block would differ."""
    import importlib.util

    if importlib.util.find_spec("scipy") is None:
        return ("tools.report needs the 'analysis' extra (scipy, for the p-values of the "
                "math seed tables): pip install -e \".[analysis]\"")
    return None


def main(argv=None):
    from serving.command_flags import Command

    parser = Command("python -m tools.report", __doc__.split("\n\n")[0])
    parser.boolean("check", False, "rewrite nothing; exit 1 and print a diff if a block differs")
    parser.string("root", ROOT, "the repository root")
    parser.string("print", None, "print this block's Markdown and rewrite nothing")
    parser.string("figure", None, "draw this figure to --out and rewrite nothing")
    parser.string("out", None, "with --figure: the PNG to write")
    parser.positional("files", "Markdown files (default: results/*.md, README.md and "
                      "docs/*.md under --root)", "*")
    args = parser.parse(argv)
    if args.figure:
        return draw(parser, args.root, args.figure, args.out)
    missing = missing_extra()
    if missing:
        print(f"error: {missing}", file=sys.stderr)
        return 2
    if args.print:
        from tools.report.blocks import BLOCKS

        try:
            print(generator(args.root, BLOCKS)(args.print))
        except ReportError as error:
            parser.error(str(error))
        return 0
    files = args.files or default_files(args.root)
    try:
        differ = run(args.root, files, args.check)
    except (ReportError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.check and differ:
        print(f"\n{differ} file(s) differ from what the JSON gives: run python -m tools.report",
              file=sys.stderr)
        return 1
    return 0


def draw(parser, root, name, out):
    """``--figure NAME --out PNG``: one figure of :data:`tools.report.blocks.FIGURES`."""
    from tools.report.blocks import FIGURES

    if name not in FIGURES:
        parser.error(f"--figure: unknown figure {name!r}; known: {', '.join(sorted(FIGURES))}")
    if not out:
        parser.error("--figure needs --out PNG")
    try:
        FIGURES[name](root, out)
    except ValueError as error:
        parser.error(str(error))
    print(f"wrote {out}")
    return 0
