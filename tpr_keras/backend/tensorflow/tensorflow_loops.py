"""TensorFlow's own loops for the layers' recurrences, used only on the TensorFlow backend.

Keras' TensorFlow ``keras.ops.scan`` builds its ``tf.while_loop`` without
``maximum_iterations``: its gradient then cannot be compiled by XLA ("XLA compilation
requires a fixed tensor list size", tests/layers/test_tpru.py), and it runs one
iteration at a time. TPRU's loop on TensorFlow is therefore this module's, which sets the
trip count and carries only what the layer returns. Other backends run the layer's
``keras.ops.scan``.
"""

import tensorflow as tf


def rnn_loop(step, f_x, g_x, b0, mask, go_backwards, return_sequences, zero_output_for_mask,
             scan=False):
    """A recurrence ``b_t = step(f_x_t, g_x_t, b_{t-1})`` as one ``tf.while_loop`` (or
    ``tf.scan``) over time-major inputs: what :class:`tpr_keras.layers.TPRU` runs on
    TensorFlow.

    Same contract as the loop of ``keras.layers.RNN``: returns ``(last_output, outputs,
    [state])``, ``outputs`` in processing order (reversed when ``go_backwards``) and
    ``[B, 1, d]`` when not ``return_sequences``; a masked step keeps the state and
    outputs it (or zeros when ``zero_output_for_mask``).
    """
    elems = [tf.transpose(f_x, [1, 0, 2]), tf.transpose(g_x, [1, 0, 2])]
    if mask is not None:
        elems.append(tf.expand_dims(tf.transpose(tf.cast(mask, "bool")), -1))
    if go_backwards:
        elems = [tf.reverse(e, [0]) for e in elems]

    def masked_step(b_prev, elem):
        b = step(elem[0], elem[1], b_prev)
        if mask is None:
            return b, b
        b = tf.where(elem[2], b, b_prev)
        return b, (tf.where(elem[2], b, tf.zeros_like(b)) if zero_output_for_mask else b)

    if scan:
        def scan_fn(carry, elem):
            return masked_step(carry[0], elem)

        b_seq, out_seq = tf.scan(scan_fn, tuple(elems), initializer=(b0, b0))
        state, last = b_seq[-1], out_seq[-1]
        outputs = tf.transpose(out_seq, [1, 0, 2]) if return_sequences else last[:, None]
        return last, outputs, [state]

    steps = tf.shape(elems[0])[0]
    tensor_arrays = [tf.TensorArray(e.dtype, size=steps).unstack(e) for e in elems]
    # Outputs are collected only when returned: an unwritten TensorArray in the loop
    # would break the gradient under XLA.
    out_ta = [tf.TensorArray(b0.dtype, size=steps)] if return_sequences else []

    def body(t, b_prev, last, *out_ta):
        b, out = masked_step(b_prev, [ta.read(t) for ta in tensor_arrays])
        return (t + 1, b, out) + tuple(ta.write(t, out) for ta in out_ta)

    _, state, last, *out_ta = tf.while_loop(
        lambda t, *_: t < steps, body, (tf.constant(0), b0, tf.zeros_like(b0), *out_ta),
        maximum_iterations=steps)
    outputs = tf.transpose(out_ta[0].stack(), [1, 0, 2]) if return_sequences else last[:, None]
    return last, outputs, [state]
