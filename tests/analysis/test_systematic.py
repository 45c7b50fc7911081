"""Figure 5's evaluation on a tiny built data set and a model saved in code (the command is
tested in ``tests/tools/test_analysis_systematic.py``)."""

import json

import numpy as np
import pytest

from tpr_keras.analysis import systematic
from tpr_keras.data import babi
from tpr_keras.data.babi import systematic as babi_systematic


@pytest.fixture()
def built(tmp_path, babi_task1_writer):
    root = tmp_path / "src" / "en-10k"
    root.mkdir(parents=True)
    for task, name in ((1, "single-supporting-fact"), (6, "yes-no-questions")):
        babi_task1_writer(root / f"qa{task}_{name}_train.txt", 40, task)
        babi_task1_writer(root / f"qa{task}_{name}_test.txt", 20, 10 + task)
    out = tmp_path / "sg"
    babi_systematic.build(root, out, seed=0, tasks=(1, 6), pairs=10,
                          new_names={"Alex": 2, "Logan": 1})
    return out


def test_pairs_seen_flags_and_summary(built):
    import tensorflow as tf

    data = babi.load_babi(built, tasks=(1, 6), download=False)
    vocab = data.vocab
    correct_id = vocab.token_to_id("kitchen")

    class AlwaysKitchen:
        max_words = data.max_words

        def __call__(self, features, training=False):
            batch = tf.shape(features["question"])[0]
            return tf.one_hot(tf.fill([batch], correct_id), len(vocab))

    result = systematic.evaluate_pairs(AlwaysKitchen(), vocab, built)
    manifest = json.loads((built / "manifest.json").read_text())
    assert len(result["pairs"]) == 4 and all(p["count"] == 10 for p in result["pairs"])
    for p in result["pairs"]:
        assert p["seen"] == (p["task"] in manifest["trained_on"][p["name"]])
        answers = [s.answer for s in babi.parse_babi_file(
            next((built / "systematic" / p["name"]).glob(f"qa{p['task']}_*")))]
        assert p["accuracy"] == pytest.approx(100.0 * np.mean([a == "kitchen" for a in answers]))
    rows = {r["name"]: r for r in systematic.summarize(result["pairs"])}
    assert rows["Alex"]["tasks_seen"] == 2 and rows["Alex"]["unseen"] is None
    assert rows["Logan"]["tasks_seen"] == 1 and rows["Logan"]["unseen"] is not None
    pytest.importorskip("matplotlib")
    systematic.plot(result, str(built / "fig.png"), "test")
    assert (built / "fig.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_drops_are_measured_against_the_fully_trained_name():
    def result(alex, logan):
        return {"pairs": [
            {"name": "Alex", "task": 1, "seen": True, "accuracy": alex[0], "count": 10},
            {"name": "Alex", "task": 6, "seen": True, "accuracy": alex[1], "count": 10},
            {"name": "Logan", "task": 1, "seen": True, "accuracy": logan[0], "count": 10},
            {"name": "Logan", "task": 6, "seen": False, "accuracy": logan[1], "count": 10}]}

    assert systematic.drops(result((100, 90), (100, 80))) == {"Alex": 0.0, "Logan": 5.0}
    assert systematic.drops(result((90, 90), (60, 40))) == {"Alex": 0.0, "Logan": 40.0}
