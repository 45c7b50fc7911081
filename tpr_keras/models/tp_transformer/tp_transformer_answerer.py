"""The Mathematics task model: questions in, greedy-decoded answer strings out."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
from keras import ops

from tpr_keras.data.mathematics.parsing import MAX_ANSWER_LENGTH
from tpr_keras.models.task_models import TaskModel, check_texts
from tpr_keras.models.tp_transformer.tp_transformer_preprocessor import MathPreprocessor
from tpr_keras.presets.module_claims import DEFAULT_THRESHOLD, claimed_scores


def is_routed(backbone) -> bool:
    """Whether ``backbone`` routes questions to decoders by module (a
    :class:`~tpr_keras.models.tp_transformer.routed_tp_transformer.RoutedTPTransformer`)."""
    return callable(getattr(backbone, "routes", None))


#: Decoding steps by default: the longest answer and its end symbol (the exporter's).
DEFAULT_MAX_LENGTH = MAX_ANSWER_LENGTH + 1


class MathAnswerer(TaskModel):
    """A trained TP-Transformer answering Mathematics Dataset questions.

    Holds the Keras model (``.backbone``, a ``TPTransformer`` or a
    :class:`~tpr_keras.models.tp_transformer.routed_tp_transformer.RoutedTPTransformer`,
    which answers each question by the decoder of its module) and its
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

    A preset that claims modules (its ``metadata.json``'s ``claims``: those it scored
    >= 90 % exact match on on a fresh generator sample, :mod:`tpr_keras.presets.module_claims`)
    gives an answerer whose :attr:`claims` are their scores; then :meth:`predict` (and the
    served model) also says per question whether its module is one of them (``claimed``).

    Args:
        backbone: The trained ``TPTransformer`` or ``RoutedTPTransformer`` (which needs a
            preprocessor with templates).
        preprocessor: Its :class:`MathPreprocessor`.
        claims: ``{module: exact match %}`` of the modules the model claims, or None
            (it claims nothing; no ``claimed`` output). Needs the preprocessor's templates,
            and every claimed module among them.
        claim_threshold: The exact match % a module needed to be claimed.

    Example:
    >>> answerer = MathAnswerer.from_preset("tp_transformer_math_focus")
    >>> answerer.generate(["What is the hundreds digit of 81379118?"])
    ['1']
    >>> answerer.predict(["Solve 3*x = 6 for x."])["module"].tolist()  # not trained on
    ['']
    """

    task = "math"
    exporter = "tpr_keras.export.tp_transformer:export_math_answerer"
    preprocessor_class = MathPreprocessor

    def __init__(self, backbone, preprocessor, claims=None,
                 claim_threshold=DEFAULT_THRESHOLD) -> None:
        if is_routed(backbone) and preprocessor.templates is None:
            raise ValueError("a RoutedTPTransformer answers each question by the decoder of "
                             "its module: its preprocessor needs the module templates "
                             "(the preset's assets/modules.json.gz)")
        super().__init__(backbone, preprocessor)
        #: ``{module: exact match %}`` the model claims, or None (no claim).
        self.claims = None if claims is None else self._checked(claims)
        self.claim_threshold = float(claim_threshold)

    def _checked(self, claims):
        """``claims`` as ``{str: float}``, each module one the templates recognise (not a
        wide one, kept with no templates)."""
        templates = self.preprocessor.templates
        wide = [] if templates is None else templates.wide
        trained = [] if templates is None else [m for m in templates.modules if m not in wide]
        unknown = sorted(set(claims) - set(trained))
        if unknown:
            raise ValueError(f"claimed module(s) {', '.join(unknown)} are not among the "
                             "modules whose wording the preprocessor recognises (its "
                             f"templates: {', '.join(trained) or 'none'})")
        return {str(m): float(score) for m, score in claims.items()}

    @classmethod
    def from_preset(cls, preset, load_weights=True, **overrides):
        """:meth:`TaskModel.from_preset`, with the preset's :attr:`claims` (if any)."""
        model = super().from_preset(preset, load_weights=load_weights, **overrides)
        claims = claimed_scores(model.preset.metadata)
        model.claims = None if claims is None else model._checked(claims)
        if claims is not None:
            model.claim_threshold = float(model.preset.metadata["claims"]["threshold_percent"])
        return model

    def predict(self, questions: str | Sequence[str], max_length: int = DEFAULT_MAX_LENGTH,
                batch_size: int = 64) -> dict[str, np.ndarray]:
        """Greedy answers with their log-probabilities (the served model's outputs).

        Args:
            questions: One question or a list of them.
            max_length: Decoding steps (answer characters and the end symbol).
            batch_size: Questions decoded at once.

        Returns:
            The served model's outputs: ``answer`` (``str[B]``, cut at
            ``max_length - 1`` characters when it does not end sooner), ``log_prob``
            (``float32[B]``, the sum of its symbols' log-probabilities), and what the
            model did not take in: ``unknown_characters`` (``int32[B]``) and
            ``unknown_tokens`` (``str[B]``): how many characters of the question are
            outside the vocabulary (they read as ``<unk>``) and which (distinct,
            space-separated); ``question_characters`` (``int32[B]``, 0: an empty
            question, answered all the same); ``dropped_characters`` (``int32[B]``:
            those past the preprocessor's ``max_length``, not read); and ``module``
            (``str[B]``): the trained module whose wording the question has, ``""``
            when none (then the model was not trained on such questions; no ``module``
            key when the preprocessor has no templates); with :attr:`claims`,
            ``claimed`` (``bool[B]``): whether that module is one the model claims
            (False for ``""`` too).

        Raises:
            ValueError: no question, one that is not a string, or ``max_length < 1``.
        """
        questions = check_texts("questions", questions)
        if max_length < 1 or batch_size < 1:
            raise ValueError(f"max_length and batch_size must be >= 1, got {max_length} "
                             f"and {batch_size}")
        modules = None
        if self.preprocessor.templates is not None:
            modules = [self.preprocessor.module_of(q) for q in questions]
        answers = np.empty(len(questions), dtype=object)
        log_probs = np.zeros(len(questions), np.float32)
        for rows, decoder in self._decoder_rows(len(questions), modules):
            for start in range(0, len(rows), batch_size):
                batch = rows[start:start + batch_size]
                source = self.preprocessor([questions[i] for i in batch])
                ids, log_prob = decoder.greedy_decode(source, max_length=int(max_length))
                answers[batch] = self.preprocessor.decode(ops.convert_to_numpy(ids))
                log_probs[batch] = ops.convert_to_numpy(log_prob)
        out = {"answer": answers.astype(str), "log_prob": log_probs,
               **self.preprocessor.report(questions)}
        if modules is not None:
            out["module"] = np.asarray(modules, dtype=str)
            if self.claims is not None:
                out["claimed"] = np.asarray([m in self.claims for m in modules], dtype=bool)
        return out

    def _decoder_rows(self, count, modules):
        """``[(question indices, TPTransformer)]``: which decoder answers which of the
        ``count`` questions (the backbone; a routed one's decoder of each question's
        module)."""
        if not is_routed(self.backbone):
            return [(np.arange(count), self.backbone)]
        routes = self.backbone.routes(modules)
        return [(np.flatnonzero(routes == r), decoder)
                for r, decoder in enumerate(self.backbone.decoders()) if np.any(routes == r)]

    def generate(self, questions: str | Sequence[str], max_length: int = DEFAULT_MAX_LENGTH,
                 batch_size: int = 64) -> list[str]:
        """The greedy answer to each question (see :meth:`predict`)."""
        return self.predict(questions, max_length, batch_size)["answer"].tolist()

    def export(self, export_dir: str | os.PathLike, model_name: str | None = None, *,
               version: int | None = None, beam_size: int = 4) -> str:
        """Writes the answerer to ``<export_dir>/<model_name>/<version>/`` for TF Serving.

        The SavedModel (:mod:`tpr_keras.export.tp_transformer`:
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
