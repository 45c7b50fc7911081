"""The ``authors_code`` recipes' pieces: PyTorch-form Adam, the TPR-RNN reference's
optimizer start, the token-mean loss and PyTorch's ``nn.Linear`` initialisation
(docs/authors_code.md). Their 20-step trajectories against the authors' code:
tests/fidelity/."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tpr_keras.training.losses import sequence_cross_entropy
from tpr_keras.training.optimizers import (GLOROT_SCALAR_LIMIT, NesterovAdam, TorchAdam,
                                           authors_nadam, get_optimizer)
from tpr_keras.training.recipes import recipe
from tpr_keras.training.recipes.tp_transformer import RECIPES, resolve_size

GRADS = [np.array([0.5, -1.0, 1e-6]), np.array([0.2, 0.3, -2e-6]), np.array([-0.4, 0.1, 0.0])]


def test_torch_adam_is_pytorch_s_update():
    """``torch.optim.Adam``: ε on the bias-corrected ``√v̂``, in float64 here."""
    var = tf.Variable([1.0, -2.0, 0.5])
    opt = TorchAdam(learning_rate=0.1, beta_1=0.9, beta_2=0.995, epsilon=1e-3)
    m = v = np.zeros(3)
    theta = np.array([1.0, -2.0, 0.5])
    for t, g in enumerate(GRADS, start=1):
        opt.apply([tf.constant(g, tf.float32)], [var])
        m = 0.9 * m + 0.1 * g
        v = 0.995 * v + 0.005 * g * g
        theta = theta - 0.1 / (1 - 0.9**t) * m / (np.sqrt(v) / np.sqrt(1 - 0.995**t) + 1e-3)
    np.testing.assert_allclose(var.numpy(), theta, rtol=2e-6)
    # Keras' Adam with the same ε differs where v is small (the third entry).
    keras_var = tf.Variable([1.0, -2.0, 0.5])
    keras_opt = get_optimizer("adam", 0.1, 0.9, 0.995, epsilon=1e-3)
    for g in GRADS:
        keras_opt.apply([tf.constant(g, tf.float32)], [keras_var])
    assert abs(keras_var.numpy()[2] - theta[2]) > 0.5 * abs(theta[2] - 0.5)


def test_nesterov_adam_power_starts():
    """Powers ``start · β^(t-1)``: TF1 ``ApplyAdam(use_nesterov=True)`` with its
    accumulators started at ``start``; no start is plain ``β^t``."""
    for starts in ((0.5, -0.3), (None, None)):
        var = tf.Variable([1.0, -2.0, 0.5])
        opt = NesterovAdam(0.01, 0.9, 0.999, 1e-8, *starts)
        p1, p2 = (0.9, 0.999) if starts[0] is None else starts
        m = v = np.zeros(3)
        theta = np.array([1.0, -2.0, 0.5])
        for g in GRADS:
            opt.apply([tf.constant(g, tf.float32)], [var])
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            alpha = 0.01 * np.sqrt(1 - p2) / (1 - p1)
            theta = theta - alpha * (0.9 * m + 0.1 * g) / (np.sqrt(v) + 1e-8)
            p1, p2 = p1 * 0.9, p2 * 0.999
        np.testing.assert_allclose(var.numpy(), theta, rtol=2e-5)


def test_authors_nadam_draws_glorot_scalars_with_a_finite_first_step():
    starts = np.array([(o.beta_1_power_start, o.beta_2_power_start)
                       for o in (authors_nadam(0.001, seed=s) for s in range(200))])
    assert np.all(np.abs(starts) <= GLOROT_SCALAR_LIMIT) and np.all(starts[:, 1] < 1)
    assert starts[:, 0].max() > 1.0 and starts.min() < -1.0  # the whole range
    assert authors_nadam(0.001, seed=3).get_config() == authors_nadam(0.001, seed=3).get_config()


@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="computes the reference with TensorFlow ops")
def test_batch_token_mean_makes_the_batch_mean_the_token_mean():
    logits = tf.constant(np.random.default_rng(0).normal(size=(3, 4, 5)), tf.float32)
    target = np.array([[1, 2, 0, 0], [3, 0, 0, 0], [1, 1, 4, 2]])
    model = lambda features, training: logits  # noqa: E731
    per_token = tf.keras.losses.sparse_categorical_crossentropy(
        target, logits, from_logits=True).numpy()
    theirs = per_token[target != 0].mean()
    out = sequence_cross_entropy(pad_id=0, reduction="batch_token_mean")(
        model, {}, {"target_out": target}, True)
    np.testing.assert_allclose(np.mean(out["loss"]), theirs, rtol=1e-6)
    summed = sequence_cross_entropy(pad_id=0)(model, {}, {"target_out": target}, True)
    np.testing.assert_allclose(out["loss"], summed["loss"] * 3 / 7, rtol=1e-6)
    with pytest.raises(ValueError, match="reduction"):
        sequence_cross_entropy(reduction="token")


def test_authors_code_recipes_and_the_defaults():
    _, ours = resolve_size("tiny", recipe_name="authors_code", batch_size=64)
    assert ours["optimizer"] == "torch_adam" and ours["batch_size"] == 64
    assert (ours["learning_rate"], ours["beta_1"], ours["beta_2"], ours["clip_norm"]) == (
        1e-4, 0.9, 0.995, 0.1)
    assert resolve_size("tiny")[1] == dict(RECIPES["tiny"])  # the default is unchanged
    assert "optimizer" not in resolve_size("tp_transformer")[1]
    with pytest.raises(ValueError, match="recipe"):
        resolve_size("tiny", recipe_name="authors")
    tpr = recipe("tpr_rnn", "all_tasks_authors", "authors_code")
    assert (tpr["optimizer"], tpr["batch_size"], tpr["warmup_steps"], tpr["halve_lr_below"],
            tpr["beta_power_start"], tpr["joint_max_story_sentences"], tpr["bucket_width"]) == (
        "nesterov_adam", 32, 51, None, "glorot_uniform", 70, 0)
    assert recipe("tpr_rnn", "all_tasks") == dict(RECIPES_TPR_RNN_ALL_TASKS)
    memn2n = recipe("memn2n", "single_task", "authors_code")
    assert (memn2n["loss_reduction"], memn2n["matrix_norm"], memn2n["answer_time_words"],
            memn2n["pad_gradient"]) == ("sum", "spectral", True, True)
    with pytest.raises(ValueError, match="authors_code"):
        recipe("entailment", "plain_lstm", "authors_code")


RECIPES_TPR_RNN_ALL_TASKS = {
    "optimizer": "nadam", "learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999,
    "batch_size": 32, "clip_norm": 5.0, "warmup_steps": 50, "halve_lr_below": 0.1,
    "decay_every_epochs": None, "epochs": 200}


def test_torch_linear_init_draws_their_bounds():
    """The TP-Transformer's attention projections and feed-forward biases drawn as
    PyTorch's ``nn.Linear`` does: uniform in ``±1/√in``, biases non-zero; the weights
    not listed keep the port's initialisation."""
    from tpr_keras.models.tp_transformer import TPTransformer
    from tpr_keras.training.recipes.tp_transformer import TORCH_DEFAULT_INIT
    from tpr_keras.training.torch_init import torch_linear_init

    model = TPTransformer(vocabulary_size=20, model_dim=64, num_heads=4,
                          num_encoder_layers=1, num_decoder_layers=1, feed_forward_dim=128)
    model({"source": np.ones((1, 3), "int32"), "target_in": np.ones((1, 2), "int32")})
    before = {v.path: v.numpy().copy() for v in model.weights}
    drawn = torch_linear_init(model, TORCH_DEFAULT_INIT, seed=0)
    assert "encoder_0/self_attention/role_bias" in drawn
    assert "decoder_0/cross_attention/output_kernel" in drawn
    assert "encoder_0/feed_forward/outer/bias" in drawn and "embedding/multiplier/bias" in drawn
    assert "encoder_0/feed_forward/inner/kernel" not in drawn
    for v in model.weights:
        value = v.numpy()
        if v.path not in drawn:
            np.testing.assert_array_equal(value, before[v.path])
            continue
        bound = 1 / np.sqrt(128 if v.path.endswith("feed_forward/outer/bias") else 64)
        assert np.abs(value).max() <= bound and np.abs(value).max() > 0.8 * bound, v.path
    with pytest.raises(ValueError, match="matches"):
        torch_linear_init(model, ["nothing/*"])


@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="computes the reference with TensorFlow ops")
def test_a_trained_pad_row_enters_the_sum_and_gets_a_gradient():
    """``pad_row="trained"`` (the TPR-RNN authors' code): word id 0 is an ordinary row;
    the default reads it as zeros."""
    from tpr_keras.layers import SentenceEncoder

    ids = np.array([[4, 2, 0, 0]])
    sums = {}
    for pad_row in ("zero", "trained"):
        encoder = SentenceEncoder(vocabulary_size=6, symbol_dim=3, pad_row=pad_row)
        encoder.build(ids.shape)
        table = np.arange(18, dtype="float32").reshape(6, 3) / 10
        encoder.embedding.embeddings.assign(table)
        with tf.GradientTape() as tape:
            out = encoder(ids)
            total = tf.reduce_sum(out)
        grad = tf.convert_to_tensor(tape.gradient(total, encoder.embedding.embeddings.value))
        sums[pad_row] = out.numpy()
        assert np.any(grad.numpy()[0]) == (pad_row == "trained")
        assert SentenceEncoder.from_config(encoder.get_config()).pad_row == pad_row
    # Two pad slots, each the pad row (0, 0.1, 0.2) times the position weight 1/4.
    np.testing.assert_allclose(sums["trained"] - sums["zero"], [[0.0, 0.05, 0.1]], atol=1e-6)
    with pytest.raises(ValueError, match="pad_row"):
        SentenceEncoder(vocabulary_size=6, symbol_dim=3, pad_row="leak")
