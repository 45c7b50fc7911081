"""Tests for tpr_keras.data.babi's tokenizer, parser and vocabulary.

Each test writes its own tiny bAbI file under ``tmp_path`` (helpers in
``tests/data/tiny_babi.py``): how a line is tokenized, how a file becomes samples (and
which malformed lines are refused, with file and line), and the word vocabulary's ids.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.data.tiny_babi import SIMPLE, make_babi_dir, parse_babi_file_from_text
from tpr_keras.data.babi import (
    BabiFormatError,
    Sample,
    Vocabulary,
    load_babi,
    parse_babi_file,
    tokenize,
)

# Tiny task files hold far fewer than 10,000 questions; load_babi warns about that.
pytestmark = pytest.mark.filterwarnings("ignore:task .* fewer than:UserWarning")


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
