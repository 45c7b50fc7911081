"""The TPRU recurrent cell (Tang, Smolensky & de Sa, 2018)."""

import numpy as np

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="tpr_keras")
class TPRUCell(keras.layers.Layer):
    """Tensor Product Representation recurrent unit (TPRU) cell.

    Implements Tang, Smolensky & de Sa, "Learning Distributed
    Representations of Symbolic Structure Using Binding and Unbinding
    Operations" (2018), §3. The state is a binding complex
    `b_t ∈ R^d` (d = `units`); per step, with input `x_t ∈ R^{d'}`:

    - eq. 3: gate `g_t = σ(W_b b_{t-1} + W_x x_t)`;
    - eq. 4: unbinding `f_b = Uᵀ b_{t-1}`, `f_x = Uᵀ W x_t`, with
      `U = W_u V` (§3.3);
    - eq. 5: `f̃_b = ReLU(f_b + b_b)`, `f̃_x = ReLU(f_x + b_x)` with
      scalar biases `b_b`, `b_x`;
    - eq. 6: `f_t = (f̃_b + f̃_x)² / Σ_m (f̃_b + f̃_x)²_m`, a distribution
      over the N roles;
    - eq. 7: binding `b̃_t = R f_t` with `R = W_r V` (§3.3);
    - eq. 2: `b_t = g_t ∘ tanh(b̃_t) + (1 − g_t) ∘ b_{t-1}`.

    `V ∈ R^{d×N}` is a fixed N(0, 1) random basis: a non-trainable weight
    drawn from a seeded initializer in `build()`, so it is stored in (and
    restored exactly from) `.keras` files and checkpoints, and it is
    never updated by training.

    Learnable parameters, exactly as in §3.3 (five matrices, two scalars,
    no bias vectors): `W_u, W_r, W_b ∈ R^{d×d}`, `W_x, W ∈ R^{d×d'}` and
    `b_b, b_x ∈ R`, i.e. `3·d² + 2·d·d' + 2` trainable parameters; `V`
    adds `d·N` non-trainable ones.

    Notes on choices the paper leaves open or where this code deviates:

    - The paper does not give initialisations. Following the authors'
      public code, `b_b` and `b_x` start at 1; kernels are
      Glorot-uniform and `W_b` is orthogonal.
    - Eq. 6 divides by `Σ_m (·)²`, which is 0 if every role is silenced
      by the ReLUs. This implementation divides by
      `max(Σ_m (·)², ε)` (`ε = keras.config.epsilon()`), so in that
      degenerate case `f_t = 0` and `b̃_t = 0` instead of NaN. Otherwise
      `f_t` sums to exactly 1 (up to float rounding).
    - The authors' public code computes eqs. 2–7 as written; no other deviation.

    Weights are stored in Keras' `inputs @ kernel` orientation:
    `input_gate_kernel` = `W_xᵀ` (d'×d), `input_kernel` = `Wᵀ` (d'×d),
    `recurrent_gate_kernel` = `W_bᵀ` (d×d); `unbinding_kernel` = `W_u` and
    `binding_kernel` = `W_r` (d×d) are stored as in the paper, so that
    `U = unbinding_kernel @ role_basis`, `R = binding_kernel @ role_basis`.

    Args:
        units: int, d, the dimension of the binding complex (state and
            output size).
        num_roles: int, N, the number of role vectors (columns of V).
        seed: int or None, seed of the N(0, 1) initializer of V. `None`
            draws a seed at construction time (from NumPy's global RNG, so
            `keras.utils.set_random_seed` makes it reproducible); the
            drawn seed is stored in the config.
        kernel_initializer: initializer for `W_x`, `W`, `W_u`, `W_r`.
        recurrent_initializer: initializer for `W_b`.
        bias_initializer: initializer for the scalars `b_b`, `b_x`.
        **kwargs: base `keras.layers.Layer` arguments (name, dtype, ...).

    Masking:
        A cell runs one step and sees no sequence; the RNN that runs it
        (``keras.layers.RNN`` or :class:`TPRU`) consumes the sequence mask.

    Example:

    >>> cell = TPRUCell(16, num_roles=8, seed=0)
    >>> rnn = keras.layers.RNN(cell, return_sequences=True)
    >>> rnn(np.zeros((2, 5, 4), "float32")).shape
    TensorShape([2, 5, 16])
    >>> f = cell.role_distribution(np.ones((2, 4), "float32"),
    ...                            np.zeros((2, 16), "float32"))
    >>> f.shape  # (batch, num_roles), rows sum to 1
    TensorShape([2, 8])
    """

    def __init__(
        self,
        units,
        num_roles=32,
        seed=None,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="ones",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if int(units) <= 0 or int(num_roles) <= 0:
            raise ValueError(
                f"`units` and `num_roles` must be positive; got units={units}, "
                f"num_roles={num_roles}."
            )
        self.units = int(units)
        self.num_roles = int(num_roles)
        if seed is None:
            seed = int(np.random.randint(0, 2**31 - 1))
        self.seed = int(seed)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.recurrent_initializer = keras.initializers.get(recurrent_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.state_size = self.units
        self.output_size = self.units

    def build(self, input_shape):
        input_dim = input_shape[-1]
        d = self.units
        # Eq. 3: W_x (stored transposed) and W_b (stored transposed).
        self.input_gate_kernel = self.add_weight(
            shape=(input_dim, d), initializer=self.kernel_initializer,
            name="input_gate_kernel",
        )
        self.recurrent_gate_kernel = self.add_weight(
            shape=(d, d), initializer=self.recurrent_initializer,
            name="recurrent_gate_kernel",
        )
        # Eq. 4: W, mapping x_t into the binding space (stored transposed).
        self.input_kernel = self.add_weight(
            shape=(input_dim, d), initializer=self.kernel_initializer,
            name="input_kernel",
        )
        # §3.3: U = W_u V and R = W_r V.
        self.unbinding_kernel = self.add_weight(
            shape=(d, d), initializer=self.kernel_initializer,
            name="unbinding_kernel",
        )
        self.binding_kernel = self.add_weight(
            shape=(d, d), initializer=self.kernel_initializer,
            name="binding_kernel",
        )
        # Eq. 5: scalar biases b_b, b_x.
        self.binding_bias = self.add_weight(
            shape=(), initializer=self.bias_initializer, name="binding_bias",
        )
        self.input_bias = self.add_weight(
            shape=(), initializer=self.bias_initializer, name="input_bias",
        )
        # §3.3: the fixed N(0, 1) basis V (d x N), saved but never trained.
        self.role_basis = self.add_weight(
            shape=(d, self.num_roles),
            initializer=keras.initializers.RandomNormal(
                mean=0.0, stddev=1.0, seed=self.seed
            ),
            trainable=False,
            name="role_basis",
        )

    @staticmethod
    def _state(states):
        return states[0] if isinstance(states, (list, tuple)) else states

    def role_matrices(self):
        """``(U, Rᵀ)``: the unbinding ``U = W_u V`` (d x N) and the transposed binding
        ``R = W_r V`` (N x d) of §3.3, which no step changes."""
        unbinding = ops.matmul(self.unbinding_kernel, self.role_basis)
        binding_t = ops.transpose(ops.matmul(self.binding_kernel, self.role_basis))
        return unbinding, binding_t

    def input_terms(self, inputs, unbinding):
        """The input side of eqs. 3-5 for any leading shape (one step, or all steps at once).

        Returns ``(f̃_x, x_gate)``: ``f̃_x = ReLU(Uᵀ W x + b_x)`` (eqs. 4-5, ``[..., N]``)
        and ``W_x x`` (eq. 3, ``[..., d]``), from one matmul of ``x``.
        """
        n = self.num_roles
        kernel = ops.concatenate(
            [ops.matmul(self.input_kernel, unbinding), self.input_gate_kernel], axis=1)
        projected = ops.matmul(inputs, kernel)
        return ops.relu(projected[..., :n] + self.input_bias), projected[..., n:]

    def roles_from_terms(self, f_x, b_prev, unbinding):
        """Eqs. 4-6 given the input side ``f̃_x``: the role distribution ``f_t``."""
        f_b = ops.relu(ops.matmul(b_prev, unbinding) + self.binding_bias)  # eqs. 4-5
        energy = ops.square(f_b + f_x)  # eq. 6
        total = ops.sum(energy, axis=-1, keepdims=True)
        return energy / ops.maximum(total, keras.config.epsilon())

    def step(self, f_x, x_gate, b_prev, unbinding, binding_t):
        """One step, eqs. 2-7, given the input side (:meth:`input_terms`): ``b_t``.

        Eq. 2 is computed as ``b_{t-1} + g_t ∘ (tanh(b̃_t) − b_{t-1})``.
        """
        f = self.roles_from_terms(f_x, b_prev, unbinding)
        b_tilde = ops.matmul(f, binding_t)  # eq. 7, (R f)ᵀ
        gate = ops.sigmoid(ops.matmul(b_prev, self.recurrent_gate_kernel) + x_gate)  # eq. 3
        return b_prev + gate * (ops.tanh(b_tilde) - b_prev)  # eq. 2

    def role_distribution(self, inputs, states):
        """One step's role distribution `f_t` (eqs. 4–6).

        Args:
            inputs: `x_t`, shape `(batch, input_dim)`.
            states: `b_{t-1}`, shape `(batch, units)`, or a one-element
                list holding it.

        Returns:
            `f_t`, shape `(batch, num_roles)`; each row sums to 1 (or is all
            zeros in the degenerate case documented in the class docstring).
        """
        if not self.built:
            self.build(ops.shape(inputs))
        unbinding, _ = self.role_matrices()
        f_x, _ = self.input_terms(inputs, unbinding)
        return self.roles_from_terms(f_x, self._state(states), unbinding)

    def call(self, inputs, states, training=None):
        unbinding, binding_t = self.role_matrices()
        f_x, x_gate = self.input_terms(inputs, unbinding)
        b = self.step(f_x, x_gate, self._state(states), unbinding, binding_t)
        return b, [b]

    def get_initial_state(self, batch_size=None):
        return [ops.zeros((batch_size, self.units), dtype=self.compute_dtype)]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "num_roles": self.num_roles,
                "seed": self.seed,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "recurrent_initializer": keras.initializers.serialize(
                    self.recurrent_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
            }
        )
        return config
