"""The TPR-RNN update module: the order-3 TPR memory of a story, as rank-1 factors."""

import keras
from keras import ops

from tpr_keras.layers.mlp import TanhMLP
from tpr_keras.ops import factored

IMPLEMENTATIONS = ("parallel", "recurrent")


@keras.saving.register_keras_serializable(package="tpr_keras")
class TPRUpdate(keras.layers.Layer):
    """Builds the order-3 TPR memory ``F`` of a story, eq. 4 and 6-14, as rank-1 factors.

    Schlag & Schmidhuber (2018) §4, update module. For every sentence vector
    ``s_t`` five tanh MLPs give two entities and three relations (eq. 7-8);
    then ``F_t = F_{t-1} + W_t + M_t + B_t`` (eq. 4, 6) with the write
    (eq. 9-10), move (eq. 11-12) and backlink (eq. 13-14) operations, all of
    whose reads use ``F_{t-1}``. ``F_0 = 0``.

    ``F`` is returned in factored form: every operation of every step adds
    one rank-1 term ``source (x) relation (x) new_target``, so the layer
    returns ``(sources, relations, targets)``, each ``[batch, T·K, ·]`` (K
    enabled operations), and ``F_T = Σ_j sources_j (x) relations_j (x)
    targets_j``. :func:`tpr_keras.ops.factored.read` reads it (eq. 17-19)
    without building the ``entity x relation x entity`` tensor, and
    :func:`tpr_keras.ops.factored.to_dense` builds it where needed.

    Two implementations give the same factors (tested to 1e-4 relative, values
    and gradients):

    * ``"parallel"``: every new target is linear in the targets of earlier
      steps, so one triangular solve over all ``T·K`` slots replaces the
      recurrence (:func:`tpr_keras.ops.factored.parallel_targets`);
    * ``"recurrent"``: the explicit recurrence over the dense ``F``
      (:func:`tpr_keras.ops.factored.recurrent_targets`), the reference.

    Padded sentences (``mask`` false) leave ``F`` unchanged, as the reference
    code's sequence lengths do. ``operations`` selects the memory operations
    for the Table 3 ablations. The MLPs run on all sentences at once.

    Args:
        entity_dim: width of ``V_Entity``.
        relation_dim: width of ``V_Relation``.
        hidden_dim: hidden width of the five MLPs (``V_Hidden``).
        operations: one of ``"write"``, ``"write+move"``, ``"write+backlink"``,
            ``"all"``.
        implementation: ``"parallel"`` or ``"recurrent"``.

    Inputs: sentence vectors ``[batch, sentences, symbol]`` and optionally a
    boolean ``mask`` ``[batch, sentences]``. Output: the factors
    ``(sources [B, T·K, entity], relations [B, T·K, relation],
    targets [B, T·K, entity])``.

    Masking:
        Consumes the sentence mask (``mask=`` or the Keras mask of the sentence
        vectors, e.g. from :class:`SentenceEncoder`): a masked sentence adds
        nothing to ``F``. ``F`` has no sentence axis, so the outputs carry no mask.

    Example:
    >>> update = TPRUpdate(entity_dim=15, relation_dim=10, hidden_dim=30)
    >>> sources, relations, targets = update(np.zeros((2, 7, 30), "float32"))
    >>> targets.shape  # 7 sentences x 3 operations
    TensorShape([2, 21, 15])
    """

    def __init__(
        self,
        entity_dim,
        relation_dim,
        hidden_dim,
        operations="all",
        implementation="parallel",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if operations not in factored.OPERATIONS:
            raise ValueError(
                f"operations must be one of {tuple(factored.OPERATIONS)}; "
                f"got {operations!r}."
            )
        if implementation not in IMPLEMENTATIONS:
            raise ValueError(
                f"implementation must be one of {IMPLEMENTATIONS}; got {implementation!r}."
            )
        self.entity_dim = int(entity_dim)
        self.relation_dim = int(relation_dim)
        self.hidden_dim = int(hidden_dim)
        self.operations = operations
        self.implementation = implementation
        self._slots = factored.OPERATIONS[operations]
        # The sentence mask is consumed here; F has no time axis to mask.
        self.supports_masking = True

    def build(self, input_shape):
        def mlp(name, width):
            layer = TanhMLP(self.hidden_dim, width, name=name, dtype=self.dtype_policy)
            layer.build(input_shape)
            return layer

        self.e1_mlp = mlp("e1", self.entity_dim)
        self.e2_mlp = mlp("e2", self.entity_dim)
        self.r1_mlp = mlp("r1", self.relation_dim)
        # The ablations without move/backlink have no r2/r3 networks at all.
        self.r2_mlp = mlp("r2", self.relation_dim) if "move" in self._slots else None
        self.r3_mlp = (
            mlp("r3", self.relation_dim) if "backlink" in self._slots else None
        )
        self.built = True

    def extract(self, sentences):
        """Eq. 7-8: entities and relations of every sentence.

        Returns:
            dict with ``e1, e2`` ``[..., entity]`` and ``r1`` (and ``r2``,
            ``r3`` where enabled) ``[..., relation]``.
        """
        parts = {
            "e1": self.e1_mlp(sentences),
            "e2": self.e2_mlp(sentences),
            "r1": self.r1_mlp(sentences),
        }
        if self.r2_mlp is not None:
            parts["r2"] = self.r2_mlp(sentences)
        if self.r3_mlp is not None:
            parts["r3"] = self.r3_mlp(sentences)
        return parts

    def call(self, sentences, mask=None):
        parts = self.extract(sentences)
        slots = factored.operation_slots(self.operations, **parts)
        if mask is None:
            keep = ops.ones(ops.shape(sentences)[:2], dtype=sentences.dtype)
        else:
            keep = ops.cast(mask, sentences.dtype)
        if self.implementation == "parallel":
            return factored.parallel_targets(slots, keep)
        return factored.recurrent_targets(slots, keep)

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        batch, steps = input_shape[0], input_shape[1]
        slots = None if steps is None else steps * len(self._slots)
        return (
            (batch, slots, self.entity_dim),
            (batch, slots, self.relation_dim),
            (batch, slots, self.entity_dim),
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "entity_dim": self.entity_dim,
                "relation_dim": self.relation_dim,
                "hidden_dim": self.hidden_dim,
                "operations": self.operations,
                "implementation": self.implementation,
            }
        )
        return config
