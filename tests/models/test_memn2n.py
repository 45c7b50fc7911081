import keras
import numpy as np
import pytest
from keras import ops

from tpr_keras import testing
from tpr_keras.models.memn2n import PAPER_SIZES, MemN2N

# Runs on TensorFlow and again under KERAS_BACKEND=jax (the test command's second half).
pytestmark = pytest.mark.every_backend


def batch(seed=0, vocab=20, words=6, sentences=5):
    rng = np.random.default_rng(seed)
    story = rng.integers(1, vocab, size=(3, sentences, words)).astype("int32")
    story[:, :, 4:] = 0
    story[1, 3:] = 0
    question = rng.integers(1, vocab, size=(3, words)).astype("int32")
    return {"story": story, "question": question}


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"weight_tying": "layer_wise", "sentence_encoding": "position_code",
         "mask_empty_memories": False, "linear_start": True},
    ],
)
def test_keras_round_trip_identical_outputs(keras_round_trip, options):
    model = MemN2N(vocabulary_size=20, max_words=6, embedding_dim=8, memory_size=4,
                   seed=1, **options)
    keras_round_trip(model, batch())


def test_linear_start_state_is_saved_with_the_weights(tmp_path):
    model = MemN2N(vocabulary_size=20, max_words=6, embedding_dim=8, linear_start=True)
    model.set_linear_start(False)
    assert model.linear_start is False
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.linear_start is False
    # Even when the config said True, the weights win.
    loaded = MemN2N(vocabulary_size=20, max_words=6, embedding_dim=8, linear_start=True)
    loaded.set_weights(model.get_weights())
    assert loaded.linear_start is False
    np.testing.assert_array_equal(testing.numpy(loaded(batch())), testing.numpy(model(batch())))


def test_paper_sizes_and_output_shape():
    model = MemN2N.from_paper_size("single_task", vocabulary_size=20, max_words=6)
    assert (model.embedding_dim, model.num_hops, model.memory_size) == (20, 3, 50)
    assert model.weight_tying == "adjacent" and model.sentence_encoding == "position"
    assert model(batch()).shape == (3, 20)
    assert MemN2N.from_paper_size("all_tasks", vocabulary_size=20, max_words=6).embedding_dim == 50
    assert set(PAPER_SIZES) == {"single_task", "all_tasks", "joint_paper"}
    # the authors' code as it ran: d = 50, their coded PE, empty slots in the softmax
    code = MemN2N.from_paper_size("joint_paper", vocabulary_size=20, max_words=6)
    assert (code.embedding_dim, code.sentence_encoding, code.mask_empty_memories) == (
        50, "position_code", False)
    with pytest.raises(ValueError, match="Unknown paper size"):
        MemN2N.from_paper_size("huge", vocabulary_size=20, max_words=6)


def test_padding_and_truncation_in_graph():
    model = MemN2N(vocabulary_size=20, max_words=6, embedding_dim=8, memory_size=3)
    inputs = batch(sentences=5)
    expected = testing.numpy(model(inputs))
    # Trailing padding sentences change nothing.
    longer = dict(inputs, story=np.concatenate(
        [inputs["story"], np.zeros((3, 4, 6), "int32")], 1))
    np.testing.assert_allclose(testing.numpy(model(longer)), expected, rtol=1e-6, atol=1e-6)
    # Only the last memory_size real sentences count: example 0 has 5, example 1 has 3.
    cut = dict(inputs, story=inputs["story"][:, 2:])
    cut["story"][1] = inputs["story"][1, :3]
    np.testing.assert_allclose(testing.numpy(model(cut)), expected, rtol=1e-6, atol=1e-6)
    # The functional graph accepts any number of sentences, also fewer than memory_size.
    assert model(dict(inputs, story=inputs["story"][:, :1])).shape == (3, 20)


def test_attention_inspection():
    model = MemN2N(vocabulary_size=20, max_words=6, embedding_dim=8, memory_size=4)
    p = testing.numpy(model.attention(batch()))
    assert p.shape == (3, 3, 4)
    np.testing.assert_allclose(p.sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(p[1, :, 3], 0.0)  # example 1 has 3 sentences


# About tf.function: toggling linear start must not retrace the compiled train step.
@pytest.mark.tensorflow_backend
def test_train_step_toggles_linear_start_without_retracing():
    import tensorflow as tf

    model = MemN2N(vocabulary_size=20, max_words=6, embedding_dim=8, memory_size=4,
                   linear_start=True, seed=0)
    optimizer = keras.optimizers.SGD(0.01, clipnorm=40.0)
    inputs, answer = batch(), tf.constant([3, 4, 5])
    traces = []

    @tf.function
    def step(inputs, answer):
        traces.append(1)
        with tf.GradientTape() as tape:
            logits = model(inputs, training=True)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(answer, logits))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(grads, model.trainable_variables)
        return loss

    assert np.isfinite(step(inputs, answer).numpy())
    model.set_linear_start(False)
    assert np.isfinite(step(inputs, answer).numpy())
    assert len(traces) == 1
    for table in model.network.tables:  # pad rows stay exactly zero
        np.testing.assert_array_equal(table.embeddings.numpy()[0], 0.0)


def test_compiled_stateless_train_step_serves_both_linear_start_modes():
    """Loss and gradients computed as the JAX trainer compiles them (stateless: every variable
    an argument): one trace serves both linear-start modes, on every backend. (The optimizer
    applies the gradients eagerly: TensorFlow has no ``stateless_apply``.)"""
    model = MemN2N(vocabulary_size=20, max_words=6, embedding_dim=8, memory_size=4,
                   linear_start=True, seed=0)
    optimizer = keras.optimizers.SGD(0.01, clipnorm=40.0)
    inputs, answer = batch(), np.array([3, 4, 5], "int32")
    traces = []

    def step(trainable, non_trainable):
        traces.append(1)

        def loss(*trainable):
            logits, _ = model.stateless_call(trainable, non_trainable, inputs, training=True)
            return ops.mean(ops.sparse_categorical_crossentropy(answer, logits,
                                                                from_logits=True))

        value, _, grads = testing.value_and_gradients(loss, inputs=trainable)
        logits, _ = model.stateless_call(trainable, non_trainable, inputs)
        return value, logits, grads

    step = testing.compiled(step)
    for enabled in (True, False):
        model.set_linear_start(enabled)
        expected = testing.numpy(model(inputs))
        loss, logits, grads = step(
            [ops.convert_to_tensor(v) for v in model.trainable_variables],
            [ops.convert_to_tensor(v) for v in model.non_trainable_variables])
        assert np.isfinite(testing.numpy(loss))
        # The compiled step reads the switch from its arguments, not a traced-in constant.
        np.testing.assert_allclose(testing.numpy(logits), expected, rtol=1e-5, atol=1e-6)
        assert len(grads) == len(model.trainable_variables) > 0
        optimizer.apply(grads, model.trainable_variables)
    assert len(traces) == 1
    assert model.linear_start is False
    for table in model.network.tables:  # pad rows stay exactly zero
        np.testing.assert_array_equal(testing.numpy(table.embeddings)[0], 0.0)


# About TensorFlow's checkpoint format (tf.train.Checkpoint), which the TF trainer writes.
@pytest.mark.tensorflow_backend
@pytest.mark.parametrize("weight_tying", ["adjacent", "layer_wise"])
def test_tf_checkpoint_covers_every_weight(tmp_path, weight_tying):
    import tensorflow as tf

    # The Trainer checkpoints and restores its best weights with tf.train.Checkpoint,
    # which does not follow Keras' tracked lists of sub-layers.
    model = MemN2N(vocabulary_size=20, max_words=6, embedding_dim=8, memory_size=4,
                   weight_tying=weight_tying, linear_start=True)
    checkpoint = tf.train.Checkpoint(model=model)
    path = checkpoint.write(str(tmp_path / "weights"))
    saved = [v for v in tf.train.list_variables(path) if "VARIABLE_VALUE" in v[0]]
    assert len(saved) >= len(model.weights)
    before = [w.numpy().copy() for w in model.weights]
    model.set_linear_start(False)
    for w in model.trainable_weights:
        w.assign(w + 1.0)
    checkpoint.read(path).assert_existing_objects_matched()
    for w, value in zip(model.weights, before):
        np.testing.assert_array_equal(w.numpy(), value, err_msg=w.path)
    assert model.linear_start is True
