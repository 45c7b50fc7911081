import json
import os
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest

from tpr_keras.provenance import relative_command, run_command, run_source, source_version
from tpr_keras.training import save_run

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_save_run_writes_results_model_and_vocabulary(tmp_path):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    written = []

    def save_vocabulary(path):
        written.append(path)
        with open(path, "w") as f:
            f.write("<pad>\n<unk>\n")

    run = tmp_path / "run"
    path = save_run(str(run), None, {"error": 0.5, "when": np.float32(1.5)}, model,
                    save_vocabulary)
    assert path == os.path.join(run, "export", "model.keras")
    expected = {"error": 0.5, "when": "1.5", "source": run_source(), "command": run_command(),
                "model_config": json.loads(json.dumps(model.get_config(), default=str))}
    assert json.loads((run / "results.json").read_text()) == expected
    # The vocabulary goes through a temporary file in the export folder that is
    # renamed into place, so a kill mid-write never leaves a half vocab.txt.
    assert len(written) == 1
    assert os.path.dirname(written[0]) == os.path.join(run, "export")
    assert (run / "export" / "vocab.txt").read_text() == "<pad>\n<unk>\n"
    assert [n for n in os.listdir(run / "export") if n.startswith(".")] == []
    x = np.ones((1, 3), "float32")
    np.testing.assert_array_equal(keras.models.load_model(path)(x), model(x))
    other = tmp_path / "elsewhere"
    assert save_run(str(run), str(other), {}, model, save_vocabulary) == str(
        other / "model.keras")


def test_importing_the_provenance_and_the_writers_runs_no_subprocess():
    """Git runs when the source is asked for (``run_source()``), not on import: a fresh
    process whose ``subprocess`` refuses to start anything imports both modules, then
    asking for the source does start git (so the refusal is seen)."""
    code = (
        "import subprocess, sys\n"
        "started = []\n"
        "class Refused(subprocess.Popen):\n"
        "    def __init__(self, args, *a, **k):\n"
        "        started.append(args)\n"
        "        raise OSError('no subprocess here')\n"
        "subprocess.Popen = Refused\n"
        "import tpr_keras.run_outputs, tpr_keras.provenance, tpr_keras.training\n"
        "print(len(started))\n"
        "assert tpr_keras.provenance.run_source() is None\n"
        "print(len(started))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, PYTHONPATH=REPO))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["0", "1"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_source_version_names_the_commit_and_whether_tracked_files_changed(tmp_path):
    assert source_version(str(tmp_path)) is None  # not a checkout
    git = lambda *args: subprocess.run(["git", "-C", str(tmp_path), *args], check=True,
                                       capture_output=True, text=True).stdout.strip()
    git("init", "-q")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", "code.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    head = git("rev-parse", "HEAD")
    (tmp_path / "untracked.txt").write_text("ignored\n")
    assert source_version(str(tmp_path)) == {"commit": head, "dirty": False}
    (tmp_path / "code.py").write_text("x = 2\n")
    assert source_version(str(tmp_path / ".")) == {"commit": head, "dirty": True}
    # e.g. a package installed into a virtual environment inside someone else's repository
    (tmp_path / "venv" / "site-packages").mkdir(parents=True)
    (tmp_path / "venv" / "site-packages" / "module.py").write_text("y = 1\n")
    assert source_version(str(tmp_path / "venv" / "site-packages")) is None


def test_run_command_is_what_the_user_typed(monkeypatch, tmp_path):
    import types

    main = types.ModuleType("__main__")
    main.__spec__ = types.SimpleNamespace(name="train.babi")
    monkeypatch.setitem(sys.modules, "__main__", main)
    assert run_command(["/repo/train/babi.py", "--task", "all", "--data_dir", "a b"]) == (
        "python -m train.babi --task all --data_dir 'a b'")
    main.__spec__ = types.SimpleNamespace(name="pytest.__main__")
    assert run_command(["x", "tests"]) == "python -m pytest tests"
    main.__spec__ = None
    assert run_command(["bench/x.py", "--n", "3"]) == "python bench/x.py --n 3"


def test_recorded_paths_inside_the_checkout_or_beside_it_are_relative(monkeypatch, tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    monkeypatch.chdir(root)
    argv = ["x", f"--data_dir={root}/../shared/data/babi", f"--model_dir={root}/runs/a",
            str(root / "runs" / "b"), "--export_dir=/elsewhere/x", "--n=3"]
    assert run_command(argv).endswith(
        "--data_dir=../shared/data/babi --model_dir=runs/a runs/b "
        "--export_dir=/elsewhere/x --n=3")
    assert relative_command(f"python -m train.babi --model_dir={root}/runs/a", str(root)) == (
        "python -m train.babi --model_dir=runs/a")
