"""Tests of tpr_keras.data.babi on the real data, ``../shared/data/babi``.

The question counts of the 10k and 1k settings, the vocabulary and story lengths of all 20
tasks, task 3's truncation counts, and the stored windows against the parser. Each test
is skipped when the data is missing (``real_data`` in ``tests/data/tiny_babi.py``).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.data.tiny_babi import REAL_BABI, real_data
from tpr_keras.data import babi
from tpr_keras.data.babi import load_babi, make_dataset, parse_babi_file

# Tiny task files hold far fewer than 10,000 questions; load_babi warns about that.
pytestmark = pytest.mark.filterwarnings("ignore:task .* fewer than:UserWarning")


# --------------------------------------------------------------------------------------
# Real data (skipped when ../shared/data/babi is missing)
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def all_tasks():
    return load_babi(REAL_BABI, tasks="all", download=False)


@real_data
def test_real_task1_counts():
    data = load_babi(REAL_BABI, tasks=1, download=False)
    assert len(data.train) + len(data.valid) == 10_000
    assert len(data.test) == 1_000
    assert (len(data.train), len(data.valid)) == (9_000, 1_000)
    assert set(data.train.story_ids.tolist()).isdisjoint(data.valid.story_ids.tolist())
    assert data.stats["truncated"] == {"train": 0, "valid": 0, "test": 0}
    one_k = load_babi(REAL_BABI, tasks=1, setting="1k", download=False)
    assert (len(one_k.train), len(one_k.valid), len(one_k.test)) == (900, 100, 1_000)


@real_data
def test_real_all_tasks(all_tasks):
    data = all_tasks
    vocab = data.vocab
    # 178 tokens + <pad> + <unk> (the reference's ~179 counts one special).
    assert len(vocab) == 180
    assert data.max_words == 12
    assert data.max_sentences == 130
    for symbol in ("apple,football", "apple,milk,football", "n,w", "e,e"):
        assert symbol in vocab
    task8 = data.test.answers[data.test.tasks == 8]
    assert any("," in vocab.id_to_token(int(a)) for a in task8)
    task19 = {vocab.id_to_token(int(a)) for a in data.test.answers[data.test.tasks == 19]}
    assert task19 and all(re.fullmatch(r"[nsew],[nsew]", a) for a in task19)
    assert "apple" in vocab and "football" in vocab
    per_task = data.stats["per_task"]
    for task in range(1, 21):
        assert per_task[task]["samples"]["test"] == 1_000
        total = per_task[task]["samples"]["train"] + per_task[task]["samples"]["valid"]
        assert total == (1_000 if task == 3 else 10_000)  # Task 3's file is a 1k prefix here.
    assert any("task 3" in note for note in data.stats["notes"])
    assert len(data.test) == 20_000
    assert (data.train.story_lengths <= 130).all()
    assert int(data.train.story_lengths[data.train.tasks != 3].max()) == 70
    assert per_task[3]["truncated"]["test"] == 20  # At 130 sentences.
    assert per_task[3]["max_story_length_raw"] == 228
    # Unknown ids never occur when the vocabulary is built from the same data.
    for split in (data.train, data.valid, data.test):
        assert not (split.sentences == 1).any() and not (split.questions == 1).any()
    features, labels = next(iter(make_dataset(data.test, batch_size=32, shuffle=True, seed=0)))
    assert features["story"].shape[2] == 12 and labels["answer"].shape == (32,)


@real_data
def test_real_task3_truncation_counts():
    at_70 = load_babi(REAL_BABI, tasks=3, max_story_sentences=70, download=False)
    at_130 = load_babi(REAL_BABI, tasks=3, download=False)
    assert at_70.stats["truncated"]["test"] == 240  # of 1,000 test questions
    assert at_130.stats["truncated"]["test"] == 20
    assert at_70.max_sentences == 70 and at_130.max_sentences == 130
    assert at_70.stats["max_story_length_raw"]["test"] == 228


@real_data
def test_real_windows_match_parser(all_tasks):
    data = all_tasks
    _, test_path = babi.task_files(data.data_dir, 2)
    expected = parse_babi_file(test_path)
    offset = int(np.argmax(data.test.tasks == 2))
    for i, s in enumerate(expected):
        rows = data.test.story(offset + i)
        assert [data.vocab.decode(r) for r in rows] == s.story[-70:]
        assert data.vocab.decode(data.test.questions[offset + i]) == s.question
