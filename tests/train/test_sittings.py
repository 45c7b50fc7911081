"""A run carried across machines by ``--sitting_dir`` (train/sittings.py): a sitting packs
its state into a folder meant to be committed, and a fresh clone resumes from it exactly."""

import json
import os
import shutil

import numpy as np
import pytest

from tests import preloaded_python
from train import sittings



def fake_run(model_dir, step, history=("epoch 1",)):
    """A model folder as a TensorFlow run leaves it: three checkpoints, best weights and the
    loop's records."""
    folder = model_dir / "checkpoints"
    folder.mkdir(parents=True)
    for n in (step - 2, step - 1, step):
        for suffix in (".index", ".data-00000-of-00001"):
            (folder / f"ckpt-{n}{suffix}").write_bytes(f"ckpt {n}{suffix}".encode())
    names = [f"ckpt-{n}" for n in (step - 2, step - 1, step)]
    (folder / "checkpoint").write_text(
        f'model_checkpoint_path: "ckpt-{step}"\n'
        + "".join(f'all_model_checkpoint_paths: "{name}"\n' for name in names))
    (model_dir / "best").mkdir()
    (model_dir / "best" / "weights.index").write_bytes(b"best")
    (model_dir / "history.json").write_text(json.dumps(list(history)))
    (model_dir / "validation.json").write_text("{}")
    (model_dir / "tensorboard").mkdir()
    (model_dir / "tensorboard" / "events").write_bytes(b"x" * 1000)


def record(start, end):
    return sittings.sitting_record({"commit": "abc", "dirty": False}, {"cpus": 2},
                                   "python -m train.math", start, end, 10.0, 8.0)


def test_pack_keeps_only_the_latest_checkpoint_and_the_records(tmp_path):
    fake_run(tmp_path / "run", 12)
    records = sittings.pack(tmp_path / "sit", tmp_path / "run", record(0, 12), {"a.txt": "d"})
    packed = sorted(str(p.relative_to(tmp_path / "sit"))
                    for p in (tmp_path / "sit").rglob("*") if p.is_file())
    assert packed == ["best/weights.index", "checkpoint/checkpoint",
                      "checkpoint/ckpt-12.data-00000-of-00001", "checkpoint/ckpt-12.index",
                      "history.json", "sittings.json", "validation.json"]
    assert [r["end_step"] for r in records] == [12]
    manifest = sittings.read_sittings(tmp_path / "sit")
    assert manifest["data"] == {"a.txt": "d"}
    assert set(manifest["files"]) == set(packed) - {"sittings.json"}


def test_a_second_sitting_appends_its_record_and_replaces_the_state(tmp_path):
    fake_run(tmp_path / "run", 12)
    sittings.pack(tmp_path / "sit", tmp_path / "run", record(0, 12), {"a.txt": "d"})
    shutil.rmtree(tmp_path / "run")
    fake_run(tmp_path / "run", 20)
    records = sittings.pack(tmp_path / "sit", tmp_path / "run", record(12, 20))
    assert [(r["start_step"], r["end_step"], r["steps"]) for r in records] == [(0, 12, 12),
                                                                               (12, 20, 8)]
    assert sorted(os.listdir(tmp_path / "sit" / "checkpoint")) == [
        "checkpoint", "ckpt-20.data-00000-of-00001", "ckpt-20.index"]
    assert sittings.read_sittings(tmp_path / "sit")["data"] == {"a.txt": "d"}  # kept
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]  # no temporaries


def test_unpack_into_an_empty_model_dir_restores_the_run(tmp_path):
    fake_run(tmp_path / "run", 12, history=("e1", "e2"))
    sittings.pack(tmp_path / "sit", tmp_path / "run", record(0, 12))
    fresh = tmp_path / "clone" / "run"
    assert [r["end_step"] for r in sittings.unpack(tmp_path / "sit", fresh)] == [12]
    assert (fresh / "checkpoints" / "checkpoint").read_text().startswith(
        'model_checkpoint_path: "ckpt-12"')
    assert (fresh / "checkpoints" / "ckpt-12.index").read_bytes() == b"ckpt 12.index"
    assert json.loads((fresh / "history.json").read_text()) == ["e1", "e2"]
    assert (fresh / "best" / "weights.index").read_bytes() == b"best"
    assert sittings.latest_checkpoint_files(fresh)[0] == "ckpt-12"


def test_unpack_leaves_a_model_dir_with_its_own_checkpoint_alone(tmp_path):
    fake_run(tmp_path / "run", 12)
    sittings.pack(tmp_path / "sit", tmp_path / "run", record(0, 12))
    fake_run(tmp_path / "other", 30)
    sittings.unpack(tmp_path / "sit", tmp_path / "other")
    assert sittings.latest_checkpoint_files(tmp_path / "other")[0] == "ckpt-30"


def test_nothing_to_unpack_without_sittings(tmp_path):
    assert sittings.unpack(tmp_path / "none", tmp_path / "run") == []
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("damage", ["missing", "changed"])
def test_a_damaged_sitting_is_refused_naming_the_file(tmp_path, damage):
    fake_run(tmp_path / "run", 12)
    sittings.pack(tmp_path / "sit", tmp_path / "run", record(0, 12))
    target = tmp_path / "sit" / "checkpoint" / "ckpt-12.index"
    if damage == "missing":
        target.unlink()
    else:
        target.write_bytes(b"version https://git-lfs.github.com/spec/v1\n")
    with pytest.raises(sittings.SittingError, match="ckpt-12.index"):
        sittings.unpack(tmp_path / "sit", tmp_path / "clone")


def test_other_data_is_refused(tmp_path):
    fake_run(tmp_path / "run", 12)
    sittings.pack(tmp_path / "sit", tmp_path / "run", record(0, 12), {"a.txt": "1", "b.txt": "2"})
    sittings.check_data(tmp_path / "sit", {"a.txt": "1", "b.txt": "2"})
    with pytest.raises(sittings.SittingError, match=r"1 file\(s\), e.g. \['b.txt'\]"):
        sittings.check_data(tmp_path / "sit", {"a.txt": "1", "b.txt": "3"})


def test_data_fingerprint_names_files_from_their_common_folder(tmp_path):
    for folder in ("train-easy", "train-hard"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.txt").write_text(folder)
    fingerprint = sittings.data_fingerprint(
        [tmp_path / "train-hard" / "m.txt", tmp_path / "train-easy" / "m.txt"])
    assert list(fingerprint) == ["train-easy/m.txt", "train-hard/m.txt"]
    assert fingerprint["train-easy/m.txt"] != fingerprint["train-hard/m.txt"]


def train_math(run, model_dir, steps, sitting_dir):
    """A sitting of ``train.math`` with the flags of the shared run ``run``
    (:func:`tiny_math_run`: deterministic, a checkpoint every 2 steps)."""
    done = preloaded_python.run(
        ["-m", "train.math", *run.args, "--steps", str(steps), "--data_dir",
         str(run.data_dir), "--model_dir", str(model_dir), "--sitting_dir", str(sitting_dir),
         "--nosaved_model"],  # the checkpoints are compared, not the exports
        env=run.env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def checkpoint_arrays(model_dir):
    """The model and optimizer arrays and counters of a run's latest checkpoint (not the
    seconds it took, nor how many saves this process made)."""
    import tensorflow as tf

    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(model_dir / "checkpoints"))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if not name.startswith(("save_counter", "_CHECKPOINTABLE_OBJECT_GRAPH"))
            and "seconds" not in name}


@pytest.mark.slow
def test_a_fresh_clone_resumes_a_committed_sitting_exactly(tiny_math_run, tmp_path):
    """Sitting 1 stops mid-epoch (3 steps of 32 from 114 questions); only its sitting
    folder travels to a new place (a fresh clone: no model_dir, no data position kept
    anywhere else); sitting 2 trains to step 6 there, and its weights, Adam slots and
    counters equal those of one unbroken 6-step run (the shared one), bit for bit."""
    out = train_math(tiny_math_run, tmp_path / "machine1" / "run", 3,
                     tmp_path / "machine1" / "sitting")
    assert "Sitting 1 packed into" in out
    shutil.copytree(tmp_path / "machine1" / "sitting", tmp_path / "machine2" / "sitting")
    shutil.rmtree(tmp_path / "machine1")
    out = train_math(tiny_math_run, tmp_path / "machine2" / "run", 6,
                     tmp_path / "machine2" / "sitting")
    assert "Sitting 2 of the run" in out and "resuming at step 3" in out
    unbroken = checkpoint_arrays(tiny_math_run.model_dir)
    resumed = checkpoint_arrays(tmp_path / "machine2" / "run")
    assert sorted(unbroken) == sorted(resumed)
    assert any("optimizer_variables" in name for name in unbroken)
    for name, value in unbroken.items():
        np.testing.assert_array_equal(resumed[name], value, err_msg=name)
    results = json.loads((tmp_path / "machine2" / "run" / "results.json").read_text())
    assert [(s["start_step"], s["end_step"]) for s in results["sittings"]] == [(0, 3), (3, 6)]
    assert all("commit" in s and s["machine"]["cpus"] >= 1 for s in results["sittings"])
    manifest = sittings.read_sittings(tmp_path / "machine2" / "sitting")
    assert sorted(manifest["data"]) == [f"{d}/numbers__place_value.txt"
                                        for d in ("train-easy", "train-hard", "train-medium")]
