"""Every model family on the JAX backend: the same weights give TensorFlow's logits
(<= 1e-5), TPTransformer the same greedy and beam answers eagerly and under ``jax.jit``,
and ``fit`` trains each with a jit-compiled step, also under ``mixed_bfloat16`` (whose
forward pass is within 2 % of the largest float32 logit) (TPR-RNN through its triangular
solve, the entailment model through TPRU's ``keras.ops.scan`` loop, masked). The
TP-Transformer has one encoder and one decoder layer (every kind of its layers): JAX
compiles every step, decoder and eager op for each layer, which took most of the time.
The JAX side runs in one subprocess for all four families (the backend is chosen before
Keras is imported; one interpreter start, not four), started once the module's models
exist and running while this process computes TensorFlow's answers; skipped where jax is
not installed (the ``jax`` extra)."""

import json
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from tpr_keras.models import TPRRNN, MemN2N, PlainEntailmentModel, TPTransformer
from tests.jax_processes import jax_env

pytest.importorskip("jax")

END_ID, START_ID = 3, 2

JAX_SIDE = textwrap.dedent("""
    import json, os, sys
    os.environ["KERAS_BACKEND"] = "jax"
    import jax
    import keras
    import numpy as np
    from keras import ops
    from tpr_keras import models

    def loss(y_true, y_pred):  # per example: one answer token, or a pad-masked answer
        if y_pred.shape[-1] == 1:  # one logit: binary
            return ops.binary_crossentropy(ops.cast(ops.reshape(y_true, (-1, 1)), "float32"),
                                           y_pred, from_logits=True)[:, 0]
        tokens = ops.sparse_categorical_crossentropy(y_true, y_pred, from_logits=True)
        if len(y_true.shape) == 1:
            return tokens
        return ops.sum(tokens * ops.cast(ops.not_equal(y_true, 0), "float32"), axis=-1)

    def fit_losses(model, data, labels):
        model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=loss, jit_compile=True)
        history = model.fit({k: np.repeat(v, 4, 0) for k, v in data.items()},
                            np.repeat(labels, 4, 0), batch_size=8, epochs=3, verbose=0,
                            shuffle=False)
        return history.history["loss"]

    def family_on_jax(folder, family):
        data = dict(np.load(os.path.join(folder, "inputs.npz")))
        labels = data.pop("labels")
        config = json.load(open(os.path.join(folder, "config.json")))
        model = getattr(models, family).from_config(config)
        model(data)
        model.load_weights(os.path.join(folder, "model.weights.h5"))
        out = {"backend": keras.backend.backend(),
               "logits": ops.convert_to_numpy(model(data)).tolist()}
        if family == "TPTransformer":
            source = data["source"]
            out["greedy"] = ops.convert_to_numpy(model.greedy_decode(source, 7)[0]).tolist()
            out["beam"] = ops.convert_to_numpy(model.beam_search(source, 3, 7)[0]).tolist()
            out["greedy_jit"] = np.asarray(
                jax.jit(lambda s: model.greedy_decode(s, 7)[0])(source)).tolist()
            out["beam_jit"] = np.asarray(
                jax.jit(lambda s: model.beam_search(s, 3, 7)[0])(source)).tolist()
        out["fit_loss"] = fit_losses(model, data, labels)

        # The same family under mixed_bfloat16 on JAX: forward with the same weights, and fit.
        mixed = getattr(models, family).from_config({**config, "dtype": "mixed_bfloat16"})
        mixed(data)
        mixed.load_weights(os.path.join(folder, "model.weights.h5"))
        out["mixed_logits"] = ops.convert_to_numpy(ops.cast(mixed(data), "float32")).tolist()
        out["mixed_fit_loss"] = fit_losses(mixed, data, labels)
        json.dump(out, open(os.path.join(folder, "jax.json"), "w"))

    for folder, family in zip(sys.argv[1::2], sys.argv[2::2]):
        family_on_jax(folder, family)
""")


def tp_transformer_case():
    model = TPTransformer.from_paper_size("tiny", vocabulary_size=40, num_encoder_layers=1,
                                          num_decoder_layers=1)
    rng = np.random.default_rng(0)
    source = rng.integers(4, 40, size=(8, 12)).astype("int32")
    answer = rng.integers(4, 40, size=(8, 5)).astype("int32")
    data = {"source": source,
            "target_in": np.concatenate([np.full((8, 1), START_ID, "int32"), answer], axis=1)}
    target_out = np.concatenate([answer, np.full((8, 1), END_ID, "int32")], axis=1)
    return model, data, target_out


def memn2n_case():
    model = MemN2N(vocabulary_size=20, max_words=6, embedding_dim=8, linear_start=True)
    rng = np.random.default_rng(0)
    data = {"story": rng.integers(0, 20, size=(8, 5, 6)).astype("int32"),
            "question": rng.integers(1, 20, size=(8, 6)).astype("int32")}
    return model, data, rng.integers(1, 20, size=(8,)).astype("int32")


def tpr_rnn_case():
    model = TPRRNN.from_paper_size("single_task", vocabulary_size=20, max_words=6)
    rng = np.random.default_rng(0)
    story = rng.integers(1, 20, size=(8, 5, 6)).astype("int32")
    story[:3, 3:] = 0  # short stories: padded sentences
    data = {"story": story, "question": rng.integers(1, 20, size=(8, 6)).astype("int32")}
    return model, data, rng.integers(1, 20, size=(8,)).astype("int32")


def entailment_case():
    model = PlainEntailmentModel(vocabulary_size=40, units=8, cell="tpru", num_roles=4, seed=0)
    rng = np.random.default_rng(0)
    a = rng.integers(1, 40, size=(8, 7)).astype("int32")
    b = rng.integers(1, 40, size=(8, 5)).astype("int32")
    a[:4, 4:] = 0  # masked steps
    b[2:5, 3:] = 0
    return model, {"a": a, "b": b}, rng.integers(0, 2, size=(8,)).astype("int32")


CASES = {"tp_transformer": tp_transformer_case, "memn2n": memn2n_case,
         "tpr_rnn": tpr_rnn_case, "entailment": entailment_case}


class JaxSide:
    """The four families built here (seed 0 each), saved, and :data:`JAX_SIDE` running on
    them in a subprocess; :meth:`result` waits for it and checks what every family shares."""

    def __init__(self, root):
        self.cases, args = {}, []
        for name, case in CASES.items():
            keras.utils.set_random_seed(0)
            model, data, labels = case()
            folder = root / name
            folder.mkdir()
            model.save_weights(str(folder / "model.weights.h5"))
            (folder / "config.json").write_text(json.dumps(model.get_config()))
            np.savez(folder / "inputs.npz", labels=labels, **data)
            self.cases[name] = (model, data, folder)
            args += [str(folder), type(model).__name__]
        env = jax_env()  # JAX_SIDE sets the backend itself too
        self.log = root / "jax.log"
        with open(self.log, "w") as log:
            self.process = subprocess.Popen([sys.executable, "-c", JAX_SIDE, *args], env=env,
                                            stdout=log, stderr=subprocess.STDOUT)

    def result(self, name):
        self.process.wait(timeout=900)
        assert self.process.returncode == 0, self.log.read_text()[-3000:]
        out = json.loads((self.cases[name][2] / "jax.json").read_text())
        assert out["backend"] == "jax"
        for key in ("fit_loss", "mixed_fit_loss"):
            losses = out[key]
            assert np.isfinite(losses).all() and losses[-1] < losses[0], (key, losses)
        logits = np.array(out["logits"])
        np.testing.assert_allclose(np.array(out["mixed_logits"]), logits,
                                   atol=2e-2 * np.abs(logits).max() + 1e-6)  # bfloat16
        return out

    def close(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def jax_side(tmp_path_factory):
    side = JaxSide(tmp_path_factory.mktemp("jax_backend"))
    yield side
    side.close()


def test_tp_transformer_on_jax_matches_tensorflow_and_trains(jax_side):
    model, data, _ = jax_side.cases["tp_transformer"]
    source = data["source"]
    logits = keras.ops.convert_to_numpy(model(data))
    greedy = keras.ops.convert_to_numpy(model.greedy_decode(source, 7)[0]).tolist()
    beam = keras.ops.convert_to_numpy(model.beam_search(source, 3, 7)[0]).tolist()

    out = jax_side.result("tp_transformer")
    np.testing.assert_allclose(np.array(out["logits"]), logits, atol=1e-5)
    assert out["greedy"] == out["greedy_jit"] == greedy
    assert out["beam"] == out["beam_jit"] == beam


def check_logits(jax_side, name):
    """The family's TensorFlow logits against JAX's."""
    model, data, _ = jax_side.cases[name]
    logits = keras.ops.convert_to_numpy(model(data))

    out = jax_side.result(name)
    np.testing.assert_allclose(np.array(out["logits"]), logits, atol=1e-5)


def test_memn2n_on_jax_matches_tensorflow_and_trains(jax_side):
    check_logits(jax_side, "memn2n")


def test_tpr_rnn_on_jax_matches_tensorflow_and_trains(jax_side):
    check_logits(jax_side, "tpr_rnn")


def test_entailment_model_on_jax_matches_tensorflow_and_trains(jax_side):
    check_logits(jax_side, "entailment")
