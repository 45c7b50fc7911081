"""MemN2N's ``pad_gradient``: the pad word looked up like the authors' nil word."""

import keras
import numpy as np
import pytest
from keras import ops

from tpr_keras import testing
from tpr_keras.models import MemN2N
from tpr_keras.models.memn2n import MemN2NEmbedding, MemN2NNetwork
from tpr_keras.models.memn2n.memn2n_embedding import ZeroPadRow, coded_position_encoding

# Runs on TensorFlow and again under KERAS_BACKEND=jax (the test command's second half).
pytestmark = pytest.mark.every_backend

IDS = np.array([[3, 5, 0, 0], [0, 0, 0, 0], [4, 0, 0, 0]])
TIME = np.array([1, 0, 2])  # the second sentence is an empty memory (no time index)


def tables():
    """The same weights with and without the pad gradient."""
    plain = MemN2NEmbedding(10, 4, sentence_encoding="position_code", memory_size=3)
    nil = MemN2NEmbedding(10, 4, sentence_encoding="position_code", memory_size=3,
                          pad_gradient=True)
    plain.build()
    nil.build()
    nil.set_weights(plain.get_weights())
    return plain, nil


def test_outputs_are_unchanged_and_the_pad_row_gets_each_pad_slots_gradient():
    plain, nil = tables()
    for table in (plain, nil):
        np.testing.assert_array_equal(testing.numpy(table.embeddings)[0], 0.0)
    np.testing.assert_array_equal(testing.numpy(nil(IDS, time_index=TIME)),
                                  testing.numpy(plain(IDS, time_index=TIME)))
    np.testing.assert_array_equal(testing.numpy(nil.project(ops.ones((2, 4)))),
                                  testing.numpy(plain.project(ops.ones((2, 4)))))
    v = np.arange(12, dtype="float32").reshape(3, 4) / 10.0
    answer = np.array([[1.0, -2.0, 0.5, 3.0]], "float32")
    grads = {}
    for name, table in (("plain", plain), ("nil", nil)):
        def loss(table=table):
            return (ops.sum(table(IDS, time_index=TIME) * v)
                    + ops.sum(table.project(answer)[:, 0]))
        _, (grad,), _ = testing.value_and_gradients(loss, [table.embeddings])
        grads[name] = testing.numpy(grad)
    np.testing.assert_array_equal(grads["plain"][0], 0.0)
    # d/dE[0]: every pad word slot j of sentence b adds l_j ⊙ v_b, the empty memory's
    # time slot adds l_J ⊙ v_1 (J: the time word's slot), and the pad logit adds `answer`
    l = testing.numpy(coded_position_encoding(5, 4))
    expected = (l[2] + l[3]) * v[0] + (l[0] + l[1] + l[2] + l[3] + l[4]) * v[1] \
        + (l[1] + l[2] + l[3]) * v[2] + answer[0]
    np.testing.assert_allclose(grads["nil"][0], expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(grads["nil"][1:], grads["plain"][1:], rtol=1e-6, atol=1e-6)


def test_an_optimizer_step_leaves_the_pad_row_at_zero():
    _, nil = tables()
    assert isinstance(nil.embeddings.constraint, ZeroPadRow)
    optimizer = keras.optimizers.SGD(0.5)
    optimizer.apply([ops.ones((10, 4))], [nil.embeddings])
    weights = testing.numpy(nil.embeddings)
    np.testing.assert_array_equal(weights[0], 0.0)
    assert np.all(weights[1:] != 0.0)


def test_joint_paper_turns_it_on_and_configs_without_it_load_without_it():
    joint = MemN2N.from_paper_size("joint_paper", vocabulary_size=20, max_words=4)
    assert joint.pad_gradient and joint.network.tables[0].pad_gradient
    assert not MemN2N.from_paper_size("all_tasks", vocabulary_size=20, max_words=4).pad_gradient
    config = joint.get_config()
    assert config["pad_gradient"] is True
    del config["pad_gradient"]  # a preset saved before the option existed
    assert MemN2N.from_config(config).pad_gradient is False
    network = MemN2NNetwork(10, 4, pad_gradient=True, name="n")
    assert MemN2NNetwork.from_config(network.get_config()).get_config() == network.get_config()
