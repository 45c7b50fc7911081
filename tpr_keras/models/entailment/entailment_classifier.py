"""The entailment task model: premise and hypothesis formulas in, entailment probability out."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
from keras import ops

from tpr_keras.models.entailment.entailment_preprocessor import EntailmentPreprocessor
from tpr_keras.models.task_models import TaskModel, check_same_length, check_texts


class EntailmentClassifier(TaskModel):
    """A trained entailment model deciding whether a premise entails a hypothesis.

    Holds the Keras model (``.backbone``, ``PlainEntailmentModel`` or
    ``BiDAFEntailmentModel``) and its :class:`EntailmentPreprocessor`
    (``.preprocessor``, also ``.tokenizer``; its docstring gives the formula syntax:
    variables ``a``-``z``, ``~(p)``, and ``(p&q)``, ``(p|q)``, ``(p>q)``). It answers
    as the SavedModel that :meth:`export` writes from it (its ``serving_default``). A
    model fresh from training is one in memory:
    ``EntailmentClassifier(model, EntailmentPreprocessor())``.

    Args:
        backbone: The trained entailment model (``{"a", "b"}`` ids -> one logit).
        preprocessor: Its :class:`EntailmentPreprocessor`.

    Example:
    >>> classifier = EntailmentClassifier.from_preset("tpru32_entailment")
    >>> out = classifier.predict(["(p&q)", "~((p>q))"], ["(p|q)", "(q&~(p))"])
    >>> out["entails"].tolist()
    [True, False]
    """

    task = "entailment"
    exporter = "tpr_keras.models.entailment.entailment_exporter:export_entailment_classifier"
    preprocessor_class = EntailmentPreprocessor

    def predict(self, premises: str | Sequence[str], hypotheses: str | Sequence[str],
                batch_size: int = 64) -> dict[str, np.ndarray]:
        """The probability that each premise entails the hypothesis beside it.

        Args:
            premises: One formula or a list of them.
            hypotheses: One formula or a list of them, one per premise.
            batch_size: Pairs the model reads at once.

        Returns:
            ``{"probability": float32[B], "entails": bool[B], "unknown_characters":
            int32[B]}``: the model's probability, whether it is above 0.5 (the served
            model's outputs), and how many characters of the pair are outside the
            formula syntax (they read as ``<unk>``).

        Raises:
            ValueError: no pair, mismatched list lengths, an empty formula or one that
                is not a string.
        """
        premises = check_texts("premises", premises)
        hypotheses = check_texts("hypotheses", hypotheses)
        check_same_length(premises=premises, hypotheses=hypotheses)
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        for name, formulas in (("premises", premises), ("hypotheses", hypotheses)):
            for i, formula in enumerate(formulas):
                if not len(self.preprocessor([formula])[0].nonzero()[0]):
                    raise ValueError(f"{name}[{i}] is empty: give a formula such as "
                                     "'(a&b)'")
        probabilities = []
        for start in range(0, len(premises), batch_size):
            inputs = {"a": self.preprocessor(premises[start:start + batch_size]),
                      "b": self.preprocessor(hypotheses[start:start + batch_size])}
            logits = ops.cast(ops.reshape(self.backbone(inputs, training=False), (-1,)),
                              "float32")
            probabilities.append(ops.convert_to_numpy(ops.sigmoid(logits)))
        probability = np.concatenate(probabilities).astype(np.float32)
        unknown = [self.preprocessor.unknown_characters(p)
                   + self.preprocessor.unknown_characters(h)
                   for p, h in zip(premises, hypotheses)]
        return {"probability": probability, "entails": probability > 0.5,
                "unknown_characters": np.asarray(unknown, np.int32)}

    def export(self, export_dir: str | os.PathLike, model_name: str | None = None, *,
               version: int | None = None) -> str:
        """Writes the classifier to ``<export_dir>/<model_name>/<version>/`` for TF Serving.

        The SavedModel (:mod:`tpr_keras.models.entailment.entailment_exporter`:
        ``serving_default``, ``classify``) reads the backbone and the preprocessor's
        character vocabulary, so it answers as :meth:`predict` does. Needs TensorFlow.

        Args:
            export_dir: Base folder of the export.
            model_name: The served model's name (default: :attr:`served_name`).
            version: Version number; default: one more than the largest existing one.

        Returns:
            The version folder written.

        Raises:
            FileExistsError: ``version`` is given and already exists.
        """
        return super().export(export_dir, model_name, version=version)
