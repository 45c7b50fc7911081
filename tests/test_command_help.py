"""Each command's ``--help`` starts with a description of what it does (the words below must be
in the paragraph under its usage line), and every ``python -m`` command the README names is
in this table. A description that names one model of two, or one task of three, fails here:
``train.babi`` trains TPR-RNN and MemN2N, ``serving.client`` asks three kinds of model.
When this fails, fix the command's description (its docstring or ``Command(..., description)``),
then this table."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]

#: command -> words its description must hold (what it does, and to what)
DESCRIBES = {
    "train.babi": ["Train", "TPR-RNN", "MemN2N", "bAbI"],
    "train.math": ["Train", "TP-Transformer", "Transformer baseline", "Mathematics"],
    "train.entailment": ["Train", "TPRU", "LSTM", "GRU", "BiDAF", "entailment"],
    "train.export": ["Export", "preset", "model.keras", "SavedModel"],
    "train.evaluate": ["preset", "test files", "recorded"],
    "train.save_preset": ["training run", "preset"],
    "train.route_presets": ["math presets", "routed preset"],
    "train.extract_part": ["decoder", "routed math preset", "preset of its own"],
    "serving.server": ["server", "gRPC", "REST", "SavedModels"],
    "serving.client": ["Ask", "bAbI", "Mathematics", "entailment"],
    "serving.export": ["Export", "bAbI", "SavedModel"],
    "tools.report": ["Regenerate", "README"],
    "tools.readme_outputs": ["README", "outputs", "run"],
}


def description(module):
    """The paragraph ``python -m MODULE --help`` prints under its usage line."""
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, "-m", module, "--help"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"usage: python -m {module} ") and lines[1] == "", lines[:2]
    paragraph = " ".join(lines[2:lines.index("", 2)])
    return paragraph


@pytest.mark.parametrize("module", sorted(DESCRIBES))
def test_help_starts_with_what_the_command_does(module):
    text = description(module)
    missing = [word for word in DESCRIBES[module] if word not in text]
    assert not missing, f"python -m {module} --help: {text!r} does not say {missing}"
    assert len(text) <= 300, f"more than a short description: {text!r}"


def test_every_command_the_readme_names_is_checked():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"python -m ((?:train|serving|tools)\.[a-z_.]+[a-z_])", readme))
    assert named and not named - set(DESCRIBES), sorted(named - set(DESCRIBES))
