"""TPR-RNN: the full bAbI model of Schlag & Schmidhuber (2018)."""

import keras
from keras import ops

from tpr_keras.layers.sentence_encoder import SentenceEncoder
from tpr_keras.layers.tpr_inference import TPRInference
from tpr_keras.layers.tpr_update import TPRUpdate
from tpr_keras.models.babi.babi_inputs import babi_inputs
from tpr_keras.models.dtype_policy import FLOAT32, building_under
from tpr_keras.models.presets import PresetMixin
from tpr_keras.models.tpr_rnn.tpr_rnn_sizes import PAPER_SIZES


#: Initialisations of the word embeddings, the position vectors (eq. 5) and the layer
#: norms (eq. 17-19): Appendix A's, and the authors' published code's.
INITIALIZATIONS = {
    "appendix": {"embedding_limit": 0.01, "scaled_positions": False,
                 "layer_norm_epsilon": 1e-6},
    "code": {"embedding_limit": 0.1, "scaled_positions": True, "layer_norm_epsilon": 1e-7},
}


@keras.saving.register_keras_serializable(package="tpr_keras")
class TPRRNN(PresetMixin, keras.Model):
    """TPR-RNN question answering model for bAbI (§4, eq. 4-20).

    Input module (eq. 5, :class:`SentenceEncoder`, shared by story and
    question), update module (eq. 6-14, :class:`TPRUpdate`) and inference
    module (eq. 15-20, :class:`TPRInference`). Returns logits over the whole
    vocabulary; the softmax of eq. 20 belongs to the loss.

    Padded sentences (all word ids 0) are skipped by the recurrence.

    Args:
        vocabulary_size: number of word ids (0 = pad).
        max_words: word slots per sentence/question (number of position vectors).
        symbol_dim: width of ``V_Symbol``; default the vocabulary size.
        hidden_dim: hidden width of the MLPs; default ``symbol_dim``.
        entity_dim: width of ``V_Entity``.
        relation_dim: width of ``V_Relation``.
        operations: memory operations, ``"write"``, ``"write+move"``,
            ``"write+backlink"`` or ``"all"`` (Table 3 ablations).
        inference_steps: unbinding steps of the inference module.
        implementation: how the update module computes the memory,
            ``"parallel"`` (one triangular solve over the story) or
            ``"recurrent"`` (the dense recurrence); same outputs, see
            :class:`TPRUpdate`.
        initialization: ``"appendix"`` (Appendix A: word embeddings U(±0.01),
            position vectors a variable at ``1/k``, layer-norm ε 1e-6) or
            ``"code"`` (the authors' published code: U(±0.1), positions a variable
            at ones divided by ``k`` in the graph, ε 1e-7). Same weights and
            shapes; see :data:`INITIALIZATIONS`.
        pad_row: :class:`SentenceEncoder`'s: ``"zero"`` (pad words read as zeros) or
            ``"trained"`` (the pad word is a trained embedding row in every sentence
            and question sum, as in the authors' code).

    Inputs: ``{"story": int32[batch, sentences, max_words],
    "question": int32[batch, max_words]}``. Output: ``[batch, vocabulary_size]``.

    Paper sizes (:meth:`from_paper_size`, :data:`PAPER_SIZES`): ``single_task``,
    ``all_tasks`` (Appendix A), ``all_tasks_code`` and ``all_tasks_authors`` (the
    authors' code); untrained, their recipes in :mod:`tpr_keras.training.recipes`.
    Trained presets (sizes and weights, ``tpr_keras/presets``):
    ``TPRRNN.from_preset("tpr_rnn_babi_all_tasks")`` takes no sizes.

    Example:
    >>> model = TPRRNN.from_paper_size("single_task", vocabulary_size=40, max_words=8)
    >>> model({"story": np.zeros((2, 5, 8), "int32"),
    ...        "question": np.zeros((2, 8), "int32")}).shape
    TensorShape([2, 40])
    """

    def __init__(
        self,
        vocabulary_size,
        max_words,
        symbol_dim=None,
        hidden_dim=None,
        entity_dim=15,
        relation_dim=10,
        operations="all",
        inference_steps=3,
        implementation="parallel",
        initialization="appendix",
        pad_row="zero",
        **kwargs,
    ):
        if initialization not in INITIALIZATIONS:
            raise ValueError(f"initialization must be one of {sorted(INITIALIZATIONS)}; "
                             f"got {initialization!r}.")
        init = INITIALIZATIONS[initialization]
        symbol_dim = int(symbol_dim or vocabulary_size)
        hidden_dim = int(hidden_dim or symbol_dim)
        with building_under(kwargs.pop("dtype", None)) as policy:
            encoder = SentenceEncoder(
                vocabulary_size, symbol_dim, name="encoder",
                embeddings_initializer=keras.initializers.RandomUniform(
                    -init["embedding_limit"], init["embedding_limit"]),
                scaled_positions=init["scaled_positions"], pad_row=pad_row)
        # The memory and everything that writes or reads it: float32 under any policy.
        with building_under(FLOAT32):
            update = TPRUpdate(entity_dim, relation_dim, hidden_dim, operations,
                               implementation=implementation, name="update")
            inference = TPRInference(vocabulary_size, entity_dim, relation_dim, hidden_dim,
                                     inference_steps, init["layer_norm_epsilon"],
                                     name="inference")

        story, question = babi_inputs(max_words)
        sentence_mask = ops.any(ops.not_equal(story, 0), axis=-1)
        memory = update(encoder(story), mask=sentence_mask)
        logits = inference([encoder(question), memory])
        super().__init__(
            inputs={"story": story, "question": question},
            outputs=logits,
            **kwargs,
        )
        self.dtype_policy_name = policy
        self.vocabulary_size = int(vocabulary_size)
        self.max_words = int(max_words)
        self.symbol_dim = symbol_dim
        self.hidden_dim = hidden_dim
        self.entity_dim = int(entity_dim)
        self.relation_dim = int(relation_dim)
        self.memory_operations = operations
        self.inference_steps = int(inference_steps)
        self.implementation = implementation
        self.initialization = initialization
        self.pad_row = pad_row
        self.sentence_encoder = encoder
        self.update_module = update
        self.inference_module = inference

    paper_sizes = PAPER_SIZES

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": self.dtype_policy_name,
            "vocabulary_size": self.vocabulary_size,
            "max_words": self.max_words,
            "symbol_dim": self.symbol_dim,
            "hidden_dim": self.hidden_dim,
            "entity_dim": self.entity_dim,
            "relation_dim": self.relation_dim,
            "operations": self.memory_operations,
            "inference_steps": self.inference_steps,
            "implementation": self.implementation,
            "initialization": self.initialization,
            "pad_row": self.pad_row,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)
