"""Command lines (docs/architecture.md, "Command lines"): every ``python -m`` entry of the
repository is parsed by a ``serving.command_flags.Command`` except the standalone scripts of
:data:`STANDALONE`, which keep ``argparse``; nothing else builds a parser of its own.
Read from the sources with ``ast``."""

import ast
import pathlib

import pytest

from tests.file_trees import write_files

REPO = pathlib.Path(__file__).resolve().parents[1]

#: The scripts that parse their command line with ``argparse``, and why. Each drives or reads
#: the authors' code and is run by hand, once per fixture or checkpoint, as its page says;
#: no other command imports it, and an ``argparse`` parser is a local object, so the reason
#: for the one flag system (commands loaded into one process never define a flag twice)
#: does not arise.
STANDALONE = {
    # An authors' checkpoint -> a preset (docs/checkpoint_conversion.md).
    "tools.checkpoint_conversion.convert_memn2n_checkpoints": "their MATLAB workspace",
    "tools.checkpoint_conversion.convert_tp_transformer_checkpoints": "their torch.save file",
    "tools.checkpoint_conversion.convert_tpr_rnn_checkpoints": "their tf.train.Saver files",
    # The authors' code run on a real batch -> a tests/fidelity fixture (docs/fidelity*.md).
    "tools.fidelity.memn2n": "their MATLAB code under Octave",
    "tools.fidelity.tp_transformer": "their PyTorch model",
    "tools.fidelity.tpr_rnn": "their TensorFlow 1 graph",
    # The 1k bAbI subset for, and the log of, their MATLAB training (docs/training.md).
    "experiments.memn2n_matlab_check": "their MATLAB training run under Octave",
}

#: The one flag system: it defines absl flags on each command's own ``FlagValues``.
FLAG_SYSTEM = "serving.command_flags"

#: The folders whose modules run as ``python -m``, and the long fuzz run of the outer ring.
ENTRY_FOLDERS = ("bench", "experiments", "tools", "train", "serving", "tpr_keras")
OTHER_ENTRIES = ("tests/serving/serving_fuzz.py",)

#: Calls that build a command-line parser: argparse, optparse, getopt, absl's global flags.
PARSER_CALLS = {"ArgumentParser", "OptionParser", "getopt", "gnu_getopt"}


def _modules(root):
    """``{dotted name: path}`` of the modules a command may run or import: the entry
    folders and those of :data:`OTHER_ENTRIES` (``tests/serving``)."""
    folders = ENTRY_FOLDERS + tuple(str(pathlib.PurePath(p).parent) for p in OTHER_ENTRIES)
    paths = [p for top in folders for p in sorted((root / top).rglob("*.py"))]
    found = {}
    for path in paths:
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _tree(path):
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _builds_a_parser(tree):
    """Whether the module calls ``ArgumentParser``, ``OptionParser``, ``getopt``, an absl
    ``DEFINE_*`` or ``app.run`` (anywhere, inside functions too)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in PARSER_CALLS or name.startswith("DEFINE_"):
            return True
        if (name == "run" and isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name) and func.value.id == "app"):
            return True
    return False


def _is_entry(path, tree):
    """``__main__.py``, or a module with a top-level ``if __name__ == "__main__":``."""
    return path.name == "__main__.py" or any(
        isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
        for node in tree.body)


def _imports(tree, known):
    """The known modules ``tree`` imports (``from p import m`` names ``p`` and ``p.m``)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return found & set(known)


def command_lines(root=REPO):
    """``(own_parsers, off_the_system)``: the modules that build a parser, and the entry
    modules outside :data:`STANDALONE` that reach no :data:`FLAG_SYSTEM` through the
    repository's imports."""
    known = _modules(root)
    trees = {name: _tree(path) for name, path in known.items()}
    own = sorted(name for name, tree in trees.items()
                 if name.split(".")[0] != "tests" and _builds_a_parser(tree))
    entries = [name for name, path in known.items()
               if (path.relative_to(root).parts[0] in ENTRY_FOLDERS
                   or str(path.relative_to(root)) in OTHER_ENTRIES)
               and _is_entry(path, trees[name]) and name not in STANDALONE]
    imports = {name: _imports(tree, known) for name, tree in trees.items()}
    off = []
    for entry in sorted(entries):
        seen, todo = {entry}, [entry]
        while todo and FLAG_SYSTEM not in seen:
            new = imports[todo.pop()] - seen
            seen |= new
            todo += sorted(new)
        if FLAG_SYSTEM not in seen:
            off.append(entry)
    return own, off


@pytest.fixture(scope="module")
def scan():
    return command_lines()


def test_only_the_standalone_scripts_and_the_flag_system_build_a_parser(scan):
    own, _ = scan
    assert own == sorted(set(STANDALONE) | {FLAG_SYSTEM})


def test_every_other_entry_point_is_parsed_by_a_command(scan):
    _, off = scan
    assert not off, off


def test_architecture_page_names_every_standalone_script():
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert not [name for name in STANDALONE if f"`{name}`" not in page]


def test_the_scan_finds_parsers_and_entries_off_the_flag_system(tmp_path):
    """An ``argparse`` parser inside a function, absl's global ``DEFINE_*`` and ``app.run``
    are parsers of their own, ``argparse.Namespace`` is not; an entry module reaching the
    flag system through another module is on it, one reaching nothing is off it."""
    files = {
        "serving/command_flags.py": "from absl import flags\nflags.DEFINE_string('a', '', '')\n",
        "tools/a.py": "import argparse\ndef main():\n    argparse.ArgumentParser()\n",
        "tools/b.py": "from absl import app, flags\nflags.DEFINE_integer('n', 1, '')\n",
        "tools/c.py": "from absl import app\nif __name__ == '__main__':\n    app.run(print)\n",
        "tools/d.py": "import argparse\nargs = argparse.Namespace(x=1)\n",
        "tools/e/__main__.py": "from tools.e.cli import main\nmain()\n",
        "tools/e/cli.py": "from serving.command_flags import Command\n",
        "bench/f.py": "import sys\nif __name__ == '__main__':\n    print(sys.argv)\n",
        "tests/serving/serving_fuzz.py": "if __name__ == '__main__':\n    pass\n",
    }
    write_files(tmp_path, files)
    own, off = command_lines(tmp_path)
    assert own == ["serving.command_flags", "tools.a", "tools.b", "tools.c"]
    assert off == ["bench.f", "tests.serving.serving_fuzz", "tools.c"]
