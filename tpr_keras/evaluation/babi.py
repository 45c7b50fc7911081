"""bAbI's table: test error % per task of a trained model, the mean and the failed tasks
(above 5 %, the bAbI papers' criterion), with the argmax answer the ``train.*`` commands
score at the end of a run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from tpr_keras.data.babi import files, parsing, pipeline, splits, truncation
from tpr_keras.data.babi.encoding import encode_stories

#: A task whose test error is above this (%) has failed (the bAbI papers' criterion).
FAILED_ABOVE = 5.0
#: How long a story the served bAbI models read (defined with the loader's truncation).
SERVED_MAX_STORY_SENTENCES = truncation.SERVED_MAX_STORY_SENTENCES


def babi_table(model, vocab, data_dir, tasks: Sequence[int] = tuple(range(1, 21)),
               limit: int | None = None, max_story_sentences=None,
               batch_size: int = 256, download: bool = False,
               keep_sentence_ends: bool = True) -> dict[str, Any]:
    """bAbI test error per task of a model reading ``{"story", "question"}`` ids.

    Args:
        model: A TPR-RNN or MemN2N (``max_words`` attribute; logits over ``vocab``).
        vocab: The model's :class:`~tpr_keras.data.babi.Vocabulary`.
        data_dir: Where the official files are (see ``find_babi_dir``).
        tasks: Task numbers.
        limit: Only the first N questions of every test file.
        max_story_sentences: Truncation as in training (None: 70, 130 for task 3).
        batch_size: Evaluation batch.
        download: Allow downloading the archive when no local copy is found.
        keep_sentence_ends: False drops ``. ? !`` as in training (MemN2N
            ``joint_paper``; :func:`~tpr_keras.data.babi.text.tokenize`).

    Returns:
        ``{"test_error_percent": {"1": ..., ...}, "test_error_percent_mean",
        "failed_tasks", "questions": {"1": n, ...}}``.

    Raises:
        FileNotFoundError: a task's test file is missing (the message names it).
    """
    root = files.find_babi_dir(data_dir, download=download)
    limits = truncation.resolve_limits(max_story_sentences, tasks)
    parts = []
    for task in tasks:
        stories = parsing.parse_stories(files.task_file(root, task, "test"), keep_sentence_ends)
        parts.append((task, splits.take_questions(stories, limit) if limit else stories))
    split, _ = encode_stories(parts, vocab, model.max_words, limits)
    dataset = pipeline.make_dataset(split, batch_size, shuffle=False, bucket_width=10)

    @tf.function(reduce_retracing=True, autograph=False)  # lengths differ: one general trace
    def correct(features, answer):
        logits = model(features, training=False)
        return tf.equal(tf.argmax(logits, axis=-1, output_type=tf.int32),
                        tf.cast(answer, tf.int32))

    hits, groups = [], []
    for features, labels in dataset:
        hits.append(correct(features, labels["answer"]).numpy())
        groups.append(labels["task"].numpy())
    hits, groups = np.concatenate(hits), np.concatenate(groups)
    errors = {str(t): float(100.0 * (1.0 - hits[groups == t].mean())) for t in tasks}
    return {"test_error_percent": errors,
            "test_error_percent_mean": float(np.mean(list(errors.values()))),
            "failed_tasks": sum(e > FAILED_ABOVE for e in errors.values()),
            "questions": {str(t): int((groups == t).sum()) for t in tasks}}
