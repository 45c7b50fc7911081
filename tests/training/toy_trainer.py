"""A toy task for the tests of the custom loop (``tests/training/test_loop*.py``): 96
examples of 8 features and 4 classes, their tf.data pipeline per epoch, a small seeded
model with named layers, a Trainer over them with a few settings overridden, and the
losses and weights of its first training steps."""

import keras
import numpy as np
import tensorflow as tf

from tpr_keras.training import Trainer, TrainConfig, sparse_classification


def make_data(n=96, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 8)).astype("float32")
    y = (x[:, 0] + x[:, 1] > 0).astype("int32") + 2 * (x[:, 2] > 0).astype("int32")
    return x, y


def dataset_fn(x, y, batch=16):
    def fn(epoch):
        ds = tf.data.Dataset.from_tensor_slices(({"x": x}, {"y": y}))
        return ds.shuffle(len(x), seed=epoch).batch(batch)
    return fn


def model_fn(seed=1):
    def build():
        keras.utils.set_random_seed(seed)
        inputs = {"x": keras.Input((8,), name="x")}
        # named layers: checkpoints find variables by path, and auto names
        # (dense_7) differ between the instances a resume test builds
        hidden = keras.layers.Dense(16, activation="tanh", name="hidden")(inputs["x"])
        return keras.Model(inputs, keras.layers.Dense(4, name="logits")(hidden))
    return build


def trainer(tmp_path, strategy=None, **overrides):
    config = TrainConfig(learning_rate=0.01, epochs=3, warmup_steps=0, patience=None,
                         halve_lr_below=None, verbose=0, clip_norm=0.5)
    for key, value in overrides.items():
        setattr(config, key, value)
    return Trainer(model_fn(), lambda: keras.optimizers.Adam(0.01), sparse_classification("y"),
                   config, str(tmp_path), strategy=strategy)


def losses(tr, ds_fn, steps):
    out = []
    distributed = tr.strategy.experimental_distribute_dataset(ds_fn(0))
    step = tr.make_train_function(distributed.element_spec)
    for batch in distributed:
        out.append(float(step(batch)["loss"]))
        if len(out) == steps:
            break
    return np.array(out), [w.numpy() for w in tr.model.weights]
