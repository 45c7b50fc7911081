"""One bAbI text specification, two tokenizers: the loader's Python one and the in-graph one
of the exports give the same ids on inputs chosen to break them."""

import numpy as np
import pytest
import tensorflow as tf

from tpr_keras.data import babi
from tpr_keras.data.babi.text import PUNCTUATION, SENTENCE_ENDS, regex_group, tokenize
from tpr_keras.models.babi import BabiTokenizer

TRICKY = [
    "Where is Mary?",
    "WHERE is mary ?",  # case, and punctuation already spaced
    "Mary,John;Sandra:went?",  # punctuation glued to words
    "is the football in the kitchen...",  # repeated punctuation
    "  Daniel\tjourneyed \u00a0to the\u3000office  ",  # other whitespace
    "Who is Zorblax the Unknown?",  # words outside the vocabulary
    "",  # empty
    "?!.",  # punctuation only
    "ÉMILE went to the café.",  # non-ASCII case
]
WORDS = ["where", "is", "mary", "john", "sandra", "went", "the", "football", "in",
         "kitchen", "daniel", "journeyed", "to", "office", "who", "émile", "café"]


@pytest.fixture(scope="module")
def vocab_and_tokenizer(tmp_path_factory):
    vocab = babi.Vocabulary.build(WORDS + list(PUNCTUATION))
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    vocab.save(path)
    return vocab, BabiTokenizer(str(path), max_words=12, max_story_sentences=None)


def python_ids(vocab, text, width):
    ids = vocab.encode(tokenize(text))[:width]
    return ids + [babi.Vocabulary.PAD_ID] * (width - len(ids))


def test_questions_get_the_same_ids(vocab_and_tokenizer):
    vocab, tokenizer = vocab_and_tokenizer
    graph = tokenizer.question_ids(tf.constant(TRICKY)).numpy()
    want = np.array([python_ids(vocab, text, 12) for text in TRICKY], np.int32)
    np.testing.assert_array_equal(graph, want)
    assert (want == babi.Vocabulary.UNK_ID).any()  # the unknown words did map to <unk>
    assert not want[TRICKY.index("")].any()  # the empty question is all padding


def test_stories_split_into_sentences_as_the_loader_reads_them(vocab_and_tokenizer):
    vocab, tokenizer = vocab_and_tokenizer
    # one sentence per line, as the loader's files hold them
    stories = ["\n".join(TRICKY[:3]), "\n".join(TRICKY[3:6]), "", TRICKY[8]]
    graph = tokenizer.story_ids(tf.constant(stories)).numpy()
    for story, ids in zip(stories, graph):
        sentences = [tokenize(line) for line in story.split("\n")]
        # the in-graph splitter also ends a sentence at . ? ! (and drops empty ones)
        split = []
        for tokens in sentences:
            current = []
            for token in tokens:
                current.append(token)
                if token in SENTENCE_ENDS:
                    split.append(current)
                    current = []
            if current:
                split.append(current)
        want = np.zeros_like(ids)
        for i, tokens in enumerate(split):
            encoded = vocab.encode(tokens)[:12]
            want[i, :len(encoded)] = encoded
        np.testing.assert_array_equal(ids, want)


def test_unknown_words_are_counted(vocab_and_tokenizer):
    _, tokenizer = vocab_and_tokenizer
    counts = tokenizer.unknown_words(tf.constant(["Mary went to Paris.", ""]),
                                     tf.constant(["Who is Zorblax?", "where is mary?"]))
    np.testing.assert_array_equal(counts.numpy(), [2, 0])  # "paris" and "zorblax"


def test_the_specification_builds_the_regular_expressions():
    assert regex_group(".?!") == r"([\.\?\!])"
    assert tokenize("A,b.C?") == ["a", ",", "b", ".", "c", "?"]
    graph = tf.strings.split(tf.strings.regex_replace(
        tf.strings.lower(tf.constant(["A,b.C?"])), regex_group(PUNCTUATION), r" \1 "))
    assert [t.decode() for t in graph.numpy()[0]] == tokenize("A,b.C?")
