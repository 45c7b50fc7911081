"""Several trained TP-Transformers behind one model: each question answered by the decoder
of its module.

A TP-Transformer trained on several modules at the CPU sizes shares its width between them;
one trained on a single module may answer that module better (on this project's data the
four-module ``tiny`` model stays at 87-88 % on ``comparison__pair``, a ``tiny`` model
continued on that module alone passes 90 %). :class:`RoutedTPTransformer` holds a
*default* decoder and one *expert* decoder per module it routes; every decoder is a whole
:class:`~tpr_keras.models.TPTransformer` (Schlag et al. 2019, §2: Eqs. 1-8) with the same
vocabulary and answer length, so one preprocessor reads for all of them and their
answers decode alike. Which decoder answers a question is its *route*: ``0`` for the
default, ``1 + i`` for the ``i``-th of :attr:`~RoutedTPTransformer.expert_modules`. The
route comes from the module a question's wording belongs to (the preset's templates,
:mod:`tpr_keras.data.mathematics.templates`): ``MathAnswerer``, the SavedModel exporter
and the evaluation compute it from the question text, as the served ``module`` output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import keras
import numpy as np
from keras import ops

from tpr_keras.models.presets import PresetMixin
from tpr_keras.models.tp_transformer.tp_transformer_model import TPTransformer

#: Config keys that every decoder of a routed model must share.
SHARED_CONFIG = ("vocabulary_size", "vocabulary", "pad_id", "start_id", "end_id",
                 "max_decode_length")
#: The route of a question that no expert module claims.
DEFAULT_ROUTE = 0


def _decoder(source, name):
    """A TPTransformer named ``name`` of ``source``'s config (and weights, for a model)."""
    config = source.get_config() if isinstance(source, TPTransformer) else source
    decoder = TPTransformer.from_config(dict(config, name=name))
    if isinstance(source, TPTransformer):
        decoder.set_weights(source.get_weights())
    return decoder


@keras.saving.register_keras_serializable(package="tpr_keras")
class RoutedTPTransformer(PresetMixin, keras.Model):
    """A default TP-Transformer and one expert TP-Transformer per routed module.

    Args:
        default: The default decoder: a ``TPTransformer`` config, or a model whose
            weights are copied.
        experts: ``{module: config or TPTransformer}``: the decoder that answers the
            questions of ``module``.

    Raises:
        ValueError: no expert, or decoders that differ in vocabulary, special ids or
            answer length (:data:`SHARED_CONFIG`).

    Example:
    >>> routed = RoutedTPTransformer(four_modules, {"comparison__pair": comparison})
    >>> routed.routes(["comparison__pair", "", "arithmetic__add_or_sub"])
    array([1, 0, 0], dtype=int32)
    >>> ids, log_prob = routed.greedy_decode(source, route=routes)
    """

    def __init__(self, default: Mapping | TPTransformer,
                 experts: Mapping[str, Mapping | TPTransformer], **kwargs):
        super().__init__(**kwargs)
        if not experts:
            raise ValueError("a RoutedTPTransformer needs at least one expert module")
        self.expert_modules = tuple(sorted(experts))
        self.default_decoder = _decoder(default, "default")
        self.expert_decoders = [_decoder(experts[m], f"expert_{m}")
                                for m in self.expert_modules]
        reference = self.default_decoder.get_config()
        for module, decoder in zip(self.expert_modules, self.expert_decoders):
            config = decoder.get_config()
            differing = [k for k in SHARED_CONFIG if config[k] != reference[k]]
            if differing:
                raise ValueError(f"the expert of {module} differs from the default decoder "
                                 f"in {differing}: every decoder must read and write the "
                                 "same symbols")
        for key in SHARED_CONFIG:
            setattr(self, key, reference[key])
        self.built = True

    def decoders(self) -> list[TPTransformer]:
        """Every decoder, indexed by route: the default, then the experts in
        :attr:`expert_modules` order."""
        return [self.default_decoder, *self.expert_decoders]

    def routes(self, modules: Sequence[str]) -> np.ndarray:
        """``int32[B]``: the route of each question's module (``""``: none, the default)."""
        index = {m: i + 1 for i, m in enumerate(self.expert_modules)}
        return np.asarray([index.get(m, DEFAULT_ROUTE) for m in modules], np.int32)

    def _select(self, outputs, route):
        """Row ``b`` of ``outputs[route[b]]`` for each output of the decoders."""
        route = ops.convert_to_tensor(route, "int32")
        chosen = outputs[0]
        for r, output in enumerate(outputs[1:], start=1):
            chosen = [ops.where(ops.reshape(ops.equal(route, r), (-1,) + (1,) * (ops.ndim(c) - 1)),
                                o, c) for c, o in zip(chosen, output)]
        return chosen

    def call(self, inputs, training=False):
        """Teacher-forced logits ``[B, Lt, V]`` of each row's decoder; ``inputs``: the
        ``TPTransformer``'s ``{"source", "target_in"}`` and ``"route"`` (``int32[B]``;
        absent: the default decoder)."""
        route = inputs.get("route")
        features = {"source": inputs["source"], "target_in": inputs["target_in"]}
        if route is None:
            return self.default_decoder(features, training=training)
        outputs = [[d(features, training=training)] for d in self.decoders()]
        return self._select(outputs, route)[0]

    def greedy_decode(self, source, max_length=None, route=None):
        """Greedy decoding (``TPTransformer.greedy_decode``) by each row's decoder.

        Every decoder runs on the whole batch and each row keeps its route's answer, so
        this traces once for any routes (``MathAnswerer`` decodes each route's rows
        apart instead). ``route=None``: the default decoder alone.

        Returns:
            ``(ids int32[B, L], log_prob float32[B])``.
        """
        if route is None:
            return self.default_decoder.greedy_decode(source, max_length=max_length)
        outputs = [d.greedy_decode(source, max_length=max_length) for d in self.decoders()]
        return tuple(self._select(outputs, route))

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "default": self.default_decoder.get_config() | {"name": "tp_transformer"},
                "experts": {m: d.get_config() | {"name": "tp_transformer"}
                            for m, d in zip(self.expert_modules, self.expert_decoders)}}

    @classmethod
    def from_config(cls, config):
        return cls(**config)
