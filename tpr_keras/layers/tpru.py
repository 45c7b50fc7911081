"""The TPRU recurrent layer: a sequence of TPRUCell steps with the per-step work minimised."""

import keras
from keras import ops

from tpr_keras.layers.tpru_cell import TPRUCell


@keras.saving.register_keras_serializable(package="tpr_keras")
class TPRU(keras.layers.RNN):
    """Tensor Product Representation recurrent unit over a sequence.

    Tang, Smolensky & de Sa (2018), §3, eq. 2-7: the same function as
    ``keras.layers.RNN(TPRUCell(...))`` (tested equal, with masks, in both
    directions and inside ``Bidirectional``), computed with as little work per
    time step as the recurrence allows:

    - ``U = W_u V`` and ``R = W_r V`` (§3.3) do not depend on the step and are
      formed once per call, not once per step;
    - every input-side term, ``ReLU(Uᵀ W x_t + b_x)`` (eqs. 4-5) and ``W_x x_t``
      (eq. 3), is computed for all steps before the loop (one matmul).

    A step is then three small matmuls (``Uᵀ b_{t-1}`` and ``W_b b_{t-1}``, eqs. 3-4,
    and the binding ``R f_t``, eq. 7) and elementwise work; eq. 2 is computed as
    ``b_{t-1} + g_t ∘ (tanh(b̃_t) − b_{t-1})``. Weights live in ``self.cell`` (a
    :class:`TPRUCell`), so the parameters and their names are the cell's.

    The steps run in the loop ``keras.layers.RNN`` itself runs (a
    ``tf.while_loop`` over TensorArrays on TensorFlow, ``lax.scan`` on JAX,
    a Python loop with ``unroll=True``), driving a weightless cell that does only
    the per-step work above; the mask travels with the inputs and is applied in
    that cell, with Keras' masking semantics. Values and gradients equal
    ``keras.layers.RNN(TPRUCell)``'s, also under ``jit_compile=True``
    (tested on TensorFlow). ``keras.ops.scan`` is not used: Keras' TensorFlow
    scan sets no ``maximum_iterations``, so its gradient does not compile with
    XLA.

    Args:
        units: d, the width of the binding complex (state and output).
        num_roles: N, the number of role vectors.
        seed: seed of the fixed N(0, 1) role basis V (see :class:`TPRUCell`).
        kernel_initializer, recurrent_initializer, bias_initializer: as for
            :class:`TPRUCell`.
        return_sequences, return_state, go_backwards, **kwargs: as for
            ``keras.layers.RNN``.

    Example:
    >>> layer = TPRU(16, num_roles=8, seed=0, return_sequences=True)
    >>> tuple(layer(np.zeros((2, 5, 4), "float32")).shape)
    (2, 5, 16)
    """

    def __init__(
        self,
        units,
        num_roles=32,
        seed=None,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="ones",
        return_sequences=False,
        return_state=False,
        go_backwards=False,
        **kwargs,
    ):
        cell = TPRUCell(
            units,
            num_roles=num_roles,
            seed=seed,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer,
            dtype=kwargs.get("dtype"),
            name="tpru_cell",
        )
        super().__init__(
            cell,
            return_sequences=return_sequences,
            return_state=return_state,
            go_backwards=go_backwards,
            **kwargs,
        )

    #: What runs the steps; "keras" (``keras.layers.RNN``'s loop) is the only one
    #: left since the layer is written in ``keras.ops`` (see the class docstring).
    loop = "keras"

    def _hoisted(self, sequences):
        """Everything that does not depend on the step, for all steps at once.

        Returns ``(f_x, g_x, step)``: ``f_x = ReLU(Uᵀ W x_t + b_x)`` (eqs. 4-5,
        input side, ``[B, T, N]``), ``g_x = W_x x_t`` (eq. 3, input side,
        ``[B, T, d]``) and ``step(f_x_t, g_x_t, b_prev) -> b_t``.
        """
        cell = self.cell
        n = cell.num_roles
        unbinding = ops.matmul(cell.unbinding_kernel, cell.role_basis)  # U (d x N)
        binding_t = ops.transpose(ops.matmul(cell.binding_kernel, cell.role_basis))  # Rᵀ
        recurrent_gate_kernel = ops.convert_to_tensor(cell.recurrent_gate_kernel)
        binding_bias = ops.convert_to_tensor(cell.binding_bias)
        # Eq. 4 (x side) and eq. 3 (x side) for every step in one matmul.
        input_kernel = ops.concatenate(
            [ops.matmul(cell.input_kernel, unbinding), cell.input_gate_kernel], axis=1
        )
        projected = ops.matmul(sequences, input_kernel)
        f_x = ops.relu(projected[:, :, :n] + cell.input_bias)  # eq. 5, x side
        g_x = projected[:, :, n:]
        epsilon = keras.config.epsilon()

        def step(f_x_t, g_x_t, b_prev):
            f_b = ops.relu(ops.matmul(b_prev, unbinding) + binding_bias)  # eqs. 4-5
            energy = ops.square(f_b + f_x_t)  # eq. 6
            f = energy / ops.maximum(ops.sum(energy, axis=-1, keepdims=True), epsilon)
            b_tilde = ops.matmul(f, binding_t)  # eq. 7
            gate = ops.sigmoid(ops.matmul(b_prev, recurrent_gate_kernel) + g_x_t)  # eq. 3
            return b_prev + gate * (ops.tanh(b_tilde) - b_prev)  # eq. 2

        return f_x, g_x, step

    def inner_loop(self, sequences, initial_state, mask, training=False):
        if isinstance(initial_state, (list, tuple)):
            initial_state = initial_state[0]
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        if self.loop not in LOOPS:
            raise ValueError(f"Unknown TPRU loop {self.loop!r}; expected one of {LOOPS}.")
        f_x, g_x, step = self._hoisted(sequences)
        parts = [f_x, g_x]
        if mask is not None:
            parts.append(ops.expand_dims(ops.cast(mask, f_x.dtype), -1))
        cell = _HoistedStep(step, self.units, self.cell.num_roles, mask is not None,
                            self.zero_output_for_mask, dtype=self.dtype_policy,
                            name="tpru_step")
        loop = keras.layers.RNN(cell, return_sequences=self.return_sequences,
                                go_backwards=self.go_backwards, unroll=self.unroll)
        # The mask is part of the inputs, so the loop itself runs unmasked.
        return loop.inner_loop(ops.concatenate(parts, axis=-1), [initial_state], None,
                               training=training)

    @property
    def units(self):
        return self.cell.units

    def get_config(self):
        config = super().get_config()
        del config["cell"]
        cell_config = self.cell.get_config()
        for key in ("units", "num_roles", "seed", "kernel_initializer",
                    "recurrent_initializer", "bias_initializer"):
            config[key] = cell_config[key]
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)


#: The values of :attr:`TPRU.loop`.
LOOPS = ("keras",)


class _HoistedStep(keras.layers.Layer):
    """The per-step work of :class:`TPRU` as a weightless RNN cell (eqs. 2-7, recurrent side).

    Its input at step t is ``[f_x_t; g_x_t]`` (and a last 0/1 column when
    ``masked``), the input-side terms :meth:`TPRU._hoisted` computed for every
    step; ``step(f_x_t, g_x_t, b_prev)`` does the rest. A masked step keeps the
    state and outputs it (or zeros when ``zero_output_for_mask``), as
    ``keras.layers.RNN`` does with a mask.

    Args:
        step: ``(f_x_t, g_x_t, b_prev) -> b_t`` from :meth:`TPRU._hoisted`.
        units: d, the state width.
        num_roles: N, the width of ``f_x_t``.
        masked: whether the inputs end with the mask column.
        zero_output_for_mask: output zeros (not the kept state) at masked steps.
    """

    def __init__(self, step, units, num_roles, masked, zero_output_for_mask, **kwargs):
        super().__init__(**kwargs)
        self.step = step
        self.state_size = self.output_size = units
        self.num_roles = num_roles
        self.masked = masked
        self.zero_output_for_mask = zero_output_for_mask

    def call(self, inputs, states):
        n, d = self.num_roles, self.state_size
        b_prev = states[0] if isinstance(states, (list, tuple)) else states
        b = self.step(inputs[:, :n], inputs[:, n:n + d], b_prev)
        if not self.masked:
            return b, [b]
        keep = inputs[:, n + d:] > 0
        b = ops.where(keep, b, b_prev)
        return (ops.where(keep, b, ops.zeros_like(b)) if self.zero_output_for_mask else b), [b]
