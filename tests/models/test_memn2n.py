import keras
import numpy as np
import pytest
import tensorflow as tf

from tpr_keras.models.memn2n import PRESETS, MemN2N


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
    np.testing.assert_array_equal(loaded(batch()).numpy(), model(batch()).numpy())


def test_presets_and_output_shape():
    model = MemN2N.from_preset("single_task", vocabulary_size=20, max_words=6)
    assert (model.embedding_dim, model.num_hops, model.memory_size) == (20, 3, 50)
    assert model.weight_tying == "adjacent" and model.sentence_encoding == "position"
    assert model(batch()).shape == (3, 20)
    assert MemN2N.from_preset("all_tasks", vocabulary_size=20, max_words=6).embedding_dim == 50
    assert set(PRESETS) == {"single_task", "all_tasks"}
    with pytest.raises(ValueError, match="Unknown preset"):
        MemN2N.from_preset("huge", vocabulary_size=20, max_words=6)


def test_padding_and_truncation_in_graph():
    model = MemN2N(vocabulary_size=20, max_words=6, embedding_dim=8, memory_size=3)
    inputs = batch(sentences=5)
    expected = model(inputs).numpy()
    # Trailing padding sentences change nothing.
    longer = dict(inputs, story=np.concatenate(
        [inputs["story"], np.zeros((3, 4, 6), "int32")], 1))
    np.testing.assert_allclose(model(longer).numpy(), expected, rtol=1e-6, atol=1e-6)
    # Only the last memory_size real sentences count: example 0 has 5, example 1 has 3.
    cut = dict(inputs, story=inputs["story"][:, 2:])
    cut["story"][1] = inputs["story"][1, :3]
    np.testing.assert_allclose(model(cut).numpy(), expected, rtol=1e-6, atol=1e-6)
    # The functional graph accepts any number of sentences, also fewer than memory_size.
    assert model(dict(inputs, story=inputs["story"][:, :1])).shape == (3, 20)


def test_attention_inspection():
    model = MemN2N(vocabulary_size=20, max_words=6, embedding_dim=8, memory_size=4)
    p = model.attention(batch()).numpy()
    assert p.shape == (3, 3, 4)
    np.testing.assert_allclose(p.sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(p[1, :, 3], 0.0)  # example 1 has 3 sentences


def test_train_step_toggles_linear_start_without_retracing():
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


@pytest.mark.parametrize("weight_tying", ["adjacent", "layer_wise"])
def test_tf_checkpoint_covers_every_weight(tmp_path, weight_tying):
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
