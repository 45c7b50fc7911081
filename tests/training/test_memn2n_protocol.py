"""The MemN2N authors' joint protocol in the training loop: a fixed-length linear start,
then the lr schedule from its first epoch again; the summed loss; per-matrix clipping."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tpr_keras.models import MemN2N
from tpr_keras.training import Trainer, TrainConfig, sparse_classification
from tpr_keras.training.callbacks import LinearStart
from tpr_keras.training.clipping import clip_per_matrix, matrix_norm, variable_groups
from tpr_keras.training.lr_policy import LearningRatePolicy

VOCAB, WORDS, SENTENCES = 12, 4, 5


def babi_like(n=64, seed=0):
    """Stories of 1-5 sentences of words 1..11; the answer is the last sentence's first
    word (learnable, so the loss and the gradients are those of a real task)."""
    rng = np.random.default_rng(seed)
    story = rng.integers(1, VOCAB, size=(n, SENTENCES, WORDS)).astype("int32")
    lengths = rng.integers(1, SENTENCES + 1, size=n)
    for i, length in enumerate(lengths):
        story[i, length:] = 0
    question = rng.integers(1, VOCAB, size=(n, WORDS)).astype("int32")
    answer = story[np.arange(n), lengths - 1, 0]
    return {"story": story, "question": question}, {"answer": answer}


def dataset_fn(features, labels, batch):
    def fn(epoch):
        ds = tf.data.Dataset.from_tensor_slices((features, labels))
        return ds.shuffle(len(labels["answer"]), seed=epoch).batch(batch, drop_remainder=True)
    return fn


def memn2n_fn(**kwargs):
    def build():
        keras.utils.set_random_seed(3)
        return MemN2N(VOCAB, WORDS, embedding_dim=6, memory_size=SENTENCES, **kwargs)
    return build


def summed_loss_gradients(model, features, labels):
    """The batch-summed loss of ``model`` and its gradients (numpy), one per variable."""
    with tf.GradientTape() as tape:
        logits = model(features, training=True)
        loss = tf.reduce_sum(keras.losses.sparse_categorical_crossentropy(
            labels["answer"], logits, from_logits=True))
    grads = tape.gradient(loss, model.trainable_variables)
    return loss, [tf.convert_to_tensor(g).numpy() for g in grads]


def protocol_config(**overrides):
    fields = dict(learning_rate=0.005, epochs=8, warmup_steps=0, halve_lr_below=None,
                  patience=None, clip_norm=None, verbose=0, loss_reduction="sum",
                  clip_per_matrix=40.0, matrix_norm="spectral", decay_every_epochs=2,
                  decay_offset_epochs=1, schedule_start_epoch=3, keep_best=False)
    fields.update(overrides)
    return TrainConfig(**fields)


class Recorder(keras.callbacks.Callback):
    """Each epoch's linear-start switch as the epoch's steps see it."""

    def __init__(self):
        super().__init__()
        self.linear = []

    def on_epoch_begin(self, epoch, logs=None):
        self.linear.append(self.model.linear_start)


def test_linear_start_lasts_exactly_n_epochs_then_the_schedule_restarts(tmp_path):
    features, labels = babi_like()
    trainer = Trainer(memn2n_fn(linear_start=True, random_noise=0.1),
                      lambda: keras.optimizers.SGD(0.005), sparse_classification("answer"),
                      protocol_config(), str(tmp_path))
    recorder = Recorder()
    # The validation loss plays no part: the same data as training, falling or not.
    history = trainer.fit(dataset_fn(features, labels, 16),
                          dataset_fn(features, labels, 16)(0),
                          callbacks=[LinearStart(epochs=3), recorder])
    # recorder runs after LinearStart: epoch 4 already sees the softmax back
    assert recorder.linear == [True] * 3 + [False] * 5
    # 3 epochs at 0.005, then the MATLAB schedule from its epoch 1: halved at the start
    # of its epochs 2, 4 (every 2nd, 1-based), 0.005 again at the restart.
    lr = 0.005
    assert [h["learning_rate"] for h in history] == pytest.approx(
        [lr, lr, lr, lr, lr / 2, lr / 2, lr / 4, lr / 4])
    assert trainer.model.linear_start is False


def test_the_schedule_restart_is_the_policy_counted_from_the_start_epoch():
    restarted = LearningRatePolicy(0.005, decay_every_epochs=5, decay_offset_epochs=1,
                                   schedule_start_epoch=30)
    plain = LearningRatePolicy(0.005, decay_every_epochs=5, decay_offset_epochs=1)
    assert [restarted.epoch_factor(e, False) for e in range(30)] == [1.0] * 30
    assert [restarted.epoch_factor(30 + e, False) for e in range(20)] == [
        plain.epoch_factor(e, False) for e in range(20)]
    # MATLAB's train.m: lrate halves when mod(ep, 5) == 0, ep = 1, 2, ...
    assert [plain.epoch_factor(ep - 1, False) for ep in range(1, 21)] == [
        0.5 ** (ep // 5) for ep in range(1, 21)]


def spectral(matrix):
    return np.linalg.norm(np.asarray(matrix, "float64"), 2)


def test_matrix_norms_are_matlabs():
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(7, 5)).astype("float32")
    # float32 Gram matrix and eigh: a few ulps of the norm
    assert float(matrix_norm(matrix, "spectral")) == pytest.approx(spectral(matrix), rel=1e-5)
    assert float(matrix_norm(matrix.T, "spectral")) == pytest.approx(spectral(matrix),
                                                                     rel=1e-5)
    assert float(matrix_norm(matrix, "frobenius")) == pytest.approx(
        np.linalg.norm(matrix), rel=1e-6)
    vector = np.array([3.0, 4.0], "float32")
    assert float(matrix_norm(vector, "spectral")) == pytest.approx(5.0)


def test_clipping_is_per_matrix_and_groups_stack_their_rows():
    rng = np.random.default_rng(1)
    big, small = rng.normal(size=(6, 4)) * 50, rng.normal(size=(3, 4)) * 1e-3
    alone = rng.normal(size=(4, 4)) * 50
    grads = [g.astype("float32") for g in (big, small, alone)]
    clipped = [np.asarray(g) for g in clip_per_matrix(grads, 40.0, "spectral",
                                                      groups=[[0, 1]])]
    # rows 0 and 1 are one matrix: one scale for both, its norm exactly 40
    scale = 40.0 / spectral(np.concatenate([big, small]))
    np.testing.assert_allclose(clipped[0], grads[0] * scale, rtol=1e-5)
    np.testing.assert_allclose(clipped[1], grads[1] * scale, rtol=1e-5)
    assert spectral(np.concatenate(clipped[:2])) == pytest.approx(40.0, rel=1e-5)
    assert spectral(clipped[2]) == pytest.approx(40.0, rel=1e-5)
    tiny = [g * 1e-3 for g in grads]  # under the norm: untouched
    for a, b in zip(clip_per_matrix(tiny, 40.0, "spectral"), tiny):
        np.testing.assert_array_equal(np.asarray(a), b)


def test_a_step_clips_each_matrix_of_the_summed_loss_gradient(tmp_path):
    features, labels = babi_like(n=32)
    build = memn2n_fn(random_noise=0.0, linear_start=True)  # linear: large gradients
    reference = build()
    variables = reference.trainable_variables
    loss, grads = summed_loss_gradients(reference, features, labels)
    # the model's matrices: each table's word rows with its temporal rows
    groups = variable_groups(variables, reference.weight_matrices())
    assert sorted(len(g) for g in groups) == [2] * 4 and len(variables) == 8
    max_norm = 2.0
    norms = [spectral(np.concatenate([grads[i] for i in g])) for g in groups]
    # some matrices above the norm, some below: a global clip would scale them all
    assert min(norms) < max_norm / 1.5 and max(norms) > max_norm * 1.5
    lr = 0.1
    trainer = Trainer(build, lambda: keras.optimizers.SGD(lr), sparse_classification("answer"),
                      protocol_config(clip_per_matrix=max_norm), str(tmp_path))
    before = [v.numpy() for v in trainer.model.trainable_variables]
    ds = dataset_fn(features, labels, 32)(0)
    batch = next(iter(trainer.strategy.experimental_distribute_dataset(ds)))
    step = trainer.make_train_function(
        trainer.strategy.experimental_distribute_dataset(ds).element_spec)
    out = step(batch)
    assert bool(out["applied"])
    # the logged loss is the mean; the step followed the sum's gradient
    assert float(out["loss"]) == pytest.approx(float(loss) / 32, rel=1e-5)
    for group, norm in zip(groups, norms):
        for i in group:
            moved = before[i] - trainer.model.trainable_variables[i].numpy()
            # float32 sums over 32 examples, then a Gram-matrix eigenvalue: ~1e-5
            np.testing.assert_allclose(moved, lr * grads[i] * min(1.0, max_norm / norm),
                                       rtol=1e-4, atol=1e-7)


def test_the_mean_reduction_is_the_sum_over_the_batch_size(tmp_path):
    features, labels = babi_like(n=32)
    steps = {}
    for reduction in ("mean", "sum"):
        trainer = Trainer(memn2n_fn(random_noise=0.0), lambda: keras.optimizers.SGD(1.0),
                          sparse_classification("answer"),
                          protocol_config(loss_reduction=reduction, clip_per_matrix=None),
                          str(tmp_path / reduction))
        before = [v.numpy() for v in trainer.model.trainable_variables]
        ds = trainer.strategy.experimental_distribute_dataset(
            dataset_fn(features, labels, 32)(0))
        trainer.make_train_function(ds.element_spec)(next(iter(ds)))
        steps[reduction] = [b - v.numpy() for b, v in
                            zip(before, trainer.model.trainable_variables)]
    for mean, total in zip(steps["mean"], steps["sum"]):
        np.testing.assert_allclose(total, 32 * mean, rtol=1e-4, atol=1e-6)


def test_with_the_pad_gradient_the_clipping_norm_counts_the_pad_row_which_stays_zero(tmp_path):
    """The authors' nil word: its row's gradient (every pad word slot, and the time slot
    of every empty memory) enters each table's clipping norm, and the row is zeroed
    after the step; the other rows move by the gradient scaled with that larger norm."""
    features, labels = babi_like(n=32)
    features["story"][:, :, 2:] = 0  # two-word sentences and questions in 4 slots
    features["question"][:, 2:] = 0
    build = memn2n_fn(random_noise=0.0, linear_start=True, sentence_encoding="position_code",
                      mask_empty_memories=False, pad_gradient=True)
    reference = build()
    variables = reference.trainable_variables
    _, grads = summed_loss_gradients(reference, features, labels)
    tables = [i for i, v in enumerate(variables) if v.path.endswith("embeddings")]
    assert len(tables) == 4 and all(np.abs(grads[i][0]).sum() > 0 for i in tables)
    groups = variable_groups(variables, reference.weight_matrices())
    max_norm = 2.0
    with_pad = [spectral(np.concatenate([grads[i] for i in g])) for g in groups]
    without = [spectral(np.concatenate([grads[i][1:] if i in tables else grads[i]
                                        for i in g])) for g in groups]
    # the pad row counts; B = A^1 sees the most pad slots (questions and memories): its
    # norm more than doubles, past max_norm, so its step is scaled by the larger norm
    assert all(a >= b for a, b in zip(with_pad, without))
    assert with_pad[0] > max_norm and with_pad[0] > 2 * without[0]
    lr = 0.1
    trainer = Trainer(build, lambda: keras.optimizers.SGD(lr), sparse_classification("answer"),
                      protocol_config(clip_per_matrix=max_norm), str(tmp_path))
    before = [v.numpy() for v in trainer.model.trainable_variables]
    ds = dataset_fn(features, labels, 32)(0)
    distributed = trainer.strategy.experimental_distribute_dataset(ds)
    step = trainer.make_train_function(distributed.element_spec)
    assert bool(step(next(iter(distributed)))["applied"])
    for group, norm in zip(groups, with_pad):
        for i in group:
            after = trainer.model.trainable_variables[i].numpy()
            expected = before[i] - lr * grads[i] * min(1.0, max_norm / norm)
            if i in tables:
                np.testing.assert_array_equal(after[0], 0.0)  # the nil row, zeroed again
                after, expected = after[1:], expected[1:]
            np.testing.assert_allclose(after, expected, rtol=1e-4, atol=1e-7)
