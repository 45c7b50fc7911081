"""The layers, ops and model classes need no TensorFlow: in a process where ``import
tensorflow`` fails, on Keras' JAX backend, every family builds and answers, and TPRU runs
its loop; the recipes' "auto" finds the devices. (The SavedModel exporters and in-graph
tokenizers, TensorFlow's, are ``tpr_keras.export``; the families name them lazily.)

Each family answers in one call compiled by ``jax.jit``: eagerly, JAX compiles every op of
the model on its own, which takes far longer here; the eager forward passes on JAX are the
``every_backend`` tests'."""

import pathlib
import subprocess
import sys
import textwrap

import pytest

from tests.jax_processes import jax_env

pytest.importorskip("jax")

REPO = pathlib.Path(__file__).resolve().parents[2]

WITHOUT_TENSORFLOW = textwrap.dedent("""
    import os, sys
    sys.modules["tensorflow"] = None  # any import of tensorflow now raises ImportError
    os.environ["KERAS_BACKEND"] = "jax"
    import jax
    import numpy as np
    from keras import ops
    import tpr_keras.layers, tpr_keras.ops  # noqa: F401
    from tpr_keras.models import TPRRNN, MemN2N, PlainEntailmentModel, TPTransformer

    rng = np.random.default_rng(0)
    babi = {"story": rng.integers(1, 20, size=(2, 4, 6)).astype("int32"),
            "question": rng.integers(1, 20, size=(2, 6)).astype("int32")}
    pair = {"a": rng.integers(1, 40, size=(2, 7)).astype("int32"),
            "b": rng.integers(1, 40, size=(2, 5)).astype("int32")}
    source = rng.integers(4, 40, size=(2, 9)).astype("int32")

    def answer(model, inputs):  # the model builds in its constructor
        assert model.built and model.weights
        return jax.jit(lambda x: model(x))(inputs)

    shapes = {
        "TPRRNN": answer(TPRRNN.from_paper_size("single_task", vocabulary_size=20,
                                                max_words=6), babi),
        "MemN2N": answer(MemN2N(vocabulary_size=20, max_words=6, embedding_dim=8), babi),
        "PlainEntailmentModel": answer(PlainEntailmentModel(
            vocabulary_size=40, units=8, cell="tpru", num_roles=4, seed=0), pair),
        "TPTransformer": answer(TPTransformer.from_paper_size("tiny", vocabulary_size=40),
                                {"source": source, "target_in": source[:, :4]}),
    }
    # The recipes' "auto" reads the devices from JAX, not TensorFlow.
    from tpr_keras.training.recipes.entailment import resolve_recipe
    from tpr_keras.training.recipes.tp_transformer import resolve_size
    print("recipe", resolve_recipe("auto")[0], "size", resolve_size("auto")[0])
    for name, out in shapes.items():
        assert np.isfinite(ops.convert_to_numpy(out)).all(), name
        print(name, tuple(out.shape))
    print("tensorflow" in sys.modules and sys.modules["tensorflow"] is not None)
""")


def test_layers_ops_and_models_run_where_tensorflow_cannot_be_imported():
    env = jax_env(PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", WITHOUT_TENSORFLOW], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.split("\n")
    assert "TPRRNN (2, 20)" in lines and "MemN2N (2, 20)" in lines
    assert "PlainEntailmentModel (2, 1)" in lines and "TPTransformer (2, 4, 40)" in lines
    assert "recipe cpu size tiny" in lines  # this CPU: the CPU recipe and size
    assert lines[-2] == "False"  # TensorFlow was never loaded
