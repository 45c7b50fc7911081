"""A TP-Transformer trained on fewer symbols, reading and writing a larger vocabulary's ids.

A routed model (:class:`~tpr_keras.models.tp_transformer.routed_tp_transformer.RoutedTPTransformer`)
reads every question with one preprocessor, its default decoder's vocabulary. A decoder
trained on fewer modules knows fewer characters (the four-module ``math_focus`` model 60,
the twenty-module model 68, the same special symbols at the same ids). Rather than
retraining it, :class:`VocabularyMappedDecoder` maps the ids: a question's ids in the larger
vocabulary become the decoder's own (a character it never saw becomes its ``<unk>``, as its
own preprocessor would read it), and its answer's ids become the larger vocabulary's. The
decoder's arithmetic is untouched (Schlag et al. 2019, §2: Eqs. 1-8), so its greedy and beam
answers and their log-probabilities are exactly those of the decoder alone; teacher-forced
logits of symbols it lacks are :data:`~tpr_keras.models.tp_transformer.decoding.MASK_VALUE`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import keras
import numpy as np
from keras import ops

from tpr_keras.models.tp_transformer.decoding import MASK_VALUE
from tpr_keras.models.tp_transformer.tp_transformer_model import UNK_ID, TPTransformer

#: Config keys a mapped decoder must share with the vocabulary it reads and writes.
SPECIAL_CONFIG = ("pad_id", "start_id", "end_id")


def vocabulary_maps(inner: Sequence[str], outer: Sequence[str], specials: Sequence[int]):
    """``(to_inner int32[len(outer)], to_outer int32[len(inner)])``: each outer symbol's
    id in ``inner`` (``UNK_ID`` when absent) and each inner symbol's id in ``outer``.

    Raises:
        ValueError: an inner symbol ``outer`` lacks, or a special id whose symbol differs.
    """
    inner, outer = list(inner), list(outer)
    missing = [t for t in inner if t not in outer]
    if missing:
        raise ValueError(f"the decoder's vocabulary has {len(missing)} symbol(s) the routed "
                         f"model's lacks ({' '.join(repr(t) for t in missing[:10])}): it "
                         "must read and write a subset of the default decoder's symbols")
    for special in (*specials, UNK_ID):
        if inner[special] != outer[special]:
            raise ValueError(f"id {special} is {inner[special]!r} in the decoder's vocabulary "
                             f"and {outer[special]!r} in the routed model's")
    index = {t: i for i, t in enumerate(inner)}
    to_inner = np.asarray([index.get(t, UNK_ID) for t in outer], np.int32)
    to_outer = np.asarray([outer.index(t) for t in inner], np.int32)
    return to_inner, to_outer


@keras.saving.register_keras_serializable(package="tpr_keras")
class VocabularyMappedDecoder(keras.Model):
    """A trained TP-Transformer that reads and writes the ids of a larger vocabulary.

    Args:
        decoder: A ``TPTransformer`` config, or a model whose weights are copied; its
            ``vocabulary`` must be a subset of ``vocabulary`` with the same special ids.
        vocabulary: The symbols whose ids this model reads and writes.

    Raises:
        ValueError: a decoder symbol ``vocabulary`` lacks, or differing special ids.

    Example:
    >>> mapped = VocabularyMappedDecoder(four_modules, twenty_modules.vocabulary)
    >>> ids, log_prob = mapped.greedy_decode(source_in_twenty_module_ids)
    """

    def __init__(self, decoder: Mapping | TPTransformer, vocabulary: Sequence[str], **kwargs):
        super().__init__(**kwargs)
        config = decoder.get_config() if isinstance(decoder, TPTransformer) else decoder
        self.decoder = TPTransformer.from_config(dict(config, name="tp_transformer"))
        if isinstance(decoder, TPTransformer):
            self.decoder.set_weights(decoder.get_weights())
        self.vocabulary = tuple(str(t) for t in vocabulary)
        self.vocabulary_size = len(self.vocabulary)
        self.to_inner, self.to_outer = vocabulary_maps(
            self.decoder.vocabulary, self.vocabulary,
            [getattr(self.decoder, k) for k in SPECIAL_CONFIG])
        #: Whether each symbol of this vocabulary is one the decoder knows.
        self.known = np.isin(np.arange(self.vocabulary_size), self.to_outer)
        for key in (*SPECIAL_CONFIG, "max_decode_length"):
            setattr(self, key, getattr(self.decoder, key))
        self.built = True

    def _inner(self, ids):
        return ops.take(self.to_inner, ops.convert_to_tensor(ids, "int32"), axis=0)

    def _outer(self, ids):
        return ops.take(self.to_outer, ids, axis=0)

    def call(self, inputs, training=False):
        """Teacher-forced logits ``[B, Lt, V]`` over this vocabulary; a symbol the
        decoder lacks gets ``MASK_VALUE``."""
        logits = self.decoder({"source": self._inner(inputs["source"]),
                               "target_in": self._inner(inputs["target_in"])},
                              training=training)
        spread = ops.take(logits, self.to_inner, axis=-1)
        return ops.where(self.known, spread, ops.cast(MASK_VALUE, spread.dtype))

    def greedy_decode(self, source, max_length=None, use_cache=True):
        """The decoder's greedy answer (``TPTransformer.greedy_decode``) in these ids."""
        ids, log_prob = self.decoder.greedy_decode(self._inner(source), max_length=max_length,
                                                   use_cache=use_cache)
        return self._outer(ids), log_prob

    def beam_search(self, source, beam_size=4, max_length=None, alpha=0.6, return_all=False):
        """The decoder's beam search (``TPTransformer.beam_search``) in these ids."""
        ids, log_prob = self.decoder.beam_search(self._inner(source), beam_size=beam_size,
                                                 max_length=max_length, alpha=alpha,
                                                 return_all=return_all)
        return self._outer(ids), log_prob

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "decoder": self.decoder.get_config(), "vocabulary": list(self.vocabulary)}
