"""The checked-in serving/models.config: one ``python -m serving.server`` process serves the
bAbI (TPR-RNN and MemN2N), math (routed, and its default decoder alone as math_focus) and
entailment models, exported from the shipped presets as its comments say, and each answers
through serving.client."""

import json
import os
import pathlib
import signal
import time

import numpy as np
import pytest
import tensorflow as tf

from serving.client import BabiClient, EntailmentClient, MathClient
from tests import preloaded_python
from tests.serving.saved_models import load
from tests.serving.shared_exports import preset_export

REPO = pathlib.Path(__file__).resolve().parents[2]
CONFIG = REPO / "serving" / "models.config"
QUESTIONS = ["What is the tens digit of 2934?", "Let x = 3. What is x + x?"]
PAIRS = [("(a&b)", "a"), ("a", "(a&b)")]
#: The shipped preset each served model of serving/models.config is exported from.
PRESETS = {"babi": "tpr_rnn_babi_all_tasks", "memn2n": "memn2n_babi_all_tasks",
           "math": "tp_transformer_math_everyday", "math_focus": "tp_transformer_math_focus",
           "entailment": "tpru32_entailment"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A folder laid out as ``python -m train.export --preset ...`` leaves the repository
    root: the shipped presets' exports (made once per test run, shared with tests/presets)."""
    root = tmp_path_factory.mktemp("repo")
    (root / "exports").mkdir()
    for name, preset in PRESETS.items():
        version, served_name = preset_export(tmp_path_factory, preset)
        assert served_name == name
        os.symlink(version.parent, root / "exports" / name)
    return root


def in_process_outputs(runs, task1):
    """Each model's outputs on the test's inputs, from its SavedModel called in this
    process: ``{model name: outputs}``."""
    want = {}
    for name in ("babi", "memn2n"):
        want[name] = load(runs / f"exports/{name}/1").signatures["serving_default"](
            story=tf.constant(task1.stories[:3]), question=tf.constant(task1.questions[:3]))
    for name in ("math", "math_focus"):
        want[name] = load(runs / f"exports/{name}/1").signatures["serving_default"](
            question=tf.constant(QUESTIONS))
    want["entailment"] = load(runs / "exports/entailment/1").signatures["serving_default"](
        premise=tf.constant([p for p, _ in PAIRS]),
        hypothesis=tf.constant([h for _, h in PAIRS]))
    return want


def test_one_server_answers_stories_math_and_entailment(runs, task1):
    info = runs / "server.json"
    proc = preloaded_python.spawn(
        ["-m", "serving.server", "--port=0", "--rest_api_port=-1",
         f"--model_config_file={CONFIG}", "--file_system_poll_wait_seconds=0",
         f"--server_info_file={info}"],
        cwd=runs, env=dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3"))
    try:
        # Each model's answers must equal its SavedModel called in this process: computed
        # while the server starts.
        want = in_process_outputs(runs, task1)
        deadline = time.monotonic() + 240
        while not info.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert info.exists(), proc.stderr[-3000:] if proc.poll() is not None else "slow"
        started = json.loads(info.read_text())
        assert started["models"] == ["babi", "entailment", "math", "math_focus", "memn2n"]
        grpc_at = f"127.0.0.1:{started['ports']['grpc']}"
        rest_at = f"127.0.0.1:{started['ports']['rest']}"

        first = {}
        for name in ("babi", "memn2n"):
            with BabiClient(grpc_at, name) as client:
                answers = client.ask_batch(task1.stories[:3], task1.questions[:3])
            assert [a.answer for a in answers] == [
                a.decode() for a in want[name]["answer"].numpy()]
            first[name] = answers[0].answer
        rest = BabiClient(rest_at, "babi", rest=True).ask(task1.stories[0], task1.questions[0])
        assert rest.answer == first["babi"]

        for name in ("math", "math_focus"):
            with MathClient(grpc_at, name) as client:
                solutions = client.solve_batch(QUESTIONS)
            assert [s.answer for s in solutions] == [
                a.decode() for a in want[name]["answer"].numpy()]
            np.testing.assert_allclose([s.log_prob for s in solutions],
                                       want[name]["log_prob"].numpy(), rtol=1e-5)

        with EntailmentClient(grpc_at, "entailment") as client:
            verdicts = client.entails_batch([p for p, _ in PAIRS], [h for _, h in PAIRS])
        np.testing.assert_allclose([v.probability for v in verdicts],
                                   want["entailment"]["probability"].numpy(), rtol=1e-5)
        assert all(v.version == 1 for v in verdicts)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    stats = json.loads(info.read_text())["stats"]
    assert stats["requests"]["gRPC Predict"] == 5 and stats["requests"]["REST predict"] == 1
    assert stats["errors"] == {}
