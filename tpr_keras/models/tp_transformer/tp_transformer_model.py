"""TP-Transformer (Schlag et al. 2019) and its Transformer baseline.

Decoding (greedy, beam search) is :mod:`~tpr_keras.models.tp_transformer.decoding`; the
teacher-forcing loss is :func:`tpr_keras.losses.sequence_cross_entropy` (the family's
``sequence_compute_fn``).
"""

import keras
from keras import ops

import tpr_keras.models.tp_transformer.decoding as decoding
from tpr_keras.data.mathematics import MAX_ANSWER_LENGTH, CharVocabulary
from tpr_keras.models.dtype_policy import building_under
from tpr_keras.models.presets import PresetMixin
from tpr_keras.models.tp_transformer.tp_transformer_embedding import TPTransformerEmbedding
from tpr_keras.models.tp_transformer.tp_transformer_layers import (
    TPTransformerDecoderLayer,
    TPTransformerEncoderLayer,
)
from tpr_keras.models.tp_transformer.tp_transformer_sizes import PAPER_SIZES

#: Special symbols of :class:`tpr_keras.data.mathematics.CharVocabulary` (defined there).
PAD_ID, UNK_ID, START_ID, END_ID = (
    CharVocabulary.PAD_ID, CharVocabulary.UNK_ID, CharVocabulary.START_ID, CharVocabulary.END_ID
)


@keras.saving.register_keras_serializable(package="tpr_keras")
class TPTransformer(PresetMixin, keras.Model):
    """Encoder-decoder TP-Transformer for character-level seq2seq, §2.

    Shared symbol embedding (:class:`TPTransformerEmbedding`) for source, target and
    the output logits ``ẑ E^T`` (eq. 6); ``num_encoder_layers`` encoder cells
    (TPMHA + feed-forward) and ``num_decoder_layers`` decoder cells (masked
    self-TPMHA, TPMHA over the encoder, feed-forward). ``use_role=False`` and
    ``multiplicative_embedding=False`` give the authors' Transformer baseline.

    Inputs (teacher forcing): ``{"source": int32[B, Ls], "target_in": int32[B, Lt]}``;
    ``target_in`` starts with the start symbol. Output: logits ``[B, Lt, V]`` (the
    softmax belongs to the loss). Pad positions (``pad_id``) of the source are
    masked in every attention over it; the decoder self-attention is causal.

    Decoding (in-graph, usable in a ``tf.function`` with an unknown batch size):
    :meth:`greedy_decode` (key/value cache, one ``keras.ops.while_loop``) and
    :meth:`beam_search`. Outputs exclude the start symbol, include the end symbol
    and hold ``pad_id`` after it. Their control flow is the backend's loop op, so a
    ``tf.function`` around them needs no autograph (``autograph=False``).

    Where this differs from the paper or the authors' code:

    * Layer norms: the authors' placement by default (``norm_placement``), epsilon
      1e-5 as in PyTorch. Dropout 0 by default (the authors' runs).
    * Initialisation: Xavier uniform for every attention and feed-forward kernel
      (§4.1); the authors' TP-Transformer code never calls the attention's
      ``reset_parameters`` and so used PyTorch's default there. ``E ~ N(0, 1/d)``
      scaled by ``sqrt(d)`` on input and ``W_p ~ N(0, 1/d)``, as in their code.
    * The per-head output biases of eq. 4 are one summed bias (same function).
    * The decoder self-attention masks only the future; the authors also masked
      the rows of padded target positions, which changes nothing at real positions.
    * Parameter counts with 73 symbols: TP-Transformer 49.18M (Table 1: 49.1M),
      B 43.23M (43.0M), C 30.29M (30.0M), Transformer 44.19M (44.2M). The Transformer
      matches; the TP variants are 0.23-0.26M above Table 1, exactly the size of
      ``W_p`` (d² + d) - Table 1 seems to leave it out for B and C.
    * Beam search is an addition (the paper decodes greedily).

    Args:
        vocabulary_size: number of symbols ``V`` (specials included).
        model_dim: ``d_z``. num_heads: ``H``. feed_forward_dim: ``d_f``.
        num_encoder_layers, num_decoder_layers: ``L`` of each stack.
        use_role: TP-Attention (``False``: standard multi-head attention).
        multiplicative_embedding: the ``(W_p x + 1)`` factor of the embedding.
        norm_placement: ``"code"`` (authors' code: pre-norm + output norm, default)
            or ``"paper"`` (§2's initial norm + post-norm); see
            :class:`TPTransformerEncoderLayer`.
        dropout: dropout rate everywhere (the authors used 0).
        layer_norm_epsilon: layer-norm epsilon (1e-5, PyTorch's).
        pad_id, start_id, end_id: special symbol ids.
        max_decode_length: default number of decoding steps (answers of at most 30
            characters plus the end symbol: 31).
        vocabulary: optional list of the symbols (id order); stored in the config so
            a saved ``.keras`` file carries its vocabulary.
        attention_form: ``"matmul"`` (default) or ``"einsum"``: how every attention
            computes its head projections and output map (same weights, same values;
            see :class:`~tpr_keras.layers.tp_attention.TPMultiHeadAttention`); a saved
            config without it (files from before the argument) means ``"einsum"``.

    Sizes (:meth:`from_paper_size`, :data:`PAPER_SIZES`): §4.1's and CPU ones,
    untrained (their recipes: :mod:`tpr_keras.training.recipes`). A trained preset's name
    or folder (:meth:`from_preset`; ``tpr_keras/presets``, ``--list_presets``) loads its
    sizes and weights.

    Example:
    >>> model = TPTransformer.from_paper_size("tiny", vocabulary_size=20)
    >>> model({"source": np.ones((2, 7), "int32"),
    ...        "target_in": np.full((2, 3), 2, "int32")}).shape
    TensorShape([2, 3, 20])
    >>> ids, log_prob = model.greedy_decode(np.ones((2, 7), "int32"), max_length=5)
    """

    #: ``{name: PaperSize}``: §4.1's sizes and CPU sizes
    #: (:mod:`~tpr_keras.models.tp_transformer.tp_transformer_sizes`).
    paper_sizes = PAPER_SIZES

    def __init__(
        self,
        vocabulary_size,
        model_dim=512,
        num_heads=8,
        num_encoder_layers=6,
        num_decoder_layers=6,
        feed_forward_dim=2048,
        use_role=True,
        multiplicative_embedding=True,
        norm_placement="code",
        dropout=0.0,
        layer_norm_epsilon=1e-5,
        pad_id=PAD_ID,
        start_id=START_ID,
        end_id=END_ID,
        max_decode_length=MAX_ANSWER_LENGTH + 1,
        vocabulary=None,
        attention_form="matmul",
        **kwargs,
    ):
        vocabulary = _checked_vocabulary(vocabulary, vocabulary_size)
        policy, embedding, encoder_layers, decoder_layers = _build_cells(
            kwargs.pop("dtype", None), vocabulary_size, model_dim, multiplicative_embedding,
            num_encoder_layers, num_decoder_layers, dropout,
            layer_args=dict(
                num_heads=num_heads,
                feed_forward_dim=feed_forward_dim,
                use_role=use_role,
                norm_placement=norm_placement,
                dropout=dropout,
                layer_norm_epsilon=layer_norm_epsilon,
                attention_form=attention_form,
            ),
        )
        inputs, logits = _wire(embedding, encoder_layers, decoder_layers, pad_id)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.dtype_policy_name = policy
        self.vocabulary_size = int(vocabulary_size)
        self.model_dim = int(model_dim)
        self.num_heads = int(num_heads)
        self.num_encoder_layers = int(num_encoder_layers)
        self.num_decoder_layers = int(num_decoder_layers)
        self.feed_forward_dim = int(feed_forward_dim)
        self.use_role = bool(use_role)
        self.multiplicative_embedding = bool(multiplicative_embedding)
        self.norm_placement = norm_placement
        self.dropout_rate = float(dropout)
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        self.pad_id = int(pad_id)
        self.start_id = int(start_id)
        self.end_id = int(end_id)
        self.max_decode_length = int(max_decode_length)
        self.vocabulary = None if vocabulary is None else tuple(vocabulary)
        self.attention_form = attention_form
        self.embedding = embedding
        # One attribute per layer, not a Python list: tf.train.Checkpoint (what the
        # Trainer saves) does not see layers that Keras keeps in lists.
        for layer in encoder_layers + decoder_layers:
            setattr(self, layer.name, layer)

    @property
    def encoder_layers(self):
        """The encoder cells, bottom first."""
        return [getattr(self, f"encoder_{i}") for i in range(self.num_encoder_layers)]

    @property
    def decoder_layers(self):
        """The decoder cells, bottom first."""
        return [getattr(self, f"decoder_{i}") for i in range(self.num_decoder_layers)]

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": self.dtype_policy_name,
            "vocabulary_size": self.vocabulary_size,
            "model_dim": self.model_dim,
            "num_heads": self.num_heads,
            "num_encoder_layers": self.num_encoder_layers,
            "num_decoder_layers": self.num_decoder_layers,
            "feed_forward_dim": self.feed_forward_dim,
            "use_role": self.use_role,
            "multiplicative_embedding": self.multiplicative_embedding,
            "norm_placement": self.norm_placement,
            "dropout": self.dropout_rate,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "pad_id": self.pad_id,
            "start_id": self.start_id,
            "end_id": self.end_id,
            "max_decode_length": self.max_decode_length,
            "vocabulary": None if self.vocabulary is None else list(self.vocabulary),
            "attention_form": self.attention_form,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**{"attention_form": "einsum", **config})

    # ----------------------------------------------------------- analysis
    def encode(self, source, training=False):
        """Encoder states ``[B, Ls, d]`` and the source validity mask ``[B, Ls]``."""
        source = ops.convert_to_tensor(source, "int32")
        valid = ops.not_equal(source, self.pad_id)
        x = self.embedding(source, training=training)
        for layer in self.encoder_layers:
            x = layer(x, valid, training=training)
        return x, valid

    def attention_details(self, inputs):
        """Attention weights and role vectors of every layer, for analysis.

        Args:
            inputs: ``{"source": [B, Ls], "target_in": [B, Lt]}``.

        Returns:
            ``{"logits": [B, Lt, V], "encoder": [per layer {"attention": [B, H, Ls, Ls],
            "roles": [B, H, Ls, d_k]}], "decoder": [per layer {"self_attention",
            "self_roles", "cross_attention" [B, H, Lt, Ls], "cross_roles"}]}``; roles
            are ``None`` without TP-Attention.
        """
        source = ops.convert_to_tensor(inputs["source"], "int32")
        valid = ops.not_equal(source, self.pad_id)
        x = self.embedding(source)
        encoder, decoder = [], []
        for layer in self.encoder_layers:
            x, details = layer(x, valid, return_details=True)
            encoder.append(details)
        y = self.embedding(ops.convert_to_tensor(inputs["target_in"], "int32"))
        for layer in self.decoder_layers:
            y, details = layer(y, x, valid, return_details=True)
            decoder.append(details)
        return {"logits": self.embedding(y, reverse=True), "encoder": encoder, "decoder": decoder}

    # ----------------------------------------------------------- decoding
    def _decoder_state(self, source, repeats=1):
        """Encodes once; returns per-layer encoder keys/values, mask, zero caches."""
        encoded, valid = self.encode(source)
        kv = [layer.encoder_key_value(encoded) for layer in self.decoder_layers]
        if repeats > 1:  # [B, ...] -> [B * K, ...], each row repeated K times.
            kv = [tuple(ops.repeat(t, repeats, axis=0) for t in pair) for pair in kv]
            valid = ops.repeat(valid, repeats, axis=0)
        return kv, valid

    def _zero_caches(self, rows, length):
        key_dim = self.model_dim // self.num_heads
        dtype = self.embedding.compute_dtype
        return [ops.zeros((rows, self.num_heads, length, key_dim), dtype)
                for _ in range(2 * self.num_decoder_layers)]

    def _step_log_probs(self, tokens, position, caches, kv, valid):
        """One cached decoder step: ``[R]`` tokens at ``position`` -> ``[R, V]`` log-probs."""
        x = self.embedding(tokens[:, None], start_position=position)
        new_caches = []
        for i, layer in enumerate(self.decoder_layers):
            x, key, value = layer.step(x, position, caches[2 * i], caches[2 * i + 1], kv[i], valid)
            new_caches += [key, value]
        logits = ops.cast(self.embedding(x, reverse=True)[:, 0], "float32")
        return ops.log_softmax(logits, axis=-1), new_caches

    def greedy_decode(self, source, max_length=None, use_cache=True):
        """Greedy decoding (§2.3): :func:`.decoding.greedy_decode` on this model.

        Returns:
            ``(ids int32[B, L], log_prob float32[B])``.
        """
        return decoding.greedy_decode(self, source, max_length=max_length, use_cache=use_cache)

    @staticmethod
    def length_penalty(length, alpha):
        """GNMT length penalty ``((5 + length) / 6) ** alpha`` (Wu et al. 2016)."""
        return decoding.length_penalty(length, alpha)

    def beam_search(self, source, beam_size=4, max_length=None, alpha=0.6, return_all=False):
        """Beam search: :func:`.decoding.beam_search` on this model.

        Returns:
            ``(ids int32[B, L], log_prob float32[B])`` of the best hypothesis, or
            ``([B, K, L], [B, K])`` with ``return_all``.
        """
        return decoding.beam_search(self, source, beam_size=beam_size, max_length=max_length,
                                    alpha=alpha, return_all=return_all)


def _checked_vocabulary(vocabulary, vocabulary_size):
    """``vocabulary`` as a list of strings (``None`` stays ``None``); it must hold
    ``vocabulary_size`` symbols."""
    if vocabulary is None:
        return None
    vocabulary = [str(t) for t in vocabulary]
    if len(vocabulary) != int(vocabulary_size):
        raise ValueError(
            f"vocabulary has {len(vocabulary)} symbols but vocabulary_size={vocabulary_size}."
        )
    return vocabulary


def _build_cells(dtype, vocabulary_size, model_dim, multiplicative_embedding,
                 num_encoder_layers, num_decoder_layers, dropout, layer_args):
    """The shared embedding, then the encoder cells and the decoder cells (in that order,
    named ``embedding``, ``encoder_<i>``, ``decoder_<i>``), all built under the dtype
    policy ``dtype``. Mixed precision: everything in the policy's dtype; the attention
    softmax and the layer norms compute in float32 (ops.masking.softmax,
    ScalarLayerNorm). Returns ``(policy name, embedding, encoder cells, decoder cells)``."""
    with building_under(dtype) as policy:
        embedding = TPTransformerEmbedding(
            vocabulary_size, model_dim, multiplicative_embedding, dropout, name="embedding"
        )
        encoder_layers = [
            TPTransformerEncoderLayer(**layer_args, name=f"encoder_{i}")
            for i in range(num_encoder_layers)
        ]
        decoder_layers = [
            TPTransformerDecoderLayer(**layer_args, name=f"decoder_{i}")
            for i in range(num_decoder_layers)
        ]
    return policy, embedding, encoder_layers, decoder_layers


def _wire(embedding, encoder_layers, decoder_layers, pad_id):
    """The functional graph for teacher forcing: ``({"source", "target_in"} inputs,
    logits)``; the source's ``pad_id`` positions are masked in every attention over it."""
    source = keras.Input((None,), dtype="int32", name="source")
    target_in = keras.Input((None,), dtype="int32", name="target_in")
    source_valid = ops.not_equal(source, pad_id)
    x = embedding(source)
    for layer in encoder_layers:
        x = layer(x, source_valid)
    y = embedding(target_in)
    for layer in decoder_layers:
        y = layer(y, x, source_valid)
    logits = embedding(y, reverse=True)
    return {"source": source, "target_in": target_in}, logits
