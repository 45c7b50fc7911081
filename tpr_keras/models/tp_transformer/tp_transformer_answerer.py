"""The Mathematics task model: questions in, greedy-decoded answer strings out."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
from keras import ops

from tpr_keras.data.mathematics.parsing import MAX_ANSWER_LENGTH
from tpr_keras.models.task_models import TaskModel, check_texts
from tpr_keras.models.tp_transformer.tp_transformer_preprocessor import MathPreprocessor

#: Decoding steps by default: the longest answer and its end symbol (the exporter's).
DEFAULT_MAX_LENGTH = MAX_ANSWER_LENGTH + 1


class MathAnswerer(TaskModel):
    """A trained TP-Transformer answering Mathematics Dataset questions.

    Holds the Keras model (``.backbone``, a ``TPTransformer``) and its
    :class:`MathPreprocessor` (``.preprocessor``, also ``.tokenizer``). It decodes
    greedily with the model's own ``greedy_decode`` (key/value cache, whole batch at
    once), as the SavedModel that :meth:`export` writes from it (its
    ``serving_default``) does. A model fresh from training is one in memory:
    ``MathAnswerer(model, MathPreprocessor(vocabulary))``.

    The model answers whatever it is asked, as a bAbI model does: a question outside the
    modules it was trained on gets an answer too, and a ``module`` of ``""`` in
    :meth:`predict` (and in the served outputs) says so, however high the answer's
    log-probability; so does a non-zero ``unknown_characters``. Which module a question
    belongs to is read from its wording (the templates of the preset's training
    questions, :mod:`tpr_keras.data.mathematics.templates`, which also states the rule's
    limits); a preprocessor without templates gives no ``module``.

    Args:
        backbone: The trained ``TPTransformer``.
        preprocessor: Its :class:`MathPreprocessor`.

    Example:
    >>> answerer = MathAnswerer.from_preset("tp_transformer_math_focus")
    >>> answerer.generate(["What is the hundreds digit of 81379118?"])
    ['1']
    >>> answerer.predict(["Solve 3*x = 6 for x."])["module"].tolist()  # not trained on
    ['']
    """

    task = "math"
    exporter = "tpr_keras.models.tp_transformer.tp_transformer_exporter:export_math_answerer"
    preprocessor_class = MathPreprocessor

    def predict(self, questions: str | Sequence[str], max_length: int = DEFAULT_MAX_LENGTH,
                batch_size: int = 64) -> dict[str, np.ndarray]:
        """Greedy answers with their log-probabilities (the served model's outputs).

        Args:
            questions: One question or a list of them.
            max_length: Decoding steps (answer characters and the end symbol).
            batch_size: Questions decoded at once.

        Returns:
            ``{"answer": str[B], "log_prob": float32[B], "unknown_characters":
            int32[B], "module": str[B]}``: the answer (cut at ``max_length - 1``
            characters when it does not end sooner), the sum of its symbols'
            log-probabilities, how many characters of the question are outside the
            vocabulary (they read as ``<unk>``), and the trained module whose wording the
            question has, ``""`` when none (then the model was not trained on such
            questions; no ``module`` key when the preprocessor has no templates).

        Raises:
            ValueError: no question, an empty one, one that is not a string, or
                ``max_length < 1``.
        """
        questions = check_texts("questions", questions)
        for i, question in enumerate(questions):
            if not question.strip():
                raise ValueError(f"questions[{i}] is empty: ask a question")
        if max_length < 1 or batch_size < 1:
            raise ValueError(f"max_length and batch_size must be >= 1, got {max_length} "
                             f"and {batch_size}")
        answers, log_probs = [], []
        for start in range(0, len(questions), batch_size):
            source = self.preprocessor(questions[start:start + batch_size])
            ids, log_prob = self.backbone.greedy_decode(source, max_length=int(max_length))
            answers += self.preprocessor.decode(ops.convert_to_numpy(ids))
            log_probs.append(ops.convert_to_numpy(log_prob))
        unknown = [self.preprocessor.unknown_characters(q) for q in questions]
        out = {"answer": np.asarray(answers, dtype=str),
               "log_prob": np.concatenate(log_probs).astype(np.float32),
               "unknown_characters": np.asarray(unknown, np.int32)}
        if self.preprocessor.templates is not None:
            out["module"] = np.asarray([self.preprocessor.module_of(q) for q in questions],
                                       dtype=str)
        return out

    def generate(self, questions: str | Sequence[str], max_length: int = DEFAULT_MAX_LENGTH,
                 batch_size: int = 64) -> list[str]:
        """The greedy answer to each question (see :meth:`predict`)."""
        return self.predict(questions, max_length, batch_size)["answer"].tolist()

    def export(self, export_dir: str | os.PathLike, model_name: str | None = None, *,
               version: int | None = None, beam_size: int = 4) -> str:
        """Writes the answerer to ``<export_dir>/<model_name>/<version>/`` for TF Serving.

        The SavedModel (:mod:`tpr_keras.models.tp_transformer.tp_transformer_exporter`:
        ``serving_default``, greedy as :meth:`predict`, and ``beam``) reads the backbone
        and the preprocessor's vocabulary, question length and module templates. Needs
        TensorFlow.

        Args:
            export_dir: Base folder of the export.
            model_name: The served model's name (default: :attr:`served_name`).
            version: Version number; default: one more than the largest existing one.
            beam_size: Hypotheses of the ``beam`` signature.

        Returns:
            The version folder written.

        Raises:
            FileExistsError: ``version`` is given and already exists.
        """
        return super().export(export_dir, model_name, version=version, beam_size=beam_size)
