"""The task models' shared part (tpr_keras.models.task_models): presets of the right task
only, request checks, overrides; their docstring examples run as shown; and all three task
models on Keras' JAX backend, in a process where TensorFlow cannot be imported, answering
as on TensorFlow."""

import doctest
import importlib
import json
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tpr_keras.models import BabiAnswerer, EntailmentClassifier, MathAnswerer
from tpr_keras.models.task_models import (
    TASK_MODEL_OF_TASK,
    check_same_length,
    check_texts,
    trained_preset,
)
from tpr_keras.presets import PresetError, load_preset, shipped_presets
from tests.jax_processes import jax_env

REPO = pathlib.Path(__file__).resolve().parents[2]
BABI = (["Mary went to the kitchen. John moved to the garden.",
         ["Sandra went to the office.", "Sandra journeyed to the hallway."]],
        ["Where is Mary?", "Where is Zorblax?"])
ENTAILMENT = (["(p&q)", "~((p>q))"], ["(p|q)", "(q&~(p))"])
MATH = ["What is the hundreds digit of 81379118?", "Which is smaller: 413.34 or -0.099?"]

ON_JAX = textwrap.dedent("""
    import json, os, sys
    sys.modules["tensorflow"] = None  # any import of tensorflow now raises ImportError
    os.environ["KERAS_BACKEND"] = "jax"
    import keras
    from tpr_keras.models import BabiAnswerer, EntailmentClassifier, MathAnswerer
    babi, entailment, math = json.loads(sys.argv[1])
    out = {"backend": keras.backend.backend()}
    for name in ("tpr_rnn_babi_all_tasks", "memn2n_babi_all_tasks"):
        answer = BabiAnswerer.from_preset(name).predict(*babi, top_k=2)
        out[name] = {k: v.tolist() for k, v in answer.items()}
    answer = EntailmentClassifier.from_preset("tpru32_entailment").predict(*entailment)
    out["tpru32_entailment"] = {k: v.tolist() for k, v in answer.items()}
    for name in ("tp_transformer_math_focus", "tp_transformer_math_everyday"):
        answer = MathAnswerer.from_preset(name).predict(math)  # everyday: float16 weights
        out[name] = {k: v.tolist() for k, v in answer.items()}
    print(json.dumps(out))
""")
#: JAX's and TensorFlow's float32 kernels differ in summation order: the backends' logits
#: agree to 1e-5 (tests/models/test_jax_backend.py), and a softmax or sigmoid moves by at
#: most about twice a logit difference, relatively; a log-probability summed over 31
#: decoding steps by at most 31 of them.
SCORE_TOLERANCE = dict(rtol=1e-4, atol=1e-5)
LOG_PROB_TOLERANCE = dict(rtol=0, atol=31 * 2e-5)


def test_every_shipped_preset_has_a_task_model():
    tasks = {load_preset(name).metadata["task"] for name in shipped_presets()}
    assert tasks <= set(TASK_MODEL_OF_TASK)
    assert trained_preset(load_preset("tpru32_entailment"), "entailment").class_name == (
        "BiDAFEntailmentModel")  # a loaded preset is taken as it is


def test_a_preset_of_another_task_names_the_task_model_to_use():
    with pytest.raises(PresetError, match="task 'babi', not 'math'; load it with "
                                          "BabiAnswerer.from_preset"):
        MathAnswerer.from_preset("memn2n_babi_all_tasks")
    with pytest.raises(PresetError, match="not a preset folder"):
        BabiAnswerer.from_preset(REPO / "tpr_keras")


@pytest.mark.parametrize("module", [
    "babi.babi_answerer", "babi.babi_preprocessor", "entailment.entailment_classifier",
    "entailment.entailment_preprocessor", "tp_transformer.tp_transformer_answerer",
    "tp_transformer.tp_transformer_preprocessor", "task_models"])
def test_the_docstring_examples_give_what_they_show(module):
    found = doctest.testmod(importlib.import_module(f"tpr_keras.models.{module}"))
    assert found.attempted >= 1 and found.failed == 0, found


def test_request_checks_name_the_problem():
    assert check_texts("questions", "Where is Mary?") == ["Where is Mary?"]
    with pytest.raises(ValueError, match=r"questions\[1\] is a NoneType, not a string"):
        check_texts("questions", ["Where is Mary?", None])
    with pytest.raises(ValueError, match="no stories given"):
        check_texts("stories", ())
    assert check_same_length(a=[1, 2], b="xy") == 2
    with pytest.raises(ValueError, match="mismatched list lengths: a: 2, b: 3"):
        check_same_length(a=[1, 2], b=[1, 2, 3])


def test_overrides_reach_the_backbone():
    answerer = BabiAnswerer.from_preset("tpr_rnn_babi_all_tasks", implementation="recurrent")
    assert answerer.backbone.get_config()["implementation"] == "recurrent"
    assert answerer.predict(*[[x[0]] for x in BABI])["answer"].tolist() == ["kitchen"]


@pytest.mark.slow
def test_the_task_models_answer_alike_on_jax_without_tensorflow():
    pytest.importorskip("jax")
    env = jax_env(PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", ON_JAX, json.dumps([BABI, ENTAILMENT, MATH])],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    jax = json.loads(done.stdout.strip().split("\n")[-1])
    assert jax["backend"] == "jax"
    for name in ("tpr_rnn_babi_all_tasks", "memn2n_babi_all_tasks"):
        here = BabiAnswerer.from_preset(name).predict(*BABI, top_k=2)
        for key in ("answer", "candidates", "unknown_words"):
            assert jax[name][key] == here[key].tolist(), (name, key)
        np.testing.assert_allclose(jax[name]["scores"], here["scores"], **SCORE_TOLERANCE)
    here = EntailmentClassifier.from_preset("tpru32_entailment").predict(*ENTAILMENT)
    assert jax["tpru32_entailment"]["entails"] == here["entails"].tolist() == [True, False]
    np.testing.assert_allclose(jax["tpru32_entailment"]["probability"], here["probability"],
                               **SCORE_TOLERANCE)
    for name in ("tp_transformer_math_focus", "tp_transformer_math_everyday"):
        here = MathAnswerer.from_preset(name).predict(MATH)
        math = jax[name]
        assert math["answer"] == here["answer"].tolist() == ["1", "-0.099"], name
        np.testing.assert_allclose(math["log_prob"], here["log_prob"], **LOG_PROB_TOLERANCE)


def test_load_weights_false_reaches_the_task_class_through_the_base_class():
    """``TaskModel.from_preset`` dispatches to the preset's task class and passes
    ``load_weights`` on: fresh weights, not the preset's, with the preset's vocabulary."""
    from tpr_keras.models.task_models import TaskModel

    name = "tpr_rnn_babi_all_tasks"
    trained = TaskModel.from_preset(name)
    fresh = TaskModel.from_preset(name, load_weights=False)
    assert type(fresh) is type(trained) is BabiAnswerer
    assert fresh.preprocessor.vocabulary.tokens == trained.preprocessor.vocabulary.tokens
    differs = [not np.array_equal(a, b) for a, b in
               zip(fresh.backbone.get_weights(), trained.backbone.get_weights())]
    assert len(differs) == len(trained.backbone.get_weights()) > 0
    assert any(differs)
