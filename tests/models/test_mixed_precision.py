"""Every model family under ``mixed_bfloat16``: the policy round-trips through the config,
the sensitive parts stay float32, the forward pass matches float32 with the same weights
(within a bound derived from bfloat16's precision and the model's depth, below), and the
backend's trainer (TensorFlow's ``Trainer``, or ``JaxTrainer`` under
``KERAS_BACKEND=jax``) runs a few finite steps.

The bound. bfloat16 keeps 8 significant bits, so each rounding of a value moves it by at
most ``u = 2**-8`` of itself. To first order, the error of a chain of ``n`` rounding stages
is at most ``n * u`` of the magnitudes it carries; every layer that computes in bfloat16
rounds its inputs, weights and output, and no path from the inputs to the logits passes a
layer twice, so ``n`` is at most 3 per bfloat16 layer (counted from the model itself). The
logits then differ from float32's by at most ``(3 * layers + 1) * u * max|logit|``. What
mixed precision must preserve follows from it: the cross-entropy moves by at most twice
the largest logit error (its gradient in the logits, ``p - y``, has an L1 norm of at most
2), and the argmax stays wherever float32's top-2 margin is more than twice the bound.
Measured on x86-64 CPUs, TF and JAX: the TP-Transformer's largest error is 2.5-8.5 ``u``
of its largest logit, against its bound of 67 ``u`` (22 bfloat16 layers); a wrong cast or
an overflow shows far above that (which parts stay float32 is checked on the policies)."""

import keras
import numpy as np
import pytest

from tpr_keras.models import (TPRRNN, MemN2N, PlainEntailmentModel, TPTransformer,
                              sequence_compute_fn)
from tpr_keras.models.dtype_policy import building_under, resolve
from tpr_keras.training import TrainConfig, binary_classification, sparse_classification
from tpr_keras.backend.backend_trainer import make_trainer

# Runs on TensorFlow and again under KERAS_BACKEND=jax (the test command's second half).
pytestmark = pytest.mark.every_backend

MIXED = "mixed_bfloat16"


def babi_inputs(rng):
    story = rng.integers(1, 20, size=(8, 5, 6)).astype("int32")
    story[:3, 3:] = 0
    return {"story": story, "question": rng.integers(1, 20, size=(8, 6)).astype("int32")}


def families():
    """``(name, model_fn(dtype), inputs, labels, compute_fn)`` per family."""
    rng = np.random.default_rng(0)
    babi = babi_inputs(rng)
    answers = {"answer": rng.integers(1, 20, size=(8,)).astype("int32")}
    a = rng.integers(1, 40, size=(8, 7)).astype("int32")
    a[:4, 4:] = 0
    pair = {"a": a, "b": rng.integers(1, 40, size=(8, 5)).astype("int32")}
    source = rng.integers(4, 40, size=(8, 12)).astype("int32")
    math = {"source": source, "target_in": source[:, :6]}
    return [
        ("tpr_rnn", lambda dtype: TPRRNN.from_paper_size(
            "single_task", vocabulary_size=20, max_words=6, dtype=dtype), babi, answers,
         sparse_classification("answer")),
        ("memn2n", lambda dtype: MemN2N(vocabulary_size=20, max_words=6, embedding_dim=8,
                                        dtype=dtype), babi, answers,
         sparse_classification("answer")),
        ("entailment", lambda dtype: PlainEntailmentModel(
            vocabulary_size=40, units=8, cell="tpru", num_roles=4, seed=0, dtype=dtype),
         pair, {"label": rng.integers(0, 2, size=(8,)).astype("float32")},
         binary_classification("label")),
        ("tp_transformer", lambda dtype, **sizes: TPTransformer.from_paper_size(
            "tiny", vocabulary_size=40, dtype=dtype, **sizes), math,
         {"target_out": source[:, 1:7]}, sequence_compute_fn()),
    ]


FAMILIES = families()


@pytest.mark.parametrize("name,model_fn,inputs,labels,compute", FAMILIES,
                         ids=[f[0] for f in FAMILIES])
def test_mixed_forward_matches_float32_and_the_policy_round_trips(name, model_fn, inputs,
                                                                   labels, compute):
    keras.utils.set_random_seed(0)
    full = model_fn(None)
    mixed = model_fn(MIXED)
    mixed.set_weights(full.get_weights())
    assert full.get_config()["dtype"] == "float32"
    config = mixed.get_config()
    assert config["dtype"] == MIXED
    again = type(mixed).from_config(config)
    assert again.get_config()["dtype"] == MIXED
    policies = {layer.dtype_policy.name for layer in again._flatten_layers()
                if layer is not again and layer.weights}
    if name == "memn2n":  # memory hops and their softmax: all float32
        assert policies == {"float32"}
    else:  # the TPR memory (TPR-RNN) and TPRU stay float32; the rest runs in bfloat16
        assert MIXED in policies and (name == "tp_transformer" or "float32" in policies)
    want = keras.ops.convert_to_numpy(full(inputs)).astype("float64")
    got = keras.ops.convert_to_numpy(keras.ops.cast(mixed(inputs), "float32")).astype("float64")
    assert np.isfinite(got).all()
    bound = mixed_precision_bound(mixed, want)
    np.testing.assert_allclose(got, want, rtol=0, atol=bound)
    if want.shape[-1] > 1:  # softmax outputs: the loss and the confident argmaxes hold
        label = want.argmax(-1)
        assert abs(cross_entropy(got, label) - cross_entropy(want, label)) <= 2 * bound
        top2 = np.sort(want, axis=-1)[..., -2:]
        confident = top2[..., 1] - top2[..., 0] > 2 * bound
        np.testing.assert_array_equal(got.argmax(-1)[confident], label[confident])


def bfloat16_layers(model):
    """The layers that hold weights of their own and compute in bfloat16."""
    return [layer for layer in model._flatten_layers(include_self=False)
            if layer.dtype_policy.compute_dtype == "bfloat16"
            and len(layer.weights) > sum(len(sub.weights) for sub in
                                         layer._flatten_layers(include_self=False,
                                                               recursive=False))]


def mixed_precision_bound(model, want):
    """``(3 * bfloat16 layers + 1) * u * max|logit|`` (module docstring), plus float32's
    own rounding for a model that is float32 throughout."""
    stages = 3 * len(bfloat16_layers(model)) + 1
    return stages * 2.0**-8 * np.abs(want).max() + 1e-6


def cross_entropy(logits, label):
    """Mean softmax cross-entropy (float64) of ``logits [..., classes]`` against ``label``."""
    logits = logits - logits.max(-1, keepdims=True)
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return -np.take_along_axis(log_p, label[..., None], -1).mean()


@pytest.mark.parametrize("name,model_fn,inputs,labels,compute", FAMILIES,
                         ids=[f[0] for f in FAMILIES])
def test_the_backends_trainer_runs_mixed_steps_with_finite_losses(name, model_fn, inputs,
                                                                   labels, compute, tmp_path):
    keras.utils.set_random_seed(0)
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        data = tf.data.Dataset.from_tensor_slices((inputs, labels)).repeat(3).batch(8)
    else:  # numpy batches, as the JAX train commands feed them
        data = [(inputs, labels)] * 3
    # The TP-Transformer with one encoder and one decoder layer (every kind of its layers):
    # the steps are checked here, and compiling the step of the tiny size's 2 + 2 layers
    # took most of the time (the forward test above keeps them).
    sizes = dict(num_encoder_layers=1, num_decoder_layers=1) if name == "tp_transformer" else {}
    trainer = make_trainer(lambda: model_fn(MIXED, **sizes), lambda: keras.optimizers.Adam(1e-2),
                           compute, TrainConfig(epochs=2, verbose=0, clip_norm=1.0,
                                                warmup_steps=0), str(tmp_path))
    history = trainer.fit(lambda epoch: data)
    assert trainer.state.value("skipped_steps") == 0
    losses = [h["train_loss"] for h in history]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]


def test_an_unknown_policy_names_the_valid_ones():
    with pytest.raises(ValueError, match=r"Unknown dtype policy 'bf16': choose one of "
                                         r"\['float32', 'mixed_bfloat16', 'mixed_float16'\]"):
        TPRRNN(vocabulary_size=10, max_words=4, dtype="bf16")
    with building_under(MIXED):
        assert resolve() == MIXED and keras.config.dtype_policy().name == MIXED
    assert keras.config.dtype_policy().name == "float32"
