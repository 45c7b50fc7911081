"""Two ``MultiWorkerMirroredStrategy`` workers on 127.0.0.1 run ``python -m train.babi``.

Checks: both finish; they hold identical state at every checkpoint (weights,
optimizer slots, counters); only the chief writes to its ``--model_dir`` (the
other worker's checkpoints go to a folder under its ``$TMPDIR``); the chief's
checkpoint restores exactly in a plain single-device process.
"""

import json
import pathlib
import re
import time

import numpy as np
import pytest
import tensorflow as tf

from tpr_keras.data import babi
from tpr_keras.models import TPRRNN
from tpr_keras.training import Trainer, TrainConfig, get_optimizer, sparse_classification

# 100 stories: 270 training questions = 17 steps of 16 per epoch; stop at step 25
# (mid-epoch 2) with checkpoints at 10, 17 (end of epoch 1), 20 and 25.
ARGS = ["--task", "1", "--download=false", "--batch_size", "16", "--warmup_steps", "5",
        "--epochs", "2", "--steps", "25", "--checkpoint_every_steps", "10", "--seed", "3",
        "--verbose", "2", "--strategy", "multi_worker", "--nosaved_model"]  # no export read
TIMEOUT = 300


def checkpoint_values(directory):
    """``{"ckpt-N": {key: array}}`` for every checkpoint in ``directory``."""
    out = {}
    for index in sorted(pathlib.Path(directory).glob("*.index")):
        reader = tf.train.load_checkpoint(str(index.with_suffix("")))
        out[index.stem] = {key: reader.get_tensor(key)
                           for key in reader.get_variable_to_shape_map()
                           if key != "_CHECKPOINTABLE_OBJECT_GRAPH"}
    return out


def epoch_lines(log):
    """The per-epoch summary lines without their timings."""
    return [re.sub(r" \| [\d.]+s \(\d+ ex/s\)( \| at most \S+ left)?$", "", line)
            for line in log.splitlines()
            if line.startswith("epoch ")]


@pytest.mark.slow
def test_two_workers_stay_in_sync_and_the_chief_checkpoint_restores(
        make_babi, babi_process, ports, tmp_path):
    data_dir = make_babi(100)
    cluster = {"worker": [f"127.0.0.1:{port}" for port in ports(2)]}
    workers = []
    for index in range(2):
        work = tmp_path / f"worker{index}"
        (work / "tmp").mkdir(parents=True)
        tf_config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
        # Separate --model_dir folders, so anything worker 1 wrote there would show.
        args = [*ARGS, "--data_dir", data_dir, "--model_dir", work / "model"]
        workers.append(babi_process(args, work / "log.txt", TF_CONFIG=tf_config,
                                    TMPDIR=str(work / "tmp")))
    # Wait for both; stop early if one fails (the other would wait for it until
    # the collective timeout). The fixture kills whatever still runs.
    deadline = time.time() + TIMEOUT
    while time.time() < deadline:
        codes = [process.poll() for process in workers]
        if all(code is not None for code in codes) or any(codes):
            break
        time.sleep(0.2)
    logs = [(tmp_path / f"worker{i}" / "log.txt").read_text() for i in range(2)]
    for index, (process, log) in enumerate(zip(workers, logs)):
        assert process.returncode == 0, f"worker {index}:\n{log[-4000:]}"
        assert (f"Strategy CollectiveAllReduceStrategy: 2 replica(s) (this is worker "
                f"{index}); global batch 16 = 8 per replica.") in log

    # In sync: the same per-epoch numbers, and identical state at every checkpoint.
    assert len(epoch_lines(logs[0])) == 2
    assert epoch_lines(logs[0]) == epoch_lines(logs[1])
    chief_dir = tmp_path / "worker0" / "model"
    scratch = list((tmp_path / "worker1" / "tmp").glob("tpr_keras_worker_*"))
    assert len(scratch) == 1
    chief = checkpoint_values(chief_dir / "checkpoints")
    other = checkpoint_values(scratch[0] / "checkpoints")
    assert sorted(chief) == sorted(other) == ["ckpt-17", "ckpt-20", "ckpt-25"]
    for name in chief:
        assert chief[name].keys() == other[name].keys()
        for key, value in chief[name].items():
            if key.split("/")[0] in ("train_seconds", "epoch_seconds"):
                continue  # each worker's own clock; the chief's is the one reported
            np.testing.assert_array_equal(value, other[name][key], err_msg=f"{name} {key}")
        assert chief[name]["train_seconds/.ATTRIBUTES/VARIABLE_VALUE"] > 0

    # Only the chief writes results, exports and history; worker 1 wrote nothing
    # to its --model_dir.
    assert "Results:" in logs[0] and "Results:" not in logs[1]
    for path in ["results.json", "history.json", "export/model.keras", "best/weights.index"]:
        assert (chief_dir / path).exists(), path
    assert not (tmp_path / "worker1" / "model").exists()
    results = json.loads((chief_dir / "results.json").read_text())
    assert results["steps"] == 25 and results["config"]["replicas"] == 2

    # The chief's checkpoint restores in a plain single-device process (this one).
    data = babi.load_babi(data_dir, tasks=(1,), download=False)
    trainer = Trainer(
        lambda: TPRRNN.from_paper_size("single_task", vocabulary_size=len(data.vocab),
                                   max_words=data.max_words),
        lambda: get_optimizer("nadam", 0.008, 0.6, 0.4), sparse_classification("answer"),
        TrainConfig(verbose=0), str(chief_dir),
        strategy=tf.distribute.OneDeviceStrategy("/cpu:0"))
    assert trainer.restore()  # asserts every object of the trainer was in the checkpoint
    assert trainer.restored_from.endswith("ckpt-25")
    assert int(trainer.state.global_step.numpy()) == 25
    assert int(trainer.state.epoch.numpy()) == 1
    assert int(trainer.state.step_in_epoch.numpy()) == 8
    restored = trainer.checkpoints.checkpoint.write(str(tmp_path / "restored" / "ckpt-25"))
    again = checkpoint_values(pathlib.Path(restored).parent)["ckpt-25"]
    assert again.keys() == chief["ckpt-25"].keys()
    for key, value in chief["ckpt-25"].items():
        np.testing.assert_array_equal(value, again[key], err_msg=key)
    valid = trainer.evaluate(babi.make_dataset(data.valid, 64, shuffle=False))
    assert np.isfinite(valid["loss"]) and valid["count"] == 30
