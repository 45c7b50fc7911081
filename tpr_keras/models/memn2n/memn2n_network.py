"""MemN2N's K-hop network (Sukhbaatar et al., 2015, §2 and §4): eq. 1-4 with weight tying.

:class:`MemN2NNetwork` — K hops with adjacent or layer-wise weight tying,
the last-``memory_size``-sentences memory, temporal encoding, random noise,
linear start and the answer layer (eq. 3).
"""

import math

import keras
from keras import ops

from tpr_keras.models.memn2n.memn2n_embedding import (
    SENTENCE_ENCODINGS,
    MemN2NEmbedding,
    as_padding,
    gaussian_initializer,
)
from tpr_keras.models.memn2n.memn2n_hop import MemN2NHop

WEIGHT_TYING = ("adjacent", "layer_wise")


@keras.saving.register_keras_serializable(package="tpr_keras")
class MemN2NNetwork(keras.layers.Layer):
    """End-To-End Memory Network for question answering: K hops, eq. 1-4.

    Sukhbaatar et al. (2015), §2 and §4. The memory holds the last ``memory_size`` real
    sentences of each story (§4.2: 50), chosen in-graph per example; all-zero sentence
    rows are padding wherever they are. Memory slot ``t`` holds the ``(t+1)``-th most
    recent sentence, so the temporal index (§4.1, "x_1 is the last sentence of the
    story") of slot ``t`` is ``t + 1``, counted from the end of the *real* story.

    Weight tying (§2.2): ``"adjacent"`` — ``A^{k+1} = C^k``, ``B = A^1``,
    ``Wᵀ = C^K`` (K + 1 tables, temporal rows tied the same way);
    ``"layer_wise"`` — one ``A``, one ``C`` (and ``T_A``, ``T_C``) for every
    hop, a separate ``B`` and ``W``, and ``u^{k+1} = H u^k + o^k``.

    Random noise (§4.1, RN): at training time only, the time indices of an example's
    ``n`` memories are those they would have after inserting ``nblank ~ U{0, ...,
    ceil(random_noise · n)}`` empty memories at random places (clipped to
    ``memory_size``), as in the authors' code: only the time indices move.

    Linear start (§4.2, LS): while the non-trainable weight ``linear_start`` is 1 the
    hops have no softmax (``p_i = uᵀ m_i``). It is read in-graph, so
    ``set_linear_start(False)`` switches the softmax back on inside an already traced
    ``tf.function``; it is saved with the weights, ``get_config`` gives its state.

    Sub-layers: ``embedding_0 .. embedding_K`` and ``hop_1 .. hop_K`` (adjacent) or
    ``question_embedding``, ``memory_input_embedding``, ``memory_output_embedding``,
    ``hop`` and the weight ``output_matrix`` (layer-wise); the properties ``tables``,
    ``question_table``, ``input_tables``, ``output_tables``, ``hops``: the per-hop view.

    Args:
        vocabulary_size: number of word ids (0 = pad); also the answer width.
        embedding_dim: ``d`` (§4.4: 20 per task, 50 jointly).
        num_hops: ``K`` (default 3, §4.1).
        memory_size: sentences kept in memory (§4.2: 50); also the rows of the
            temporal matrices.
        sentence_encoding: ``"position"`` (paper's PE), ``"position_code"``
            (authors' coded PE) or ``"bag_of_words"``.
        temporal_encoding: add ``T_A(i)``/``T_C(i)`` to the memories.
        weight_tying: ``"adjacent"`` or ``"layer_wise"``.
        random_noise: maximum fraction of empty memories inserted at training
            time (§4.1: 10 %); 0 disables it. Needs ``temporal_encoding``.
        mask_empty_memories: mask empty slots out of the attention softmax;
            False reproduces the authors' code (empty slots get logit 0; their
            memory has ``min(50, longest story)`` slots, so pass that as
            ``memory_size`` to match it exactly).
        linear_start: initial value of the linear-start switch.
        pad_gradient: every table looks the pad word up like a word, so its
            (zero) row gets gradient that per-matrix clipping counts, as the
            authors' nil word does (:class:`MemN2NEmbedding`); False: it gets none.
        embeddings_initializer: initializer of every weight; default N(0, 0.1).
        seed: seed of the random-noise generator.
        answer_time_words: the answer also ranges over the time words (logits
            ``T_C^K u`` at ``vocabulary_size + t - 1``), as in the authors' code, where
            ``W = C^K`` spans words and time words. Adjacent tying with temporal
            encoding only; default False.

    Inputs: ``[story int[batch, sentences, W], question int[batch, W]]``.
    Output: logits ``[batch, vocabulary_size (+ memory_size: answer_time_words)]``;
    with ``return_attention=True`` also ``p`` of every hop,
    ``[batch, num_hops, memory_size]`` in slot order (most recent first).

    Masking:
        All-zero sentence rows are empty memories with or without a mask (the
        memory padding mask is made from the ids). A Keras mask on the story,
        ``[batch, sentences]`` or ``[batch, sentences, W]``, or on the question,
        ``[batch, W]`` (``mask=[story_mask, question_mask]``, filled in by Keras),
        makes the masked sentences or words padding, bit for bit as id 0. The
        logits carry no mask.

    Example:
    >>> network = MemN2NNetwork(vocabulary_size=30, embedding_dim=20)
    >>> tuple(network([np.ones((2, 7, 6), "int32"), np.ones((2, 6), "int32")]).shape)
    (2, 30)
    """

    def __init__(
        self,
        vocabulary_size,
        embedding_dim=20,
        num_hops=3,
        memory_size=50,
        sentence_encoding="position",
        temporal_encoding=True,
        weight_tying="adjacent",
        random_noise=0.1,
        mask_empty_memories=True,
        linear_start=False,
        embeddings_initializer=None,
        seed=None,
        pad_gradient=False,
        answer_time_words=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if sentence_encoding not in SENTENCE_ENCODINGS:
            raise ValueError(f"sentence_encoding must be one of {SENTENCE_ENCODINGS}; "
                             f"got {sentence_encoding!r}.")
        if weight_tying not in WEIGHT_TYING:
            raise ValueError(f"weight_tying must be one of {WEIGHT_TYING}; "
                             f"got {weight_tying!r}.")
        if int(num_hops) < 1 or int(memory_size) < 1:
            raise ValueError(f"num_hops and memory_size must be >= 1; "
                             f"got {num_hops}, {memory_size}.")
        if answer_time_words and not (weight_tying == "adjacent" and temporal_encoding):
            raise ValueError("answer_time_words needs adjacent tying and temporal_encoding.")
        if not 0.0 <= float(random_noise) <= 1.0:
            raise ValueError(f"random_noise must be in [0, 1]; got {random_noise}.")
        self.vocabulary_size = int(vocabulary_size)
        self.embedding_dim = int(embedding_dim)
        self.num_hops = int(num_hops)
        self.memory_size = int(memory_size)
        self.sentence_encoding = sentence_encoding
        self.temporal_encoding = bool(temporal_encoding)
        self.weight_tying = weight_tying
        # Noise only moves time indices; without temporal encoding it is a no-op.
        self.random_noise = float(random_noise)
        self.mask_empty_memories = bool(mask_empty_memories)
        self.initial_linear_start = bool(linear_start)
        self.pad_gradient = bool(pad_gradient)
        self.answer_time_words = bool(answer_time_words)
        self.embeddings_initializer = keras.initializers.get(
            embeddings_initializer or gaussian_initializer()
        )
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed, name="noise_seed")
        self.supports_masking = True  # masks consumed in call(); the logits have none

    # ------------------------------------------------------------------ build
    def _table(self, name, temporal=True):
        table = MemN2NEmbedding(
            self.vocabulary_size,
            self.embedding_dim,
            sentence_encoding=self.sentence_encoding,
            memory_size=self.memory_size if (temporal and self.temporal_encoding) else None,
            time_word_slot=self.temporal_encoding,
            embeddings_initializer=self.embeddings_initializer,
            pad_gradient=self.pad_gradient,
            name=name, dtype=self.dtype_policy
        )
        table.build()
        return table

    def build(self, input_shape=None):
        # Sub-layers are direct attributes, never lists: tf.train.Checkpoint
        # (the Trainer's checkpoints and best weights) does not follow Keras'
        # tracked lists, and would silently skip their variables.
        dim, hops = self.embedding_dim, self.num_hops
        query_shape = [(None, dim), (None, None, dim), (None, None, dim)]
        self.output_matrix = None
        if self.weight_tying == "adjacent":
            # embedding_0 = B = A^1, embedding_k = C^k = A^{k+1}, embedding_K = C^K = Wᵀ.
            for k in range(hops + 1):
                setattr(self, f"embedding_{k}", self._table(f"embedding_{k}"))
            for k in range(1, hops + 1):
                hop = MemN2NHop(
                    use_projection=False,
                    mask_empty_memories=self.mask_empty_memories,
                    name=f"hop_{k}",
                )
                hop.build(query_shape)
                setattr(self, f"hop_{k}", hop)
        else:
            self.question_embedding = self._table("question_embedding", temporal=False)
            self.memory_input_embedding = self._table("memory_input_embedding")
            self.memory_output_embedding = self._table("memory_output_embedding")
            self.hop = MemN2NHop(
                use_projection=True,
                mask_empty_memories=self.mask_empty_memories,
                kernel_initializer=self.embeddings_initializer,
                name="hop",
            )
            self.hop.build(query_shape)
            self.output_matrix = self.add_weight(
                name="output_matrix",
                shape=(self.vocabulary_size, dim),
                initializer=self.embeddings_initializer,
            )
        self.linear_start = self.add_weight(
            name="linear_start",
            shape=(),
            initializer=keras.initializers.Constant(float(self.initial_linear_start)),
            trainable=False,
        )
        self.built = True

    # --------------------------------------------------------- weight tying
    @property
    def tables(self):
        """The distinct embedding tables: ``[B=A^1, C^1=A^2, ..., C^K=Wᵀ]``
        (adjacent) or ``[B, A, C]`` (layer-wise)."""
        if self.weight_tying == "adjacent":
            return [getattr(self, f"embedding_{k}") for k in range(self.num_hops + 1)]
        return [self.question_embedding, self.memory_input_embedding, self.memory_output_embedding]

    @property
    def question_table(self):
        """``B``."""
        return self.tables[0]

    @property
    def input_tables(self):
        """``A^1 .. A^K``."""
        if self.weight_tying == "adjacent":
            return self.tables[:-1]
        return [self.memory_input_embedding] * self.num_hops

    @property
    def output_tables(self):
        """``C^1 .. C^K``."""
        if self.weight_tying == "adjacent":
            return self.tables[1:]
        return [self.memory_output_embedding] * self.num_hops

    @property
    def hops(self):
        """The hop layer of each of the K hops (one shared layer if layer-wise)."""
        if self.weight_tying == "adjacent":
            return [getattr(self, f"hop_{k}") for k in range(1, self.num_hops + 1)]
        return [self.hop] * self.num_hops

    def weight_matrices(self):
        """The paper's weight matrices as lists of variables: each table's word rows
        with its temporal rows (one lookup table in the authors' code, where the time
        index is a word), ``H`` and ``W`` (layer-wise). Per-matrix gradient clipping
        (§4.2) clips each list as one matrix."""
        matrices = [[t.embeddings] + ([t.temporal] if t.temporal is not None else [])
                    for t in self.tables]
        if self.weight_tying == "layer_wise":
            matrices += [[self.hop.projection], [self.output_matrix]]
        return matrices

    # ----------------------------------------------------------------- memory
    def memory_slots(self, story):
        """Gathers the last ``memory_size`` real sentences of each story.

        Args:
            story: ``int[batch, sentences, W]``; all-zero rows are padding.

        Returns:
            ``(ids int32[batch, memory_size, W], mask bool[batch, memory_size],
            count int32[batch])``: slot ``t`` holds the ``(t+1)``-th most recent
            real sentence; ``count`` real sentences are kept (``mask`` is
            ``t < count``).
        """
        story = ops.cast(story, "int32")
        # One extra padding row so that stories with 0 sentence rows work (a pad, not a
        # concatenation of story[:, :1]: that slice of an empty story has 0 rows too).
        story = ops.pad(story, [[0, 0], [0, 1], [0, 0]])
        real = ops.any(ops.not_equal(story, 0), axis=-1)  # [B, S]
        real_i = ops.cast(real, "int32")
        recency = ops.flip(ops.cumsum(ops.flip(real_i, axis=1), axis=1), axis=1)
        slots = ops.arange(1, self.memory_size + 1, dtype="int32")
        select = ops.logical_and(
            real[:, None, :], ops.equal(recency[:, None, :], slots[None, :, None])
        )  # [B, M, S]: slot t <- the real sentence with recency t + 1
        source = ops.argmax(ops.cast(select, "int32"), axis=-1)  # [B, M]
        mask = ops.any(select, axis=-1)
        source = ops.broadcast_to(
            source[:, :, None], (ops.shape(story)[0], self.memory_size, ops.shape(story)[2])
        )
        ids = ops.take_along_axis(story, ops.cast(source, "int32"), axis=1)
        ids = ids * ops.cast(mask, "int32")[:, :, None]
        count = ops.minimum(ops.sum(real_i, axis=1), self.memory_size)
        return ids, mask, count

    def time_indices(self, memory_mask, count, training=False):
        """Temporal indices of the memory slots (1 = most recent, 0 = empty).

        Without noise slot ``t`` has index ``t + 1``. With ``training`` and
        ``random_noise > 0`` the indices of an example's ``n = count``
        memories are a sorted random ``n``-subset of ``1 .. n + nblank``
        (``nblank ~ U{0 .. ceil(random_noise n)}``), clipped to
        ``memory_size``: the authors' way of inserting empty memories.
        """
        size = self.memory_size
        slots = ops.arange(1, size + 1, dtype="int32")
        if not (training and self.random_noise > 0):
            return ops.where(memory_mask, slots[None, :], 0)
        batch = ops.shape(count)[0]
        count_f = ops.cast(count, "float32")
        cap = ops.cast(ops.ceil(count_f * self.random_noise - 1e-4), "int32")
        draw = keras.random.uniform((batch,), seed=self.seed_generator)
        blanks = ops.minimum(
            ops.cast(ops.floor(draw * ops.cast(cap + 1, "float32")), "int32"), cap
        )
        length = size + math.ceil(size * self.random_noise - 1e-4)
        positions = ops.arange(length, dtype="int32")
        keys = keras.random.uniform((batch, length), seed=self.seed_generator)
        usable = positions[None, :] < (count + blanks)[:, None]
        keys = ops.where(usable, keys, 2.0)
        rank = ops.argsort(ops.argsort(keys, axis=-1), axis=-1)
        chosen = rank < count[:, None]  # a uniform count-subset of the usable positions
        order = ops.cumsum(ops.cast(chosen, "int32"), axis=-1)
        match = ops.logical_and(
            chosen[:, None, :], ops.equal(order[:, None, :], slots[None, :, None])
        )  # [B, M, L]: slot t <- the (t+1)-th chosen position
        index = ops.cast(ops.argmax(ops.cast(match, "int32"), axis=-1), "int32") + 1
        index = ops.minimum(index, size)
        return ops.where(memory_mask, index, 0)

    def linear_start_enabled(self):
        """Current state of the linear-start switch (the constructor value
        before ``build`` or where the variable cannot be read eagerly)."""
        if not self.built:
            return self.initial_linear_start
        try:
            return bool(float(ops.convert_to_numpy(self.linear_start)) > 0.5)
        except Exception:  # symbolic context (inside a traced function)
            return self.initial_linear_start

    def set_linear_start(self, enabled):
        """Turns linear start on or off; traced functions see it without retracing."""
        self.linear_start.assign(1.0 if enabled else 0.0)

    # ------------------------------------------------------------------- call
    def call(self, inputs, training=None, return_attention=False, mask=None):
        story, question = inputs
        if mask is not None:  # masked sentences and words are padding
            story, question = (as_padding(x, m) for x, m in zip(inputs, mask))
        ids, mask, count = self.memory_slots(story)
        time = self.time_indices(mask, count, training) if self.temporal_encoding else None
        linear = ops.greater(self.linear_start, 0.5)
        embedded = {}  # adjacent tying uses each table twice: embed once

        def embed(table):
            key = id(table)
            if key not in embedded:
                embedded[key] = table(ids, time_index=time)
            return embedded[key]

        u = self.question_table(question)
        attention = []
        for hop, table_in, table_out in zip(self.hops, self.input_tables, self.output_tables):
            u, p = hop([u, embed(table_in), embed(table_out)], memory_mask=mask, linear=linear)
            attention.append(p)
        if self.output_matrix is None:
            logits = self.tables[-1].project(u)
            if self.answer_time_words:
                times = ops.matmul(u, ops.transpose(self.tables[-1].temporal))
                logits = ops.concatenate([logits, times], axis=-1)
        else:
            logits = ops.matmul(u, ops.transpose(self.output_matrix))
        if return_attention:
            return logits, ops.stack(attention, axis=1)
        return logits

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0][0],
                self.vocabulary_size + self.memory_size * self.answer_time_words)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "embedding_dim": self.embedding_dim,
                "num_hops": self.num_hops,
                "memory_size": self.memory_size,
                "sentence_encoding": self.sentence_encoding,
                "temporal_encoding": self.temporal_encoding,
                "weight_tying": self.weight_tying,
                "random_noise": self.random_noise,
                "mask_empty_memories": self.mask_empty_memories,
                "linear_start": self.linear_start_enabled(),
                "embeddings_initializer": keras.initializers.serialize(
                    self.embeddings_initializer
                ),
                "seed": self.seed,
                "pad_gradient": self.pad_gradient,
                "answer_time_words": self.answer_time_words,
            }
        )
        return config
