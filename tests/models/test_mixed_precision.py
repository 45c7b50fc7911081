"""Every model family under ``mixed_bfloat16``: the policy round-trips through the config,
the sensitive parts stay float32, the forward pass matches float32 with the same weights
(within 2 % of the largest logit), and the backend's trainer (TensorFlow's ``Trainer``,
or ``JaxTrainer`` under ``KERAS_BACKEND=jax``) runs a few finite steps."""

import keras
import numpy as np
import pytest

from tpr_keras.models import (TPRRNN, MemN2N, PlainEntailmentModel, TPTransformer,
                              sequence_compute_fn)
from tpr_keras.models.dtype_policy import building_under, resolve
from tpr_keras.training import TrainConfig, binary_classification, sparse_classification
from tpr_keras.training.trainers import make_trainer

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
        ("tpr_rnn", lambda dtype: TPRRNN.from_preset(
            "single_task", vocabulary_size=20, max_words=6, dtype=dtype), babi, answers,
         sparse_classification("answer")),
        ("memn2n", lambda dtype: MemN2N(vocabulary_size=20, max_words=6, embedding_dim=8,
                                        dtype=dtype), babi, answers,
         sparse_classification("answer")),
        ("entailment", lambda dtype: PlainEntailmentModel(
            vocabulary_size=40, units=8, cell="tpru", num_roles=4, seed=0, dtype=dtype),
         pair, {"label": rng.integers(0, 2, size=(8,)).astype("float32")},
         binary_classification("label")),
        ("tp_transformer", lambda dtype: TPTransformer.from_preset(
            "tiny", vocabulary_size=40, dtype=dtype), math,
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
    want = keras.ops.convert_to_numpy(full(inputs))
    got = keras.ops.convert_to_numpy(keras.ops.cast(mixed(inputs), "float32"))
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, atol=2e-2 * np.abs(want).max() + 1e-6)


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
    trainer = make_trainer(lambda: model_fn(MIXED), lambda: keras.optimizers.Adam(1e-2),
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
