"""The checked-in serving/models.config: one ``python -m serving.server`` process serves the
bAbI (TPR-RNN and MemN2N), math (routed, and its default decoder alone as math_focus) and
entailment models, and each answers through serving.client."""

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from serving.client import BabiClient, EntailmentClient, MathClient
from tpr_keras.export.tp_transformer import export_math_model
from tpr_keras.data.mathematics import CharVocabulary, ModuleTemplates
from tpr_keras.models import (MathAnswerer, MathPreprocessor, MemN2N, PlainEntailmentModel,
                              RoutedTPTransformer, TPTransformer)
from tpr_keras.export.babi import export_babi_model
from tpr_keras.export.entailment import export_entailment_model

REPO = pathlib.Path(__file__).resolve().parents[2]
CONFIG = REPO / "serving" / "models.config"
QUESTIONS = ["What is the tens digit of 2934?", "Let x = 3. What is x + x?"]
PAIRS = [("(a&b)", "a"), ("a", "(a&b)")]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, export_base, task1):
    """A folder laid out as ``python -m train.export --preset ...`` leaves the repository root."""
    root = tmp_path_factory.mktemp("repo")
    shutil.copytree(os.path.join(export_base, "babi"), root / "exports/babi")
    tf.keras.utils.set_random_seed(2)
    memn2n = MemN2N.from_paper_size("single_task", vocabulary_size=len(task1.vocab),
                                max_words=task1.max_words)
    export_babi_model(memn2n, task1.vocab, root / "exports", "memn2n")
    vocab = CharVocabulary.build("".join(QUESTIONS) + "0123456789")
    tf.keras.utils.set_random_seed(0)
    math_model = TPTransformer.from_paper_size("tiny", vocabulary_size=len(vocab),
                                           vocabulary=vocab.tokens)
    export_math_model(math_model, vocab, root / "exports", "math_focus")
    tf.keras.utils.set_random_seed(3)
    expert = TPTransformer.from_paper_size("tiny", vocabulary_size=len(vocab),
                                           vocabulary=vocab.tokens)
    routed = RoutedTPTransformer(math_model, {"numbers__place_value": expert})
    templates = ModuleTemplates({"numbers__place_value": ["What is the tens digit of N?"]})
    MathAnswerer(routed, MathPreprocessor(vocab, templates=templates)).export(
        root / "exports", "math")
    tf.keras.utils.set_random_seed(1)
    entailment = PlainEntailmentModel(units=8, cell="tpru", num_roles=4, seed=1)
    export_entailment_model(entailment, root / "exports")
    return root


def test_one_server_answers_stories_math_and_entailment(runs, task1):
    info = runs / "server.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "serving.server", "--port=0", "--rest_api_port=-1",
         f"--model_config_file={CONFIG}", "--file_system_poll_wait_seconds=0",
         f"--server_info_file={info}"],
        cwd=runs, env=dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3"),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not info.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert info.exists(), proc.stderr.read()[-3000:] if proc.poll() is not None else "slow"
        started = json.loads(info.read_text())
        assert started["models"] == ["babi", "entailment", "math", "math_focus", "memn2n"]
        grpc_at = f"127.0.0.1:{started['ports']['grpc']}"
        rest_at = f"127.0.0.1:{started['ports']['rest']}"

        # Each model's answers equal its SavedModel called in this process.
        first = {}
        for name in ("babi", "memn2n"):
            saved = tf.saved_model.load(str(runs / f"exports/{name}/1"))
            want = saved.signatures["serving_default"](
                story=tf.constant(task1.stories[:3]), question=tf.constant(task1.questions[:3]))
            with BabiClient(grpc_at, name) as client:
                answers = client.ask_batch(task1.stories[:3], task1.questions[:3])
            assert [a.answer for a in answers] == [a.decode() for a in want["answer"].numpy()]
            first[name] = answers[0].answer
        rest = BabiClient(rest_at, "babi", rest=True).ask(task1.stories[0], task1.questions[0])
        assert rest.answer == first["babi"]

        for name in ("math", "math_focus"):
            math = tf.saved_model.load(str(runs / f"exports/{name}/1"))
            want = math.signatures["serving_default"](question=tf.constant(QUESTIONS))
            with MathClient(grpc_at, name) as client:
                solutions = client.solve_batch(QUESTIONS)
            assert [s.answer for s in solutions] == [a.decode() for a in want["answer"].numpy()]
            np.testing.assert_allclose([s.log_prob for s in solutions],
                                       want["log_prob"].numpy(), rtol=1e-5)

        entail = tf.saved_model.load(str(runs / "exports/entailment/1"))
        want = entail.signatures["serving_default"](
            premise=tf.constant([p for p, _ in PAIRS]),
            hypothesis=tf.constant([h for _, h in PAIRS]))
        with EntailmentClient(grpc_at, "entailment") as client:
            verdicts = client.entails_batch([p for p, _ in PAIRS], [h for _, h in PAIRS])
        np.testing.assert_allclose([v.probability for v in verdicts],
                                   want["probability"].numpy(), rtol=1e-5)
        assert all(v.version == 1 for v in verdicts)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    stats = json.loads(info.read_text())["stats"]
    assert stats["requests"]["gRPC Predict"] == 5 and stats["requests"]["REST predict"] == 1
    assert stats["errors"] == {}
