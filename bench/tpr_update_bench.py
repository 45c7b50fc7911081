"""The TPR-RNN recurrence step: 3-operand einsums vs batched matmuls, side by side.

    python -m bench.tpr_update_bench [--batch 128 --sentences 70]

Runs the same order-3 update (read K slots from F_{t-1}, write a rank-K sum; eq. 9-14) over a
``tf.foldl`` in both formulations, checks that they agree, and prints forward+backward
milliseconds per batch for each, alternating twice. ``TPRUpdate(implementation="recurrent")``
(``tpr_keras.ops.factored.recurrent_targets``) uses the matmul form.
"""

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def main():
    from serving.command_flags import Command

    parser = Command("python -m bench.tpr_update_bench", __doc__.split("\n\n")[0])
    parser.integer("batch", 128)
    parser.integer("sentences", 70)
    parser.integer("entity", 15)
    parser.integer("relation", 10)
    parser.integer("repeats", 5)
    args = parser.parse()
    B, T, E, R, K = args.batch, args.sentences, args.entity, args.relation, 3
    rng = np.random.default_rng(0)
    src = tf.constant(rng.normal(size=(T, B, K, E)).astype("float32") * 0.3)
    rel = tf.constant(rng.normal(size=(T, B, K, R)).astype("float32") * 0.3)
    keep = tf.ones((T, B))

    def step_einsum(F, inp):
        s, r, a, b, k = inp
        read = tf.einsum("bsrt,bks,bkr->bkt", F, s, r)
        new = tf.stack([b, read[:, 0], a], 1) - read
        return F + k[:, None, None, None] * tf.einsum("bks,bkr,bkt->bsrt", s, r, new)

    def step_matmul(F, inp):
        s, r, a, b, k = inp
        by_relation = tf.reshape(tf.matmul(s, tf.reshape(F, [-1, E, R * E])), [-1, K, R, E])
        read = tf.reduce_sum(by_relation * r[..., None], axis=2)
        new = tf.stack([b, read[:, 0], a], 1) - read
        bound = tf.reshape(r[..., None] * new[:, :, None, :], [-1, K, R * E])
        delta = tf.reshape(tf.matmul(s, bound, transpose_a=True), [-1, E, R, E])
        return F + k[:, None, None, None] * delta

    def make(step):
        @tf.function
        def run(src, rel):
            with tf.GradientTape() as tape:
                tape.watch([src, rel])
                F = tf.foldl(step, (src, rel, src[:, :, 0], src[:, :, 2], keep),
                             initializer=tf.zeros([B, E, R, E]))
                loss = tf.reduce_sum(F**2)
            return loss, tape.gradient(loss, [src, rel])
        return run

    forms = {"einsum": make(step_einsum), "matmul": make(step_matmul)}
    a, b = forms["einsum"](src, rel), forms["matmul"](src, rel)
    print(f"max |grad difference| {float(tf.reduce_max(tf.abs(a[1][0] - b[1][0]))):.2e}")
    for _ in range(2):
        for name, run in forms.items():
            run(src, rel)
            start = time.perf_counter()
            for _ in range(args.repeats):
                run(src, rel)[0].numpy()
            ms = (time.perf_counter() - start) / args.repeats * 1000
            print(f"{name:7s} {ms:7.1f} ms per batch (forward + backward)")


if __name__ == "__main__":
    main()
