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
    ``b_{t-1} + g_t ∘ (tanh(b̃_t) − b_{t-1})``. Weights and equations live in
    ``self.cell`` (a :class:`TPRUCell`): the loop runs the cell's ``input_terms`` once
    for all steps and its ``step`` per step, the code the cell's own ``call`` runs.

    The class attribute ``loop`` picks what runs the steps: ``"ops"``
    (``keras.ops.scan`` over one time-major tensor of the step inputs, carrying the
    state; every backend, the default off TensorFlow), and on TensorFlow ``"while"``
    (its default) or ``"scan"`` (``tf.scan``), from
    :mod:`tpr_keras.backend.tensorflow.tensorflow_loops`, imported only on that backend. On
    TensorFlow Keras' ``scan`` runs one iteration at a time and its gradient cannot be
    compiled by XLA (no trip count), so the TensorFlow default is a ``tf.while_loop``
    that sets one and carries only the state, and the outputs only when
    ``return_sequences`` (0.99x Keras' LSTM time per pair, ``bench.entailment_bench``).
    ``unroll=True`` unrolls the steps in Python over the static length. All compute
    the same values and gradients, with Keras' masking semantics, also compiled
    (tested on each backend). It is not part of the config.

    Args:
        units: d, the width of the binding complex (state and output).
        num_roles: N, the number of role vectors.
        seed: seed of the fixed N(0, 1) role basis V (see :class:`TPRUCell`).
        kernel_initializer, recurrent_initializer, bias_initializer: as for
            :class:`TPRUCell`.
        return_sequences, return_state, go_backwards, **kwargs: as for
            ``keras.layers.RNN``.

    Input ``[batch, T, d']``; output ``[batch, units]``, or ``[batch, T, units]`` with
    ``return_sequences``.

    Masking:
        As ``keras.layers.RNN``: a mask ``[batch, T]`` (``mask=`` or the Keras mask of
        the input, e.g. from ``keras.layers.Embedding(mask_zero=True)``) makes a
        masked step keep the previous state, so trailing padding does not change
        the result. The output mask is the input mask with ``return_sequences`` and
        ``None`` without (the time axis is consumed).

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

    #: What runs the steps: "auto", "ops", "while" or "scan" (see the class docstring;
    #: bench/entailment_bench.py compares them).
    loop = "auto"

    def _hoisted(self, sequences):
        """Everything that does not depend on the step, for all steps at once.

        Returns ``(f_x, g_x, step)``: the cell's input side of eqs. 3-5 for every step
        (:meth:`TPRUCell.input_terms`, ``[B, T, N]`` and ``[B, T, d]``) and
        ``step(f_x_t, g_x_t, b_prev) -> b_t``, the cell's :meth:`TPRUCell.step` with
        ``U`` and ``Rᵀ`` formed once.
        """
        cell = self.cell
        unbinding, binding_t = cell.role_matrices()
        f_x, g_x = cell.input_terms(sequences, unbinding)

        def step(f_x_t, g_x_t, b_prev):
            return cell.step(f_x_t, g_x_t, b_prev, unbinding, binding_t)

        return f_x, g_x, step

    def inner_loop(self, sequences, initial_state, mask, training=False):
        if isinstance(initial_state, (list, tuple)):
            initial_state = initial_state[0]
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        f_x, g_x, step = self._hoisted(sequences)
        loop = self.loop
        if loop == "auto":
            loop = "while" if keras.backend.backend() == "tensorflow" else "ops"
        args = (step, f_x, g_x, initial_state, mask, self.go_backwards,
                self.return_sequences, self.zero_output_for_mask)
        if self.unroll or loop == "ops":
            return _ops_loop(*args, unroll=self.unroll)
        if loop not in ("while", "scan"):
            raise ValueError(f"Unknown TPRU loop {self.loop!r}: choose auto, ops, while "
                             "or scan.")
        if keras.backend.backend() != "tensorflow":
            raise ValueError(f"TPRU loop {loop!r} is TensorFlow's; Keras runs on "
                             f"{keras.backend.backend()}: use 'ops' or 'auto'.")
        from tpr_keras.backend.tensorflow import tensorflow_loops  # the backend is TensorFlow

        return tensorflow_loops.rnn_loop(*args, scan=loop == "scan")

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


def _ops_loop(step, f_x, g_x, b0, mask, go_backwards, return_sequences, zero_output_for_mask,
              unroll=False):
    """The recurrence in ``keras.ops.scan`` (any backend), or unrolled in Python over the
    static length with ``unroll``; the same contract as
    :func:`tpr_keras.backend.tensorflow.tensorflow_loops.rnn_loop`.

    The per-step inputs travel as one time-major tensor ``[f_x | g_x | mask]`` and the
    carry is the state alone: Keras' TensorFlow ``scan`` reads one ``TensorArray`` per
    input and, with several inputs and an unknown time dimension, fails on a shape check.
    """
    n, d = f_x.shape[-1], g_x.shape[-1]
    parts = [f_x, g_x]
    if mask is not None:
        parts.append(ops.cast(ops.expand_dims(mask, -1), f_x.dtype))
    elems = ops.transpose(ops.concatenate(parts, axis=-1), [1, 0, 2])
    if go_backwards:
        elems = ops.flip(elems, axis=0)

    def masked_step(b_prev, elem):
        b = step(elem[:, :n], elem[:, n:n + d], b_prev)
        if mask is None:
            return b, b
        keep = elem[:, n + d:] > 0.5
        b = ops.where(keep, b, b_prev)
        return b, (ops.where(keep, b, 0.0) if zero_output_for_mask else b)

    if unroll:
        state, outs = b0, []
        for t in range(elems.shape[0]):
            state, out = masked_step(state, elems[t])
            outs.append(out)
        outs = ops.stack(outs)
        last = outs[-1]
    else:
        (state, outs) = ops.scan(
            lambda b, elem: masked_step(b, elem) if return_sequences
            else (masked_step(b, elem)[0], None), b0, elems)
        if return_sequences:
            last = outs[-1]
        elif mask is not None and zero_output_for_mask:  # the last step's output
            last = ops.where(elems[-1, :, n + d:] > 0.5, state, 0.0)
        else:  # a masked step keeps the state: the last output is the state
            last = state
    outputs = ops.transpose(outs, [1, 0, 2]) if return_sequences else last[:, None]
    return last, outputs, [state]
