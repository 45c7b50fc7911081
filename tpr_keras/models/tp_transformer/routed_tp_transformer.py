"""Several trained TP-Transformers behind one model: each question answered by the decoder
of its module.

A TP-Transformer trained on several modules at the CPU sizes shares its width between them;
one trained on a single module may answer that module better (on this project's data the
four-module ``tiny`` model stays at 87-88 % on ``comparison__pair``, a ``tiny`` model
continued on that module alone passes 90 %). :class:`RoutedTPTransformer` holds a
*default* decoder and *expert* decoders, each answering one or more modules; every
decoder is a whole :class:`~tpr_keras.models.TPTransformer` (Schlag et al. 2019, §2:
Eqs. 1-8) with the same special ids and answer length, so one preprocessor (the
default's vocabulary) reads for all of them and their answers decode alike. An expert
trained on fewer symbols than the default reads and writes the default's ids through a
:class:`~tpr_keras.models.tp_transformer.vocabulary_mapped_decoder.VocabularyMappedDecoder`,
with the same answers. Which decoder answers a question is its *route*: ``0`` for the
default, ``1 + i`` for the ``i``-th of :attr:`~RoutedTPTransformer.expert_names`. The
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
from tpr_keras.models.tp_transformer.vocabulary_mapped_decoder import VocabularyMappedDecoder

#: Config keys that every decoder of a routed model must share (an expert's vocabulary
#: may be a subset of the default's: :class:`VocabularyMappedDecoder`).
SHARED_CONFIG = ("pad_id", "start_id", "end_id", "max_decode_length")
#: The route of a question that no expert module claims.
DEFAULT_ROUTE = 0


def _config(source):
    return source.get_config() if isinstance(source, TPTransformer) else dict(source)


def _decoder(source, name, vocabulary=None):
    """A TPTransformer named ``name`` of ``source``'s config (and weights, for a model),
    mapped to ``vocabulary``'s ids when its own differs."""
    config = _config(source)
    if vocabulary is not None and list(config["vocabulary"]) != list(vocabulary):
        return VocabularyMappedDecoder(source, vocabulary, name=name)
    decoder = TPTransformer.from_config(dict(config, name=name))
    if isinstance(source, TPTransformer):
        decoder.set_weights(source.get_weights())
    return decoder


@keras.saving.register_keras_serializable(package="tpr_keras")
class RoutedTPTransformer(PresetMixin, keras.Model):
    """A default TP-Transformer and expert TP-Transformers, each answering its modules.

    Args:
        default: The default decoder: a ``TPTransformer`` config, or a model whose
            weights are copied. Its vocabulary is the routed model's.
        experts: ``{name: config or TPTransformer}``: the expert decoders.
        routes: ``{module: expert name}``: which expert answers the questions of each
            routed module (several modules may share one). Default: each expert answers
            the module it is named after.

    Raises:
        ValueError: no expert, a route to no expert or an expert with no route, or an
            expert that differs from the default in special ids or answer length
            (:data:`SHARED_CONFIG`) or has a symbol the default lacks.

    Example:
    >>> routed = RoutedTPTransformer(four_modules, {"comparison__pair": comparison})
    >>> routed.routes(["comparison__pair", "", "arithmetic__add_or_sub"])
    array([1, 0, 0], dtype=int32)
    >>> ids, log_prob = routed.greedy_decode(source, route=routes)
    """

    def __init__(self, default: Mapping | TPTransformer,
                 experts: Mapping[str, Mapping | TPTransformer],
                 routes: Mapping[str, str] | None = None, **kwargs):
        super().__init__(**kwargs)
        if not experts:
            raise ValueError("a RoutedTPTransformer needs at least one expert module")
        routes = {m: m for m in experts} if routes is None else dict(routes)
        unknown = sorted(set(routes.values()) - set(experts))
        idle = sorted(set(experts) - set(routes.values()))
        if unknown or idle:
            raise ValueError(f"routes name no expert {unknown} or leave experts {idle} "
                             "without a module")
        self.expert_names = tuple(sorted(experts))
        self.expert_modules = tuple(sorted(routes))
        self.module_routes = {m: 1 + self.expert_names.index(routes[m])
                              for m in self.expert_modules}
        self.default_decoder = _decoder(default, "default")
        vocabulary = self.default_decoder.vocabulary
        reference = self.default_decoder.get_config()
        for name in self.expert_names:
            config = _config(experts[name])
            differing = [k for k in SHARED_CONFIG if config[k] != reference[k]]
            if differing:
                raise ValueError(f"the expert {name} differs from the default decoder in "
                                 f"{differing}: every decoder must read and write the same "
                                 "symbols")
        self.expert_decoders = []
        for name in self.expert_names:
            try:
                self.expert_decoders.append(_decoder(experts[name], f"expert_{name}",
                                                     vocabulary))
            except ValueError as error:  # vocabulary_maps: symbols the default lacks
                raise ValueError(f"the expert {name} differs from the default decoder in "
                                 f"its vocabulary: {error}") from None
        for key in ("vocabulary", "vocabulary_size", *SHARED_CONFIG):
            setattr(self, key, getattr(self.default_decoder, key))
        self.built = True

    def decoders(self) -> list[TPTransformer | VocabularyMappedDecoder]:
        """Every decoder, indexed by route: the default, then the experts in
        :attr:`expert_names` order."""
        return [self.default_decoder, *self.expert_decoders]

    def routes(self, modules: Sequence[str]) -> np.ndarray:
        """``int32[B]``: the route of each question's module (``""``: none, the default)."""
        return np.asarray([self.module_routes.get(m, DEFAULT_ROUTE) for m in modules],
                          np.int32)

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
        def config(decoder):
            if isinstance(decoder, VocabularyMappedDecoder):
                decoder = decoder.decoder
            return decoder.get_config() | {"name": "tp_transformer"}

        routes = {m: self.expert_names[r - 1] for m, r in self.module_routes.items()}
        return {"name": self.name, "trainable": self.trainable,
                "default": config(self.default_decoder),
                "experts": {n: config(d) for n, d in zip(self.expert_names,
                                                         self.expert_decoders)},
                **({} if all(m == n for m, n in routes.items()) else {"routes": routes})}

    @classmethod
    def from_config(cls, config):
        return cls(**config)
