"""TPTransformer on the JAX backend: the same weights give TensorFlow's logits (<= 1e-5) and
the same greedy and beam answers, eagerly and under ``jax.jit``, and ``fit`` trains it with a
jit-compiled step. The JAX side runs in a subprocess (the backend is chosen before Keras is
imported); skipped where jax is not installed (the ``jax`` extra)."""

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from tpr_keras.models import TPTransformer

pytest.importorskip("jax")

END_ID, START_ID = 3, 2

JAX_SIDE = textwrap.dedent("""
    import json, os, sys
    os.environ["KERAS_BACKEND"] = "jax"
    import jax
    import keras
    import numpy as np
    from keras import ops
    from tpr_keras.models import TPTransformer

    folder = sys.argv[1]
    data = np.load(os.path.join(folder, "inputs.npz"))
    model = TPTransformer.from_config(json.load(open(os.path.join(folder, "config.json"))))
    model({"source": data["source"], "target_in": data["target_in"]})
    model.load_weights(os.path.join(folder, "model.weights.h5"))
    out = {"backend": keras.backend.backend()}
    out["logits"] = ops.convert_to_numpy(
        model({"source": data["source"], "target_in": data["target_in"]})).tolist()
    out["greedy"] = ops.convert_to_numpy(model.greedy_decode(data["source"], 7)[0]).tolist()
    out["beam"] = ops.convert_to_numpy(model.beam_search(data["source"], 3, 7)[0]).tolist()
    out["greedy_jit"] = np.asarray(
        jax.jit(lambda s: model.greedy_decode(s, 7)[0])(data["source"])).tolist()
    out["beam_jit"] = np.asarray(
        jax.jit(lambda s: model.beam_search(s, 3, 7)[0])(data["source"])).tolist()

    def loss(y_true, y_pred):  # the teacher-forcing loss of train.math, per example
        real = ops.cast(ops.not_equal(y_true, 0), "float32")
        tokens = ops.sparse_categorical_crossentropy(y_true, y_pred, from_logits=True)
        return ops.sum(tokens * real, axis=-1)

    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=loss, jit_compile=True)
    features = {"source": np.repeat(data["source"], 4, 0),
                "target_in": np.repeat(data["target_in"], 4, 0)}
    history = model.fit(features, np.repeat(data["target_out"], 4, 0), batch_size=8,
                        epochs=3, verbose=0, shuffle=False)
    out["fit_loss"] = history.history["loss"]
    json.dump(out, open(os.path.join(folder, "jax.json"), "w"))
""")


def test_jax_backend_matches_tensorflow_and_trains(tmp_path):
    keras.utils.set_random_seed(0)
    model = TPTransformer.from_preset("tiny", vocabulary_size=40)
    rng = np.random.default_rng(0)
    source = rng.integers(4, 40, size=(8, 12)).astype("int32")
    answer = rng.integers(4, 40, size=(8, 5)).astype("int32")
    target_in = np.concatenate([np.full((8, 1), START_ID, "int32"), answer], axis=1)
    target_out = np.concatenate([answer, np.full((8, 1), END_ID, "int32")], axis=1)
    logits = keras.ops.convert_to_numpy(model({"source": source, "target_in": target_in}))
    greedy = keras.ops.convert_to_numpy(model.greedy_decode(source, 7)[0])
    beam = keras.ops.convert_to_numpy(model.beam_search(source, 3, 7)[0])
    model.save_weights(str(tmp_path / "model.weights.h5"))
    (tmp_path / "config.json").write_text(json.dumps(model.get_config()))
    np.savez(tmp_path / "inputs.npz", source=source, target_in=target_in,
             target_out=target_out)

    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    done = subprocess.run([sys.executable, "-c", JAX_SIDE, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads((tmp_path / "jax.json").read_text())

    assert out["backend"] == "jax"
    np.testing.assert_allclose(np.array(out["logits"]), logits, atol=1e-5)
    assert out["greedy"] == out["greedy_jit"] == greedy.tolist()
    assert out["beam"] == out["beam_jit"] == beam.tolist()
    losses = out["fit_loss"]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]
