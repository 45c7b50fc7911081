"""One bAbI text specification, three tokenizers: the loader's Python one, the in-graph one
of the exports and the task model's NumPy :class:`BabiPreprocessor` give the same ids on
inputs chosen to break them."""

import numpy as np
import pytest
import tensorflow as tf

from tpr_keras.data import babi
from tpr_keras.data.babi.text import PUNCTUATION, SENTENCE_ENDS, regex_group, tokenize
from tpr_keras.export.babi_tokenizer import BabiTokenizer
from tpr_keras.models.babi import BabiPreprocessor
from tpr_keras.presets import PresetError

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


STORIES = [
    "\n".join(TRICKY[:3]),  # newlines and sentence ends
    "Mary went to the kitchen. John moved to the garden.",  # one line, two sentences
    "  Daniel\tjourneyed \u00a0to the\u3000office  ?!.",  # other whitespace
    "Sandra went to the office\x00 then Zorblax appeared",  # NUL, unknown words
    "\n\n" + "Mary went to the kitchen.\n" * 5,  # empty lines; cut to the last 3
    "ÉMILE went to the café." + " the" * 20,  # over-long sentence: cut to 12 tokens
]


@pytest.mark.parametrize("max_story_sentences,keep_sentence_ends",
                         [(None, True), (3, True), (None, False), (3, False)])
def test_the_numpy_preprocessor_gives_the_in_graph_ids(vocab_and_tokenizer, tmp_path,
                                                       max_story_sentences, keep_sentence_ends):
    vocab, _ = vocab_and_tokenizer
    vocab.save(tmp_path / "vocab.txt")
    graph = BabiTokenizer(str(tmp_path / "vocab.txt"), 12, max_story_sentences,
                          keep_sentence_ends=keep_sentence_ends)
    numpy = BabiPreprocessor(vocab, 12, max_story_sentences, keep_sentence_ends)
    questions = TRICKY[:len(STORIES)]
    ids = numpy(STORIES, questions)
    np.testing.assert_array_equal(ids["story"], graph.story_ids(tf.constant(STORIES)).numpy())
    np.testing.assert_array_equal(ids["question"],
                                  graph.question_ids(tf.constant(questions)).numpy())
    assert ids["story"].dtype == ids["question"].dtype == np.int32
    counts = [numpy.unknown_words(s, q) for s, q in zip(STORIES, questions)]
    np.testing.assert_array_equal(
        counts, graph.unknown_words(tf.constant(STORIES), tf.constant(questions)).numpy())
    assert counts[3] == 4  # "office\ufffd" (NUL), "then", "zorblax", "appeared"
    np.testing.assert_array_equal(numpy.decode([[2, 1]]),
                                  graph.decode([[2, 1]]).numpy().astype(str))


def test_without_sentence_ends_the_marks_split_the_story_and_are_dropped(
        vocab_and_tokenizer, tmp_path):
    vocab, _ = vocab_and_tokenizer
    vocab.save(tmp_path / "vocab.txt")
    graph = BabiTokenizer(str(tmp_path / "vocab.txt"), 12, None, keep_sentence_ends=False)
    numpy = BabiPreprocessor(vocab, 12, None, keep_sentence_ends=False)
    story = "Mary went to the kitchen. John went?!.\n.\nWhere, Sandra"
    assert numpy.story_words(story) == [["mary", "went", "to", "the", "kitchen"],
                                        ["john", "went"], ["where", ",", "sandra"]]
    assert numpy.question_words("Where is Mary?") == ["where", "is", "mary"]
    ids = numpy([story], ["Where is Mary?"])
    np.testing.assert_array_equal(ids["story"], graph.story_ids(tf.constant([story])).numpy())
    assert not np.isin(vocab.encode(list(SENTENCE_ENDS)), ids["story"]).any()
    assert numpy.unknown_words(story, "Where is Mary?") == 0


def test_a_story_as_a_list_of_sentences_reads_as_its_lines(vocab_and_tokenizer):
    vocab, _ = vocab_and_tokenizer
    numpy = BabiPreprocessor(vocab, 12, None)
    as_list = numpy([["Mary went to the kitchen", "John went to the office."]], ["Where?"])
    as_text = numpy(["Mary went to the kitchen\nJohn went to the office."], ["Where?"])
    np.testing.assert_array_equal(as_list["story"], as_text["story"])
    assert as_list["story"].shape == (1, 2, 12)


def test_from_preset_reads_the_vocabulary_width_and_served_truncation():
    preprocessor = BabiPreprocessor.from_preset("tpr_rnn_babi_all_tasks")
    assert (preprocessor.max_words, preprocessor.max_story_sentences) == (12, 130)
    assert preprocessor.keep_sentence_ends  # a preset without the option keeps the marks
    assert len(preprocessor.vocabulary) == 180 and "kitchen" in preprocessor.vocabulary
    with pytest.raises(PresetError, match="task 'math'.*MathAnswerer"):
        BabiPreprocessor.from_preset("tp_transformer_math_focus")
    with pytest.raises(ValueError, match="max_words"):
        BabiPreprocessor(preprocessor.vocabulary, 0)


def test_the_in_graph_tokenizer_from_the_same_preset_gives_the_same_ids():
    graph = BabiTokenizer.from_preset("memn2n_babi_all_tasks")
    numpy = BabiPreprocessor.from_preset("memn2n_babi_all_tasks")
    # trained on text without ". ?" (joint_paper): 11 word slots, the marks dropped
    assert (graph.max_words, graph.max_story_sentences) == (11, 130)
    assert graph.keep_sentence_ends is False and numpy.keep_sentence_ends is False
    questions = TRICKY[:len(STORIES)]
    ids = numpy(STORIES, questions)
    np.testing.assert_array_equal(ids["story"], graph.story_ids(tf.constant(STORIES)).numpy())
    np.testing.assert_array_equal(ids["question"],
                                  graph.question_ids(tf.constant(questions)).numpy())
    with pytest.raises(PresetError, match="not 'babi'"):
        BabiTokenizer.from_preset("tpru32_entailment")
