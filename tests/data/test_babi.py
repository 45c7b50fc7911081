"""Tests for tpr_keras.data.babi and tpr_keras.data.download.

Unit tests write their own tiny bAbI files under ``tmp_path``; the tests marked
``real_data`` read ``../shared/data/babi`` (relative to the repository root) and are
skipped when it is missing.
"""

from __future__ import annotations

import collections
import hashlib
import io
import re
import tarfile
from pathlib import Path

import numpy as np
import pytest

from tpr_keras.data import babi, sources
from tpr_keras.data.babi import (
    BabiFormatError,
    EncodedSplit,
    Sample,
    Vocabulary,
    encode_samples,
    find_babi_dir,
    load_babi,
    make_dataset,
    parse_babi_file,
    split_point,
    split_train_valid,
    tokenize,
)
from tpr_keras.data.download import (
    ChecksumError,
    DownloadError,
    fetch_archive,
    safe_extract,
    verify_checksum,
)

# Tiny task files hold far fewer than 10,000 questions; load_babi warns about that.
pytestmark = pytest.mark.filterwarnings("ignore:task .* fewer than:UserWarning")

REAL_BABI = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "babi"
real_data = pytest.mark.skipif(
    not (REAL_BABI / "en-10k").is_dir(), reason=f"real bAbI data not found at {REAL_BABI}"
)

NAMES = ("Mary", "John", "Sandra", "Daniel")
PLACES = ("bathroom", "hallway", "garden", "office", "kitchen")


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def story_lines(question_positions: list[int], seed: int = 0) -> list[str]:
    """One story: statements, with a question after ``p`` statements for each p."""
    lines: list[str] = []
    lid = stmt = last_stmt_id = 0
    for qi, pos in enumerate(sorted(question_positions)):
        while stmt < pos:
            lid += 1
            stmt += 1
            who = NAMES[(stmt + seed) % len(NAMES)]
            lines.append(f"{lid} {who} went to the {PLACES[(stmt * 3 + seed) % len(PLACES)]}.")
            last_stmt_id = lid
        lid += 1
        who = NAMES[(qi + seed) % len(NAMES)]
        support = f"\t{last_stmt_id}" if last_stmt_id else "\t"
        lines.append(f"{lid} Where is {who}? \t{PLACES[(qi + seed) % len(PLACES)]}{support}")
    return lines


def write_file(path: Path, stories: list[list[int]], seed: int = 0) -> Path:
    lines = [line for i, s in enumerate(stories) for line in story_lines(s, seed + i)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def make_babi_dir(
    root: Path,
    train: dict[int, list[list[int]]],
    test: dict[int, list[list[int]]] | None = None,
) -> Path:
    """An ``en-10k``-like folder: ``qaN_<name>_{train,test}.txt`` per task."""
    root.mkdir(parents=True, exist_ok=True)
    for task, stories in train.items():
        name = babi.BABI_TASK_NAMES[task]
        write_file(root / f"qa{task}_{name}_train.txt", stories, seed=task)
        test_stories = (test or {}).get(task, [[2, 4], [1, 3]])
        write_file(root / f"qa{task}_{name}_test.txt", test_stories, seed=100 + task)
    return root


def sample_keys(split: EncodedSplit) -> collections.Counter:
    """Multiset of (story rows, question, answer, task) per sample, for identity checks."""
    keys = collections.Counter()
    for i in range(len(split)):
        key = (
            split.story(i).tobytes(),
            split.questions[i].tobytes(),
            int(split.answers[i]),
            int(split.tasks[i]),
        )
        keys[key] += 1
    return keys


def batch_keys(features: dict, labels: dict) -> list:
    """Per-sample keys of one batch (same format as sample_keys)."""
    story, question = features["story"].numpy(), features["question"].numpy()
    answer, task = labels["answer"].numpy(), labels["task"].numpy()
    keys = []
    for b in range(story.shape[0]):
        rows = story[b]
        n = int(np.sum(np.any(rows != 0, axis=1)))
        keys.append((rows[:n].tobytes(), question[b].tobytes(), int(answer[b]), int(task[b])))
    return keys


SIMPLE = (
    "1 Mary moved to the bathroom.\n"
    "2 John went to the hallway.\n"
    "3 Where is Mary? \tbathroom\t1\n"
    "4 Daniel went back to the hallway.\n"
    "5 Where is Daniel? \thallway\t4\n"
    "1 Sandra picked up the apple; then she took the football!\n"
    "2 Sandra went to the garden.\n"
    "3 What is Sandra carrying? \tApple,Football\t1\n"
)


# --------------------------------------------------------------------------------------
# Tokenizer and parser
# --------------------------------------------------------------------------------------


def test_tokenize_basic():
    assert tokenize("Where is Mary? ") == ["where", "is", "mary", "?"]
    assert tokenize("Mary moved to the bathroom.") == [
        "mary", "moved", "to", "the", "bathroom", "."
    ]
    assert tokenize("a,b;c:d!e") == ["a", ",", "b", ";", "c", ":", "d", "!", "e"]
    assert tokenize("  ") == []


def test_tokenize_can_drop_sentence_ends_as_the_memn2n_authors_parser():
    assert tokenize("Where is Mary? ", keep_sentence_ends=False) == ["where", "is", "mary"]
    assert tokenize("a,b;c:d!e.", keep_sentence_ends=False) == ["a", ",", "b", ";", "c", ":",
                                                               "d", "e"]


def test_loading_without_sentence_ends_shortens_every_sentence_by_its_mark(tmp_path):
    d = make_babi_dir(tmp_path / "en-10k", {1: [[1, 2]] * 10})
    kept = load_babi(d, tasks=1, download=False)
    dropped = load_babi(d, tasks=1, download=False, keep_sentence_ends=False)
    assert {".", "?"} <= set(kept.vocab.tokens)
    assert set(dropped.vocab.tokens) == set(kept.vocab.tokens) - {".", "?"}
    assert dropped.max_words == kept.max_words - 1
    assert dropped.stats["keep_sentence_ends"] is False
    old, new = np.asarray(kept.vocab.tokens), np.asarray(dropped.vocab.tokens)
    for a, b in ((kept.train, dropped.train), (kept.test, dropped.test)):
        for field in ("sentences", "questions"):  # the same words, the mark gone
            words = old[getattr(a, field)]
            words = np.where(np.isin(words, [".", "?"]), "<pad>", words)[:, :-1]
            np.testing.assert_array_equal(words, new[getattr(b, field)])
        np.testing.assert_array_equal(old[a.answers], new[b.answers])


@pytest.mark.parametrize(
    "text",
    ["Is the box bigger than the chocolate?", "If A, then B; C: D!!", "x.y..z", "Mary\tJohn ."],
)
def test_tokenize_matches_in_graph_regex(text):
    expected = re.sub(r"([.?!,;:])", r" \1 ", text.lower()).split()
    assert tokenize(text) == expected


def test_parse_stories_questions_and_answers(tmp_path):
    path = tmp_path / "qa8_lists-sets_train.txt"
    path.write_text(SIMPLE, encoding="utf-8")
    samples = parse_babi_file(path)
    assert len(samples) == 3
    assert all(isinstance(s, Sample) and s.task == 8 for s in samples)
    s0, s1, s2 = samples
    # Each question sees only earlier statements; question lines are not memories.
    assert s0.story == [
        tokenize("Mary moved to the bathroom."),
        tokenize("John went to the hallway."),
    ]
    assert s0.question == ["where", "is", "mary", "?"]
    assert s0.answer == "bathroom"
    assert len(s1.story) == 3
    assert all("?" not in sentence for sentence in s1.story)
    assert s1.story[-1] == tokenize("Daniel went back to the hallway.")
    # The story restarts at id 1.
    assert (s0.story_id, s1.story_id, s2.story_id) == (0, 0, 1)
    assert s2.story == [
        tokenize("Sandra picked up the apple ; then she took the football !"),
        ["sandra", "went", "to", "the", "garden", "."],
    ]
    # Answers are one lower-cased symbol, never tokenized.
    assert s2.answer == "apple,football"


def test_parse_task_argument_and_filename(tmp_path):
    path = tmp_path / "custom.txt"
    path.write_text(SIMPLE, encoding="utf-8")
    with pytest.raises(ValueError, match="task"):
        parse_babi_file(path)
    assert {s.task for s in parse_babi_file(path, task=19)} == {19}
    (tmp_path / "qa19_path-finding_test.txt").write_text(SIMPLE, encoding="utf-8")
    assert parse_babi_file(tmp_path / "qa19_path-finding_test.txt")[0].task == 19


def test_parse_crlf_line_endings(tmp_path):
    path = tmp_path / "qa1_x_train.txt"
    path.write_bytes(SIMPLE.replace("\n", "\r\n").encode())
    assert parse_babi_file(path) == parse_babi_file_from_text(tmp_path, SIMPLE)


def parse_babi_file_from_text(tmp_path: Path, text: str) -> list[Sample]:
    path = tmp_path / "qa1_y_train.txt"
    path.write_text(text, encoding="utf-8")
    return parse_babi_file(path)


@pytest.mark.parametrize(
    "text, lineno, fragment",
    [
        ("1 Mary went home.\n2 John left.\nJohn went home.\n", 3, "integer id"),
        ("1 Mary went home.\n2 John left.\n4 Mary left.\n", 3, "does not follow"),
        ("2 Mary went home.\n", 1, "start at id 1"),
        ("1 Mary went home.\n2 Where is Mary?\t\t1\n", 2, "answer"),
        ("1 Mary went home.\n2 Where is Mary? \t \t1\n", 2, "answer"),
        ("1 Mary went home.\n2 Where is Mary?\thome\tx\n", 2, "supporting"),
        ("1 Mary went home.\n2 Where is Mary?\thome\t2\n", 2, "supporting"),
        ("1 Mary went home.\n2 Where is Mary?\thome\t1\n\n1 John left.\n", 3, "integer id"),
        ("1 Mary went home.\n2 \thome\t1\n", 2, "empty question"),
        ("1 Mary went home.\n2  \n", 2, "empty statement"),
        ("1 Mary went home.\nx2 John left.\n", 2, "integer id"),
    ],
)
def test_malformed_lines_raise_with_file_and_line(tmp_path, text, lineno, fragment):
    path = tmp_path / "qa1_bad_train.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BabiFormatError) as info:
        parse_babi_file(path)
    err = info.value
    assert isinstance(err, ValueError)
    assert str(err).startswith(f"{path}:{lineno}: ")
    assert fragment in str(err)
    assert (err.path, err.lineno) == (str(path), lineno)


# --------------------------------------------------------------------------------------
# Vocabulary
# --------------------------------------------------------------------------------------


def test_vocabulary_ids_and_roundtrip(tmp_path):
    vocab = Vocabulary.build(["the", "mary", ".", "the", "apple,football"])
    assert vocab.tokens == ("<pad>", "<unk>", ".", "apple,football", "mary", "the")
    assert len(vocab) == 6
    assert vocab.token_to_id("<pad>") == 0 and vocab.token_to_id("<unk>") == 1
    assert vocab.encode(["mary", "zebra", "."]) == [4, 1, 2]
    assert vocab.id_to_token(5) == "the"
    assert vocab.decode([4, 5, 0, 0]) == ["mary", "the"]
    with pytest.raises(IndexError):
        vocab.id_to_token(6)
    path = tmp_path / "vocab.txt"
    vocab.save(path)
    assert path.read_text(encoding="utf-8").split("\n")[:3] == ["<pad>", "<unk>", "."]
    loaded = Vocabulary.load(path)
    assert loaded == vocab
    assert [loaded.token_to_id(t) for t in vocab.tokens] == list(range(len(vocab)))


def test_vocabulary_from_samples_includes_answers(tmp_path):
    samples = parse_babi_file_from_text(tmp_path, SIMPLE)
    vocab = Vocabulary.from_samples(samples)
    assert "apple,football" in vocab and "apple" in vocab and "?" in vocab
    assert vocab.tokens[2:] == tuple(sorted(vocab.tokens[2:]))
    with pytest.raises(ValueError):
        Vocabulary(["a", "b"])


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


# --------------------------------------------------------------------------------------
# tf.data
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("babi_ds") / "en-10k"
    stories = [[1, 4, 6], [2, 3], [7], [1, 2, 5, 8], [3, 9]] * 4
    return load_babi(make_babi_dir(root, {1: stories}), tasks=1, download=False)


def test_make_dataset_shapes_and_padding(small_data):
    import tensorflow as tf

    split = small_data.train
    w = small_data.max_words
    ds = make_dataset(split, batch_size=5, shuffle=False)
    features_spec, labels_spec = ds.element_spec
    assert features_spec["story"].shape.as_list() == [None, None, w]
    assert features_spec["question"].shape.as_list() == [None, w]
    assert labels_spec["answer"].shape.as_list() == [None]
    assert labels_spec["task"].dtype == tf.int32 and features_spec["story"].dtype == tf.int32
    start = 0
    for features, labels in ds:
        story, question = features["story"].numpy(), features["question"].numpy()
        b = story.shape[0]
        lengths = split.story_lengths[start : start + b]
        assert story.shape[1] == lengths.max()  # S = longest story of the batch.
        for j in range(b):
            n = int(lengths[j])
            np.testing.assert_array_equal(story[j, :n], split.story(start + j))
            assert not story[j, n:].any()  # Padding sentences are all-zero rows.
        np.testing.assert_array_equal(question, split.questions[start : start + b])
        np.testing.assert_array_equal(labels["answer"].numpy(), split.answers[start : start + b])
        np.testing.assert_array_equal(labels["task"].numpy(), split.tasks[start : start + b])
        start += b
    assert start == len(split)
    # drop_remainder gives a static batch size; repeat continues past one epoch.
    ds2 = make_dataset(split, batch_size=4, shuffle=True, seed=1, drop_remainder=True, repeat=True)
    assert ds2.element_spec[0]["story"].shape.as_list() == [4, None, w]
    assert len(list(ds2.take(len(split)))) == len(split)


def test_make_dataset_epochs_cover_each_sample_once_and_reshuffle(small_data):
    split = small_data.train
    ds = make_dataset(split, batch_size=8, shuffle=True, seed=123)
    expected = sample_keys(split)
    orders = []
    for _ in range(2):
        order = []
        for features, labels in ds:
            order += batch_keys(features, labels)
        assert collections.Counter(order) == expected
        orders.append(order)
    assert orders[0] != orders[1]
    # Same seed, new dataset: same first-epoch order (deterministic).
    again = []
    for features, labels in make_dataset(split, batch_size=8, shuffle=True, seed=123):
        again += batch_keys(features, labels)
    assert again == orders[0]


def test_make_dataset_empty_split(small_data):
    empty = EncodedSplit.empty(small_data.max_words)
    assert len(empty) == 0
    assert len(list(make_dataset(empty, batch_size=4, shuffle=True))) == 0


# --------------------------------------------------------------------------------------
# Data discovery and download
# --------------------------------------------------------------------------------------


@pytest.fixture
def isolated_env(tmp_path, monkeypatch):
    """No env var, and a fresh empty Keras cache under tmp_path."""
    monkeypatch.delenv(babi.BABI_DIR_ENV, raising=False)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras_home"))
    return tmp_path


@pytest.mark.parametrize("layout", ["", "en-10k", "tasks_1-20_v1-2/en-10k"])
def test_find_babi_dir_layouts(isolated_env, layout):
    root = isolated_env / "data"
    target = make_babi_dir(root / layout if layout else root, {1: [[1]]})
    assert find_babi_dir(root, download=False) == str(target.resolve())


def test_find_babi_dir_precedence(isolated_env, monkeypatch):
    explicit = make_babi_dir(isolated_env / "explicit" / "en-10k", {1: [[1]]})
    env_dir = make_babi_dir(isolated_env / "env", {1: [[1]]})
    cache = isolated_env / "keras_home" / "datasets"
    cached = make_babi_dir(cache / "tasks_1-20_v1-2" / "en-10k", {1: [[1]]})
    monkeypatch.setenv(babi.BABI_DIR_ENV, str(env_dir))
    assert find_babi_dir(explicit.parent, download=False) == str(explicit.resolve())
    assert find_babi_dir(download=False) == str(env_dir.resolve())
    monkeypatch.delenv(babi.BABI_DIR_ENV)
    assert find_babi_dir(download=False) == str(cached.resolve())


def test_find_babi_dir_errors(isolated_env, monkeypatch):
    empty = isolated_env / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match=r"qa\*_train\.txt"):
        find_babi_dir(empty)
    monkeypatch.setenv(babi.BABI_DIR_ENV, str(empty))
    with pytest.raises(FileNotFoundError, match=babi.BABI_DIR_ENV):
        find_babi_dir()
    monkeypatch.delenv(babi.BABI_DIR_ENV)
    with pytest.raises(FileNotFoundError, match="download=False"):
        find_babi_dir(download=False)


def test_offline_download_error_says_what_to_pass(isolated_env, monkeypatch):
    calls = []

    def offline(*args, **kwargs):
        calls.append((args, kwargs))
        raise DownloadError("could not download tasks_1-20_v1-2.tar.gz: <urlopen error offline>")

    monkeypatch.setattr(sources, "fetch_archive", offline)
    with pytest.raises(DownloadError) as info:
        find_babi_dir()
    message = str(info.value)
    assert "--data_dir=/path/containing/en-10k" in message
    assert f"{babi.BABI_DIR_ENV}=/path/containing/en-10k" in message
    assert babi.BABI_URLS[0] in message
    assert calls and calls[0][1]["sha256"] == babi.BABI_ARCHIVE_SHA256

    def mismatch(*args, **kwargs):
        raise ChecksumError("x: sha256 checksum mismatch")

    monkeypatch.setattr(sources, "fetch_archive", mismatch)
    with pytest.raises(ChecksumError, match="mismatch"):
        find_babi_dir()


def test_download_path_extracts_into_keras_cache(isolated_env, monkeypatch):
    src = make_babi_dir(isolated_env / "src" / "tasks_1-20_v1-2" / "en-10k", {1: [[1, 2]]})
    archive = isolated_env / "archive.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src.parent, arcname="tasks_1-20_v1-2")
    monkeypatch.setattr(sources, "fetch_archive", lambda *a, **k: str(archive))
    found = find_babi_dir()
    expected = isolated_env / "keras_home" / "datasets" / "tasks_1-20_v1-2" / "en-10k"
    assert found == str(expected.resolve())
    assert len(load_babi(tasks=1).train) >= 1
    # Second call finds the cache without fetching.
    monkeypatch.setattr(sources, "fetch_archive", lambda *a, **k: pytest.fail("fetched again"))
    assert find_babi_dir() == found


def test_verify_checksum(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"tpr-keras")
    sha = hashlib.sha256(b"tpr-keras").hexdigest()
    md5 = hashlib.md5(b"tpr-keras").hexdigest()
    assert verify_checksum(path, sha) == sha
    assert verify_checksum(path, sha.upper(), "sha256") == sha
    assert verify_checksum(path, md5, "md5") == md5
    assert verify_checksum(path, ["0" * 64, sha]) == sha
    with pytest.raises(ChecksumError, match="mismatch"):
        verify_checksum(path, "0" * 64)
    with pytest.raises(ChecksumError):
        verify_checksum(path, sha, "md5")


def test_fetch_archive_file_urls(tmp_path):
    payload = tmp_path / "src.bin"
    payload.write_bytes(b"archive bytes")
    sha = hashlib.sha256(b"archive bytes").hexdigest()
    cache = tmp_path / "cache"
    missing = (tmp_path / "missing.bin").as_uri()
    path = fetch_archive([missing, payload.as_uri()], "a.bin", sha256=sha, cache_root=cache)
    assert Path(path) == cache / "datasets" / "a.bin"
    assert Path(path).read_bytes() == b"archive bytes"
    # Cached and valid: no network access needed.
    offline_url = "http://invalid.invalid/a.bin"
    assert fetch_archive(offline_url, "a.bin", sha256=sha, cache_root=cache) == path
    # Checksum mismatch deletes the bad file and raises.
    with pytest.raises(ChecksumError):
        fetch_archive(payload.as_uri(), "b.bin", sha256="0" * 64, cache_root=cache)
    assert sorted(p.name for p in (cache / "datasets").iterdir()) == ["a.bin"]
    # A corrupted cached file is replaced.
    Path(path).write_bytes(b"corrupted")
    again = fetch_archive(payload.as_uri(), "a.bin", sha256=sha, cache_root=cache)
    assert Path(again).read_bytes() == b"archive bytes"
    with pytest.raises(DownloadError):
        fetch_archive(missing, "c.bin", md5="0" * 32, cache_root=cache)
    with pytest.raises(ValueError):
        fetch_archive(payload.as_uri(), "d.bin", cache_root=cache)


def _tar_with(path: Path, members: list[tarfile.TarInfo], data: bytes = b"x") -> Path:
    with tarfile.open(path, "w") as tar:
        for m in members:
            if m.isfile():
                m.size = len(data)
                tar.addfile(m, io.BytesIO(data))
            else:
                tar.addfile(m)
    return path


@pytest.mark.parametrize(
    "name, kind, link",
    [
        ("../evil.txt", tarfile.REGTYPE, ""),
        ("ok/../../evil.txt", tarfile.REGTYPE, ""),
        ("/tmp/evil.txt", tarfile.REGTYPE, ""),
        ("ok/link", tarfile.SYMTYPE, "../../outside"),
        ("ok/link", tarfile.SYMTYPE, "/etc/passwd"),
    ],
)
def test_safe_extract_rejects_escaping_members(tmp_path, name, kind, link):
    good = tarfile.TarInfo("ok/good.txt")
    bad = tarfile.TarInfo(name)
    bad.type = kind
    bad.linkname = link
    archive = _tar_with(tmp_path / "bad.tar", [good, bad])
    dest = tmp_path / "dest"
    with pytest.raises(ValueError):
        safe_extract(archive, dest)
    assert not (tmp_path / "evil.txt").exists()
    assert not (dest / "ok" / "good.txt").exists()  # Nothing is written.


def test_safe_extract_normal_archive(tmp_path):
    members = [tarfile.TarInfo("top/a.txt"), tarfile.TarInfo("top/sub/b.txt")]
    archive = _tar_with(tmp_path / "good.tar", members, b"hi")
    names = safe_extract(archive, tmp_path / "out")
    assert set(names) == {"top/a.txt", "top/sub/b.txt"}
    assert (tmp_path / "out" / "top" / "sub" / "b.txt").read_bytes() == b"hi"


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


def test_bucketing_keeps_every_sample_once_and_pads_less(shared_data):
    from tpr_keras.data.babi import load_babi, make_dataset

    data = load_babi(shared_data / "babi", tasks=(2,), download=False)
    plain = make_dataset(data.train, 128, shuffle=True, seed=0)
    bucketed = make_dataset(data.train, 128, shuffle=True, seed=0, bucket_width=10)
    padded_plain = sum(features["story"].numpy().size for features, _ in plain)
    seen, padded_bucketed = [], 0
    for features, _ in bucketed:
        story = features["story"].numpy()
        padded_bucketed += story.size
        lengths = (story != 0).any(-1).sum(-1)
        assert lengths.max() - lengths.min() <= 10  # one bucket per batch
        seen.append(features["question"].numpy())
    assert sum(len(q) for q in seen) == len(data.train)
    assert padded_bucketed < 0.6 * padded_plain
