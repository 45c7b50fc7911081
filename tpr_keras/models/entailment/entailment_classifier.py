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
    exporter = "tpr_keras.export.entailment:export_entailment_classifier"
    preprocessor_class = EntailmentPreprocessor

    def predict(self, premises: str | Sequence[str], hypotheses: str | Sequence[str],
                batch_size: int = 64) -> dict[str, np.ndarray]:
        """The probability that each premise entails the hypothesis beside it.

        Args:
            premises: One formula or a list of them.
            hypotheses: One formula or a list of them, one per premise.
            batch_size: Pairs the model reads at once.

        Returns:
            The served model's outputs: ``probability`` (``float32[B]``), ``entails``
            (``bool[B]``, above 0.5), and what the model did not take in:
            ``unknown_characters`` (``int32[B]``) and ``unknown_tokens`` (``str[B]``):
            how many characters of the pair are outside the formula syntax (they read as
            ``<unk>``) and which (distinct, premise first, space-separated);
            ``premise_well_formed`` and ``hypothesis_well_formed`` (``bool[B]``): whether
            each is a formula of the grammar
            (:mod:`~tpr_keras.models.entailment.entailment_grammar`). A malformed or
            empty formula is answered all the same (the served model's behaviour); the
            probability then means nothing.

        Raises:
            ValueError: no pair, mismatched list lengths, or a formula that is not a
                string.
        """
        premises = check_texts("premises", premises)
        hypotheses = check_texts("hypotheses", hypotheses)
        check_same_length(premises=premises, hypotheses=hypotheses)
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        probabilities = []
        for start in range(0, len(premises), batch_size):
            inputs = {"a": self.preprocessor(premises[start:start + batch_size]),
                      "b": self.preprocessor(hypotheses[start:start + batch_size])}
            logits = ops.cast(ops.reshape(self.backbone(inputs, training=False), (-1,)),
                              "float32")
            probabilities.append(ops.convert_to_numpy(ops.sigmoid(logits)))
        probability = np.concatenate(probabilities).astype(np.float32)
        return {"probability": probability, "entails": probability > 0.5,
                **self.preprocessor.report(premises, hypotheses)}

    def export(self, export_dir: str | os.PathLike, model_name: str | None = None, *,
               version: int | None = None) -> str:
        """Writes the classifier to ``<export_dir>/<model_name>/<version>/`` for TF Serving.

        The SavedModel (:mod:`tpr_keras.export.entailment`:
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
