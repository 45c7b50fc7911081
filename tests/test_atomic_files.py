"""Atomic writes (``tpr_keras/atomic_files.py``): a target is the old content or the new one,
never half; a killed write leaves only a temporary that ``remove_temporaries`` deletes."""

import os
import pathlib
import subprocess
import sys

import pytest

from tpr_keras import atomic_files
from tpr_keras.atomic_files import (KILL_AT_ENV, recover_folder, remove_temporaries,
                                    write_file, write_folder, write_text)

REPO = pathlib.Path(__file__).resolve().parents[1]


def test_a_file_is_replaced_whole_with_the_usual_permissions(tmp_path):
    target = tmp_path / "results.json"
    write_text(str(target), "old")
    write_text(str(target), "new")
    assert target.read_text() == "new" and sorted(os.listdir(tmp_path)) == ["results.json"]
    assert target.stat().st_mode & 0o777 == 0o666 & ~atomic_files._umask()


def test_a_writer_that_fails_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "model.keras"
    target.write_text("old")

    def half(path):
        assert path.endswith(".keras") and os.path.basename(path).startswith(".model-tmp-")
        pathlib.Path(path).write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_file(str(target), half)
    assert target.read_text() == "old" and sorted(os.listdir(tmp_path)) == ["model.keras"]


def test_a_folder_is_replaced_whole(tmp_path):
    target = tmp_path / "best"
    write_folder(str(target), lambda tmp: pathlib.Path(tmp, "weights").write_text("1"))
    write_folder(str(target), lambda tmp: pathlib.Path(tmp, "weights").write_text("2"))
    assert (target / "weights").read_text() == "2" and os.listdir(tmp_path) == ["best"]
    with pytest.raises(FileExistsError):
        write_folder(str(target), lambda tmp: None, replace=False)
    assert (target / "weights").read_text() == "2" and os.listdir(tmp_path) == ["best"]


def test_a_folder_set_aside_by_a_kill_between_the_renames_is_put_back(tmp_path):
    (tmp_path / ".best-old-1-abcd1234").mkdir()
    (tmp_path / ".best-old-1-abcd1234" / "weights").write_text("1")
    (tmp_path / ".best-tmp-efgh5678").mkdir()
    assert remove_temporaries(str(tmp_path)) == [str(tmp_path / ".best-tmp-efgh5678")]
    assert (tmp_path / "best" / "weights").read_text() == "1"
    assert os.listdir(tmp_path) == ["best"] and not recover_folder(str(tmp_path / "best"))


def test_only_the_temporaries_of_this_module_and_no_live_writer_are_removed(tmp_path):
    """Names without a pid (made before names carried one), this process's and a dead
    process's go; a live process's (pytest's parent), others' files and versions stay."""
    dead = subprocess.Popen([sys.executable, "-c", ""])
    dead.wait()
    stale = [".export-tmp-a1b2c3d4", f".model-tmp-{os.getpid()}-a1b2c3d4.keras",
             f".results-tmp-{dead.pid}-a1b2c3d4.json"]
    kept = [f".export-tmp-{os.getppid()}-a1b2c3d4", ".hidden", "1", ".export-tmp-x",
            "results.json"]
    for name in stale + kept:
        (tmp_path / name).write_text("")
    removed = remove_temporaries(str(tmp_path))
    assert sorted(os.path.basename(p) for p in removed) == sorted(stale)
    assert sorted(os.listdir(tmp_path)) == sorted(kept)


KILLED_WRITE = """
import sys
from tpr_keras.atomic_files import write_text
for n in range(3):
    write_text(sys.argv[1], f"write {n}", label="results")
"""


@pytest.mark.parametrize("kill_at, left", [("mid-results", "old"), ("mid-results:2", "write 0"),
                                           ("mid-other", "write 2")])
def test_the_kill_point_kills_the_process_before_the_rename(tmp_path, kill_at, left):
    target = tmp_path / "results.json"
    target.write_text("old")
    done = subprocess.run([sys.executable, "-c", KILLED_WRITE, str(target)], cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO), **{KILL_AT_ENV: kill_at}),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == (0 if left == "write 2" else -9), done.stderr
    assert target.read_text() == left
    temporaries = remove_temporaries(str(tmp_path))
    assert len(temporaries) == (0 if left == "write 2" else 1)
    assert os.listdir(tmp_path) == ["results.json"]
