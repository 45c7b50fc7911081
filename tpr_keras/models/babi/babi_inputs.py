"""The symbolic inputs every bAbI model takes: story and question word ids."""

import keras


def babi_inputs(max_words):
    """``(story, question)``: ``keras.Input`` of ``int32[batch, sentences, max_words]`` and
    ``int32[batch, max_words]`` (0 = pad), named as the data pipeline's features.

    Example:
    >>> story, question = babi_inputs(8)
    >>> story.shape, question.shape
    ((None, None, 8), (None, 8))
    """
    story = keras.Input((None, max_words), dtype="int32", name="story")
    question = keras.Input((max_words,), dtype="int32", name="question")
    return story, question
