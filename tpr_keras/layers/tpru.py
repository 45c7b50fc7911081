"""The TPRU recurrent layer: a sequence of TPRUCell steps with the per-step work minimised."""

import keras
from keras import ops
from keras.src import backend  # backend.rnn: the loop keras.layers.RNN itself runs

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
    - every input-side product (``Uᵀ W x_t`` of eq. 4 and ``W_x x_t`` of eq. 3)
      is computed for all steps in one matmul before the loop;
    - the two products of the state (``Uᵀ b_{t-1}``, eq. 4, and
      ``W_b b_{t-1}``, eq. 3) are one matmul with the kernels side by side.

    A step is then two small matmuls (state and binding ``R f_t``, eq. 7) and
    elementwise work. Weights live in ``self.cell`` (a :class:`TPRUCell`), so
    the parameters and their names are the cell's.

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
    >>> layer(np.zeros((2, 5, 4), "float32")).shape
    TensorShape([2, 5, 16])
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

    def inner_loop(self, sequences, initial_state, mask, training=False):
        cell = self.cell
        n = cell.num_roles
        unbinding = ops.matmul(cell.unbinding_kernel, cell.role_basis)  # U (d x N)
        binding_t = ops.transpose(ops.matmul(cell.binding_kernel, cell.role_basis))  # Rᵀ
        # Eq. 4 (x side) and eq. 3 (x side) for every step at once: [B, T, N + d].
        input_kernel = ops.concatenate(
            [ops.matmul(cell.input_kernel, unbinding), cell.input_gate_kernel], axis=1
        )
        projected = ops.matmul(sequences, input_kernel)
        # Eq. 4 (state side) and eq. 3 (state side) as one product: [d, N + d].
        state_kernel = ops.concatenate([unbinding, cell.recurrent_gate_kernel], axis=1)

        def step(inputs, states):
            b_prev = states[0]
            from_state = ops.matmul(b_prev, state_kernel)
            f_b = ops.relu(from_state[:, :n] + cell.binding_bias)  # eq. 5
            f_x = ops.relu(inputs[:, :n] + cell.input_bias)
            energy = ops.square(f_b + f_x)  # eq. 6
            total = ops.sum(energy, axis=-1, keepdims=True)
            f = energy / ops.maximum(total, keras.config.epsilon())
            b_tilde = ops.matmul(f, binding_t)  # eq. 7
            gate = ops.sigmoid(from_state[:, n:] + inputs[:, n:])  # eq. 3
            b = gate * ops.tanh(b_tilde) + (1.0 - gate) * b_prev  # eq. 2
            return b, [b]

        if not isinstance(initial_state, (list, tuple)):
            initial_state = [initial_state]
        return backend.rnn(
            step,
            projected,
            initial_state,
            go_backwards=self.go_backwards,
            mask=mask,
            unroll=self.unroll,
            input_length=sequences.shape[1],
            zero_output_for_mask=self.zero_output_for_mask,
            return_all_outputs=self.return_sequences,
        )

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
