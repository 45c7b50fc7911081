import numpy as np
import pytest
from keras import ops

from tpr_keras import testing
from tpr_keras.models import TPR_RNN_PAPER_SIZES, TPRRNN

# Runs on TensorFlow and again under KERAS_BACKEND=jax (the test command's second half).
pytestmark = pytest.mark.every_backend


def batch(seed=0, vocab=20, words=6):
    rng = np.random.default_rng(seed)
    story = rng.integers(1, vocab, size=(3, 5, words)).astype("int32")
    story[:, :, 4:] = 0
    story[1, 3:] = 0
    question = rng.integers(1, vocab, size=(3, words)).astype("int32")
    return {"story": story, "question": question}


def test_keras_round_trip_identical_outputs(keras_round_trip):
    model = TPRRNN.from_paper_size("single_task", vocabulary_size=20, max_words=6,
                               operations="write+move", inference_steps=2)
    keras_round_trip(model, batch())


def test_presets_sizes():
    model = TPRRNN.from_paper_size("single_task", vocabulary_size=20, max_words=6)
    assert ((model.symbol_dim, model.hidden_dim, model.entity_dim, model.relation_dim)
            == (20, 20, 15, 10))
    model = TPRRNN.from_paper_size("all_tasks", vocabulary_size=180, max_words=12)
    assert (model.hidden_dim, model.entity_dim, model.relation_dim) == (90, 40, 20)
    assert set(TPR_RNN_PAPER_SIZES) >= {"single_task", "all_tasks", "all_tasks_code"}
    with pytest.raises(ValueError, match="Unknown paper size"):
        TPRRNN.from_paper_size("huge", vocabulary_size=20, max_words=6)


def test_trailing_padding_sentences_do_not_change_answer():
    model = TPRRNN.from_paper_size("single_task", vocabulary_size=20, max_words=6)
    inputs = batch()
    longer = dict(inputs, story=np.concatenate([inputs["story"], np.zeros((3, 4, 6), "int32")], 1))
    np.testing.assert_allclose(testing.numpy(model(longer)), testing.numpy(model(inputs)),
                               rtol=1e-6, atol=1e-6)


# About TensorFlow's checkpoint format (tf.train.Checkpoint), which the TF trainer writes.
@pytest.mark.tensorflow_backend
def test_tf_checkpoint_restores_every_weight(tmp_path):
    """The training loop checkpoints with tf.train.Checkpoint: no weight may be missed."""
    import tensorflow as tf

    model = TPRRNN.from_paper_size("single_task", vocabulary_size=20, max_words=6)
    checkpoint = tf.train.Checkpoint(model=model)
    path = checkpoint.write(str(tmp_path / "weights"))
    saved = [w.numpy().copy() for w in model.weights]
    for w in model.weights:
        w.assign(w + 1.0)
    checkpoint.read(path).assert_consumed()
    for w, value in zip(model.weights, saved):
        np.testing.assert_array_equal(w.numpy(), value, err_msg=w.path)


def logits_and_gradients(model, inputs, labels):
    """The model's logits and the gradients of the summed cross-entropy, per weight."""
    def loss():
        logits = model(inputs)
        return ops.sum(ops.sparse_categorical_crossentropy(labels, logits, from_logits=True))

    _, grads, _ = testing.value_and_gradients(loss, model.trainable_weights)
    return model(inputs), grads


@pytest.mark.parametrize("size", ["single_task", "all_tasks", "all_tasks_code"])
def test_parallel_and_recurrent_models_agree(size):
    """Logits and every weight's gradient, with padded sentences, for each paper size."""
    models = [
        TPRRNN.from_paper_size(size, vocabulary_size=20, max_words=6, implementation=impl)
        for impl in ("parallel", "recurrent")
    ]
    models[1].set_weights(models[0].get_weights())
    inputs = batch(seed=5)
    labels = np.array([3, 7, 11], "int32")
    results = []
    for model in models:
        # Compiled: on JAX one XLA program beats op-by-op dispatch (3 presets: ~15 s vs ~23 s).
        logits, grads = testing.compiled(lambda: logits_and_gradients(model, inputs, labels))()
        assert len(grads) == len(model.trainable_weights) > 0
        results.append((testing.numpy(logits), [testing.numpy(g) for g in grads]))
    (logits_p, grads_p), (logits_r, grads_r) = results
    np.testing.assert_allclose(logits_p, logits_r, rtol=1e-4, atol=1e-5)
    for weight, gp, gr in zip(models[0].trainable_weights, grads_p, grads_r):
        assert np.abs(gp - gr).max() <= 1e-4 * max(np.abs(gr).max(), 1e-6), weight.path
