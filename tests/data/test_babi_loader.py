"""Tests for tpr_keras.data.babi's load_babi: splits, truncation and settings.

Each test writes its own tiny bAbI files under ``tmp_path`` (helpers in
``tests/data/tiny_babi.py``): the train/valid split at story boundaries, the samples
against the parser's, keeping the last sentences of long stories, the 1k setting, and
several tasks sharing one vocabulary.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.data.tiny_babi import make_babi_dir, sample_keys, write_file
from tpr_keras.data import babi
from tpr_keras.data.babi import (
    encode_samples,
    load_babi,
    parse_babi_file,
    split_point,
    split_train_valid,
)

# Tiny task files hold far fewer than 10,000 questions; load_babi warns about that.
pytestmark = pytest.mark.filterwarnings("ignore:task .* fewer than:UserWarning")


# --------------------------------------------------------------------------------------
# Splits, truncation, settings
# --------------------------------------------------------------------------------------


def test_split_point_rule():
    assert split_point([5] * 20, 0.1) == 18
    assert split_point([1] * 10, 0.1) == 9
    assert split_point([3, 3, 3, 1], 0.1) == 3  # 9 of 10 questions.
    assert split_point([4, 4], 0.5) == 1
    assert split_point([1, 100], 0.1) == 1  # Both parts non-empty when possible.
    assert split_point([7], 0.1) == 1  # A single story cannot be split.
    assert split_point([5] * 4, 0.0) == 4
    with pytest.raises(ValueError):
        split_point([1, 1], 1.0)


def test_split_train_valid_on_samples(tmp_path):
    path = write_file(tmp_path / "qa1_x_train.txt", [[1, 2], [1], [2, 3, 4], [1, 2]])
    samples = parse_babi_file(path)
    train, valid = split_train_valid(samples, 0.25)
    assert train + valid == samples
    assert {s.story_id for s in train}.isdisjoint({s.story_id for s in valid})
    assert len(train) == 6 and len(valid) == 2  # Boundary nearest to 0.75 * 8 = 6.


def test_load_split_at_story_boundaries(tmp_path):
    # 30 stories with 1..4 questions each.
    rng = np.random.default_rng(0)
    stories = [
        sorted(rng.choice(np.arange(1, 9), size=int(k), replace=False).tolist())
        for k in rng.integers(1, 5, 30)
    ]
    d = make_babi_dir(tmp_path / "en-10k", {1: stories})
    data = load_babi(d, tasks=(1,), download=False)
    counts = [len(s) for s in stories]
    k = split_point(counts, 0.1)
    train_ids, valid_ids = set(data.train.story_ids.tolist()), set(data.valid.story_ids.tolist())
    assert train_ids == set(range(k)) and valid_ids == set(range(k, len(stories)))
    assert train_ids.isdisjoint(valid_ids)
    assert len(data.train) == sum(counts[:k]) and len(data.valid) == sum(counts[k:])
    total = sum(counts)
    assert abs(len(data.valid) - 0.1 * total) <= max(counts)
    sizes = {"train": len(data.train), "valid": len(data.valid), "test": len(data.test)}
    assert data.stats["samples"] == sizes
    assert data.stats["per_task"][1]["samples"]["train"] == len(data.train)
    assert data.data_dir == str(d.resolve())


def test_samples_match_parser(tmp_path):
    d = make_babi_dir(tmp_path / "en-10k", {2: [[1, 3, 5], [2, 6], [4]] * 4})
    data = load_babi(d, tasks=[2], download=False, max_story_sentences=4)
    train_path, test_path = babi.task_files(d, 2)
    expected_train, expected_valid = split_train_valid(parse_babi_file(train_path), 0.1)
    pairs = (
        (data.train, expected_train),
        (data.valid, expected_valid),
        (data.test, parse_babi_file(test_path)),
    )
    for split, expected in pairs:
        assert len(split) == len(expected)
        for i, s in enumerate(expected):
            decoded = [data.vocab.decode(row) for row in split.story(i)]
            assert decoded == s.story[-4:]
            assert data.vocab.decode(split.questions[i]) == s.question
            assert data.vocab.id_to_token(int(split.answers[i])) == s.answer
            assert split.tasks[i] == 2 and split.story_ids[i] == s.story_id
    # encode_samples gives the same samples (stored without sharing).
    enc = encode_samples(expected_train, data.vocab, data.max_words, 4)
    assert sample_keys(enc) == sample_keys(data.train)


def test_truncation_keeps_last_sentences_and_counts(tmp_path):
    d = make_babi_dir(tmp_path / "en-10k", {1: [[2, 5, 9]] * 10}, test={1: [[9], [3]]})
    data = load_babi(d, tasks=1, max_story_sentences=4, download=False)
    _, test_path = babi.task_files(d, 1)
    full = parse_babi_file(test_path)[0].story  # 9 statements.
    assert [data.vocab.decode(r) for r in data.test.story(0)] == full[-4:]
    assert data.test.story_lengths.tolist() == [4, 3]
    assert data.stats["truncated"] == {"train": 18, "valid": 2, "test": 1}  # 2 of 3 per story.
    assert data.stats["per_task"][1]["truncated"]["test"] == 1
    assert data.max_sentences == 4
    assert data.stats["max_story_length_raw"]["train"] == 9
    # Defaults: 70, and 130 for task 3; dict overrides per task.
    d2 = make_babi_dir(tmp_path / "two", {1: [[2]] * 3, 3: [[2]] * 3})
    defaults = load_babi(d2, tasks=(1, 3), download=False)
    assert defaults.stats["max_story_sentences"] == {1: 70, 3: 130}
    limits = load_babi(d2, tasks=(1, 3), max_story_sentences={1: 5, 3: None}, download=False)
    assert limits.stats["max_story_sentences"] == {1: 5, 3: None}
    with pytest.raises(ValueError):
        load_babi(d2, tasks=1, max_story_sentences=0, download=False)


def test_setting_1k_takes_first_1000_questions(tmp_path):
    stories = [[1, 2, 3]] * 400  # 1,200 questions; 1,000 ends inside story 333.
    d = make_babi_dir(tmp_path / "en-10k", {1: stories})
    with pytest.warns(UserWarning, match="fewer than the 10000"):
        full = load_babi(d, tasks=1, setting="10k", download=False)
    assert len(full.train) + len(full.valid) == 1200
    data = load_babi(d, tasks=1, setting="1k", download=False)
    assert len(data.train) + len(data.valid) == 1000
    assert len(data.train) == 900 and len(data.valid) == 100
    assert data.stats["per_task"][1]["train_file_questions"] == 1200
    assert data.stats["notes"] == []
    assert data.valid.story_ids.max() == 333  # The cut story keeps its first question.
    assert int(np.sum(data.valid.story_ids == 333)) == 1
    with pytest.raises(ValueError):
        load_babi(d, tasks=1, setting="5k", download=False)


def test_joint_tasks_share_vocabulary(tmp_path):
    d = make_babi_dir(tmp_path / "en-10k", {1: [[1, 2]] * 10, 19: [[3]] * 10})
    data = load_babi(d, tasks=[19, 1], download=False)
    assert data.stats["tasks"] == [1, 19]
    assert set(data.train.tasks.tolist()) == {1, 19}
    assert data.train.tasks.tolist() == sorted(data.train.tasks.tolist())
    assert data.stats["vocab_size"] == len(data.vocab)
    for split in (data.train, data.valid, data.test):
        assert split.sentences.shape[1] == split.questions.shape[1] == data.max_words
        assert split.sentences.dtype == np.int32 and split.story_offsets.dtype == np.int64
    with pytest.raises(ValueError):
        load_babi(d, tasks=[21], download=False)
    with pytest.raises(FileNotFoundError, match="qa2_"):
        load_babi(d, tasks=[2], download=False)
