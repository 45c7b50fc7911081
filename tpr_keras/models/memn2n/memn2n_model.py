"""MemN2N: the bAbI model of End-To-End Memory Networks (Sukhbaatar et al., 2015)."""

import keras

from tpr_keras.models.memn2n.memn2n_network import MemN2NNetwork
from tpr_keras.models.babi.babi_inputs import babi_inputs
from tpr_keras.models.dtype_policy import FLOAT32, building_under, resolve
from tpr_keras.models.memn2n.memn2n_sizes import PAPER_SIZES
from tpr_keras.models.presets import PresetMixin


@keras.saving.register_keras_serializable(package="tpr_keras")
class MemN2N(PresetMixin, keras.Model):
    """End-To-End Memory Network question answering model (§2, §4, eq. 1-4).

    A functional wrapper around :class:`MemN2NNetwork` with the input/output
    contract of :class:`TPRRNN`: ``{"story": int32[batch, sentences, W],
    "question": int32[batch, W]}`` → logits over the whole vocabulary (the
    softmax of eq. 3 belongs to the loss). Padded sentences are all-zero rows;
    the memory keeps each story's last ``memory_size`` real sentences.

    Linear start (§4.2): build with ``linear_start=True`` and call
    ``set_linear_start(False)`` when the validation loss stops decreasing; the
    switch is a non-trainable weight read in-graph (no retracing), saved in
    checkpoints and ``.keras`` files.

    Args:
        vocabulary_size: number of word ids (0 = pad).
        max_words: word slots per sentence/question (``W``).
        **kwargs: the arguments of :class:`MemN2NNetwork` listed in
            :data:`NETWORK_ARGS`, with its defaults and meaning (``embedding_dim`` d:
            20 per task, 50 jointly; ``num_hops`` K; ``memory_size`` 50;
            ``sentence_encoding``; ``temporal_encoding``; ``weight_tying``;
            ``random_noise``; ``mask_empty_memories``; ``linear_start``; ``seed``;
            ``pad_gradient``; ``answer_time_words``), then
            ``keras.Model``'s (``name``, ``trainable``).

    Paper sizes (:meth:`from_paper_size`, :data:`PAPER_SIZES`): ``single_task`` and
    ``all_tasks`` (§4.4); untrained, their §4.2 recipes in
    :mod:`tpr_keras.training.recipes`. A trained preset's name or folder
    (:meth:`from_preset`; ``tpr_keras/presets``, ``--list_presets``) loads its sizes and
    weights.

    Example:
    >>> model = MemN2N.from_paper_size("single_task", vocabulary_size=40, max_words=8)
    >>> model({"story": np.zeros((2, 5, 8), "int32"),
    ...        "question": np.zeros((2, 8), "int32")}).shape
    TensorShape([2, 40])
    """

    #: The :class:`MemN2NNetwork` arguments the model takes and keeps in its config.
    NETWORK_ARGS = ("embedding_dim", "num_hops", "memory_size", "sentence_encoding",
                    "temporal_encoding", "weight_tying", "random_noise",
                    "mask_empty_memories", "linear_start", "seed", "pad_gradient",
                    "answer_time_words")

    def __init__(self, vocabulary_size, max_words, **kwargs):
        network_args = {k: kwargs.pop(k) for k in self.NETWORK_ARGS if k in kwargs}
        policy = resolve(kwargs.pop("dtype", None))
        # The whole network is memory hops and their softmax: float32 under any policy.
        with building_under(FLOAT32):
            network = MemN2NNetwork(vocabulary_size, name="memn2n", **network_args)
        story, question = babi_inputs(max_words)
        logits = network([story, question])
        super().__init__(
            inputs={"story": story, "question": question},
            outputs=logits,
            **kwargs,
        )
        self.dtype_policy_name = policy
        self.vocabulary_size = int(vocabulary_size)
        self.max_words = int(max_words)
        self.network = network
        for key in self.NETWORK_ARGS:  # the network's values, as attributes of the model
            if key != "linear_start":  # a property: the switch's current state
                setattr(self, key, getattr(network, key))

    paper_sizes = PAPER_SIZES

    @property
    def linear_start(self):
        """Whether the hops currently run without softmax (linear start)."""
        return self.network.linear_start_enabled()

    def set_linear_start(self, enabled):
        """Switches linear start on/off (a variable assignment; no retracing)."""
        self.network.set_linear_start(enabled)

    def weight_matrices(self):
        """The weight matrices of §4.2's per-matrix clipping, as lists of variables
        (:meth:`MemN2NNetwork.weight_matrices`)."""
        return self.network.weight_matrices()

    def attention(self, inputs):
        """Attention ``p`` of every hop, ``[batch, num_hops, memory_size]``,
        memory slots most recent first (for inspection, inference mode)."""
        _, attention = self.network(
            [inputs["story"], inputs["question"]], training=False, return_attention=True
        )
        return attention

    def get_config(self):
        network = self.network.get_config()  # linear_start: the switch's current state
        return {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": self.dtype_policy_name,
            "vocabulary_size": self.vocabulary_size,
            "max_words": self.max_words,
            **{key: network[key] for key in self.NETWORK_ARGS},
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)
