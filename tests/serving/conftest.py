"""Fixtures for the serving tests: a small TPR-RNN, its export, an in-process server.

The model is untrained (answers-equal tests do not need a trained model). With
``../shared/data`` it uses the real task-1 vocabulary and test stories, otherwise a
generated task-1-like set.
"""

import os

import grpc
import keras
import numpy as np
import pytest
from tensorflow_serving.apis import prediction_service_pb2_grpc
from tensorflow_serving.config import model_server_config_pb2

from serving.export import export_babi_model
from tpr_keras.export.babi_tokenizer import join_story
from serving.core.manager import ModelManager
from serving.model_server.server import ModelServer
from tests.once_per_run import once_per_run
from tpr_keras.data import babi
from tpr_keras.export.entailment import export_entailment_model
from tpr_keras.models import TPRRNN, PlainEntailmentModel

PEOPLE = ["mary", "john", "sandra", "daniel"]
PLACES = ["kitchen", "garden", "office", "hallway", "bathroom", "bedroom"]


def generated_samples(n=60, seed=0):
    rng = np.random.default_rng(seed)
    samples = []
    for i in range(n):
        story, where = [], {}
        for _ in range(int(rng.integers(1, 8))):
            person, place = rng.choice(PEOPLE), rng.choice(PLACES)
            where[person] = place
            story.append([person, "went", "to", "the", place, "."])
        person = rng.choice(sorted(where))
        samples.append(babi.Sample(story, ["where", "is", person, "?"], where[person], 1, i))
    return samples


class Task1:
    """Task-1 test samples, their vocabulary and loader ids."""

    def __init__(self, samples, vocab, max_words=None):
        self.samples = samples
        self.vocab = vocab
        self.encoded = babi.encode_samples(samples, vocab, max_words=max_words)
        self.max_words = self.encoded.max_words
        self.stories = [join_story(s.story) for s in samples]
        self.questions = [" ".join(s.question) for s in samples]

    def story_ids(self, indices=None):
        """Loader ids padded to the longest story: int32[N, S, W]."""
        indices = range(len(self.samples)) if indices is None else indices
        stories = [self.encoded.story(i) for i in indices]
        out = np.zeros((len(stories), max([len(s) for s in stories] + [0]), self.max_words),
                       np.int32)
        for row, story in enumerate(stories):
            out[row, : len(story)] = story
        return out

    def question_ids(self, indices=None):
        indices = range(len(self.samples)) if indices is None else indices
        return self.encoded.questions[list(indices)]


#: A trained model to test with instead (e.g. runs/babi-task1/export/model.keras, with its
#: vocab.txt next to it): TPR_KERAS_SERVING_MODEL=... python -m pytest tests/serving
TRAINED = os.environ.get("TPR_KERAS_SERVING_MODEL")


@pytest.fixture(scope="session")
def trained_model():
    if not TRAINED:
        return None
    import tpr_keras.models.all_families  # noqa: F401  (registers the classes)

    return keras.models.load_model(TRAINED)


@pytest.fixture(scope="session")
def task1(trained_model):
    data = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "babi")
    try:
        root = babi.find_babi_dir(data, download=False)
        samples = babi.parse_babi_file(babi.task_files(root, 1)[1])
    except FileNotFoundError:
        samples = generated_samples()
    if trained_model is not None:
        vocab = babi.Vocabulary.load(os.path.join(os.path.dirname(TRAINED), "vocab.txt"))
        return Task1(samples, vocab, trained_model.max_words)
    return Task1(samples, babi.Vocabulary.from_samples(samples))


@pytest.fixture(scope="session")
def model(task1, trained_model):
    """Untrained, with N(0, 0.3) weights: the initial weights give near-tied logits, whose
    argmax could flip under float reordering; these give clear margins."""
    if trained_model is not None:
        return trained_model
    keras.utils.set_random_seed(0)
    model = TPRRNN.from_paper_size("single_task", vocabulary_size=len(task1.vocab),
                               max_words=task1.max_words)
    rng = np.random.default_rng(0)
    for v in model.weights:
        v.assign(rng.normal(0.0, 0.3, v.shape).astype("float32"))
    return model


@pytest.fixture(scope="session")
def keras_answers(task1, model):
    """The Keras model's answers and logits on every task-1 test sample (loader ids)."""
    logits = model.predict({"story": task1.story_ids(), "question": task1.question_ids()},
                           batch_size=500, verbose=0)
    return np.array(task1.vocab.tokens)[logits.argmax(-1)], logits


@pytest.fixture(scope="session")
def export_base(tmp_path_factory, request):
    """The conftest model's export, ``<base>/babi/1`` (read-only): made once per test run
    (:func:`tests.once_per_run.once_per_run`; the model is deterministic, so every test
    process would export the same), the model built only by the process that makes it."""

    def make(folder):
        model, task1 = request.getfixturevalue("model"), request.getfixturevalue("task1")
        export_babi_model(model, task1.vocab, folder, "babi")
        return {}

    return once_per_run(tmp_path_factory, "babi-export", make)[0]


@pytest.fixture(scope="session")
def version_dir(export_base):
    return os.path.join(export_base, "babi", "1")


@pytest.fixture(scope="session")
def entailment_export(tmp_path_factory):
    """An untrained entailment model (TPR cell, 8 units) and its export (read-only):
    ``(model, <base>/entailment/1)``. The model is seeded, so every test process builds the
    same one; the export is made once per test run (:func:`tests.once_per_run.once_per_run`)."""
    keras.utils.set_random_seed(1)
    model = PlainEntailmentModel(units=8, cell="tpru", num_roles=4, seed=1)

    def make(folder):
        return {"path": os.path.relpath(export_entailment_model(model, folder), folder)}

    folder, made = once_per_run(tmp_path_factory, "entailment-export", make)
    return model, str(folder / made["path"])


def model_config(name, base_path, **kwargs):
    return model_server_config_pb2.ModelConfig(name=name, base_path=str(base_path),
                                               model_platform="tensorflow", **kwargs)


@pytest.fixture(scope="session")
def make_model_config():
    """:func:`model_config`, for test modules (conftest is not importable by name)."""
    return model_config


@pytest.fixture(scope="module")
def babi_server(export_base):
    """Starts an in-process server of the conftest's bAbI export on free loopback ports
    (gRPC, and REST): ``babi_server(**ModelServer options)``; each one stops at the end of
    the test module, so a module that needs its own options still starts one server."""
    servers = []

    def start(**options):
        manager = ModelManager([model_config("babi", os.path.join(export_base, "babi"))])
        servers.append(ModelServer(manager, port=0, rest_api_port=0, **options).start())
        return servers[-1]

    yield start
    for srv in servers:
        srv.stop(grace=2)


@pytest.fixture(scope="module")
def server(babi_server):
    return babi_server()


@pytest.fixture(scope="module")
def stub(server):
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    yield prediction_service_pb2_grpc.PredictionServiceStub(channel)
    channel.close()


# --------------------------------------------------------------------------------------
# TF Serving's test models, built here as its testdata/saved_model_half_plus_two.py has
# them: y = 0.5 * x + b; predict ("x" [-1, 1] -> "y"), regress and classify signatures over
# serialized tf.Example ("x", and "x2" defaulting to 0); version folder 00000123.
# --------------------------------------------------------------------------------------


def _tf1_half_plus(path, b, signature_keys=None):
    """``signature_keys``: keep only these signatures (half_plus_three has its regression
    signature under the key "tensorflow/serving/regress", as in TF Serving's docs)."""
    import tensorflow as tf

    v1 = tf.compat.v1
    features = {"x": v1.FixedLenFeature([1], tf.float32),
                "x2": v1.FixedLenFeature([1], tf.float32, default_value=[0.0])}
    with tf.Graph().as_default(), v1.Session() as sess:
        a_var, b_var = v1.Variable(0.5, name="a"), v1.Variable(float(b), name="b")
        c_var = v1.Variable(float(b) + 1.0, name="c")
        serialized = v1.placeholder(tf.string, name="tf_example", shape=[None])
        parsed = v1.parse_example(serialized, features)
        x = tf.identity(parsed["x"], name="x")
        y = tf.identity(a_var * x + b_var, name="y")
        y2 = tf.identity(a_var * x + c_var, name="y2")
        x2 = tf.identity(parsed["x2"], name="x2")
        y3 = tf.identity(a_var * x2 + c_var, name="y3")
        info = v1.saved_model.utils.build_tensor_info
        sc = v1.saved_model.signature_constants

        def sig(inputs, outputs, method):
            return v1.saved_model.signature_def_utils.build_signature_def(
                {k: info(t) for k, t in inputs.items()},
                {k: info(t) for k, t in outputs.items()}, method)

        signatures = {
            "regress_x_to_y": sig({sc.REGRESS_INPUTS: serialized}, {sc.REGRESS_OUTPUTS: y},
                                  sc.REGRESS_METHOD_NAME),
            "regress_x_to_y2": sig({sc.REGRESS_INPUTS: serialized}, {sc.REGRESS_OUTPUTS: y2},
                                   sc.REGRESS_METHOD_NAME),
            "regress_x2_to_y3": sig({sc.REGRESS_INPUTS: x2}, {sc.REGRESS_OUTPUTS: y3},
                                    sc.REGRESS_METHOD_NAME),
            "classify_x_to_y": sig({sc.CLASSIFY_INPUTS: serialized},
                                   {sc.CLASSIFY_OUTPUT_SCORES: y}, sc.CLASSIFY_METHOD_NAME),
            sc.DEFAULT_SERVING_SIGNATURE_DEF_KEY: sig({"x": x}, {"y": y},
                                                      sc.PREDICT_METHOD_NAME),
        }
        signatures["tensorflow/serving/regress"] = signatures["regress_x_to_y"]
        signatures["tensorflow/serving/classify"] = signatures["classify_x_to_y"]
        if signature_keys is not None:
            signatures = {k: signatures[k] for k in signature_keys}
        sess.run(v1.global_variables_initializer())
        builder = v1.saved_model.Builder(str(path))
        builder.add_meta_graph_and_variables(sess, ["serve"], signature_def_map=signatures)
        builder.save()


def _tf2_half_plus(path, b):
    import tensorflow as tf

    features = {"x": tf.io.FixedLenFeature([1], tf.float32),
                "x2": tf.io.FixedLenFeature([1], tf.float32, default_value=[0.0])}
    serialized = tf.TensorSpec([None], tf.string, name="inputs")

    class HalfPlus(tf.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = tf.Variable(0.5), tf.Variable(float(b))
            self.c = tf.Variable(float(b) + 1.0)

        @tf.function(input_signature=[tf.TensorSpec([None, 1], tf.float32)])
        def predict(self, x):
            return {"y": self.a * x + self.b}

        @tf.function(input_signature=[serialized])
        def regress_xy(self, inputs):
            return {"outputs": self.a * tf.io.parse_example(inputs, features)["x"] + self.b}

        @tf.function(input_signature=[serialized])
        def regress_xy2(self, inputs):
            return {"outputs": self.a * tf.io.parse_example(inputs, features)["x"] + self.c}

        @tf.function(input_signature=[serialized])
        def classify_xy(self, inputs):
            return {"scores": self.a * tf.io.parse_example(inputs, features)["x"] + self.b}

    m = HalfPlus()
    tf.saved_model.save(m, str(path), signatures={
        "serving_default": m.predict, "regress_x_to_y": m.regress_xy,
        "regress_x_to_y2": m.regress_xy2, "classify_x_to_y": m.classify_xy})


@pytest.fixture(scope="session")
def half_plus_base(tmp_path_factory):
    """A model base folder with TF Serving's test models, each in version folder 00000123:
    ``half_plus_two`` and ``half_plus_three`` (TF1 graph exports) and ``half_plus_two_tf2``
    (a TF2 ``tf.function`` export; its predict input is named ``x`` too). Read-only, made
    once per test run (:func:`tests.once_per_run.once_per_run`)."""

    def make(base):
        _tf1_half_plus(base / "half_plus_two" / "00000123", 2.0, [
            "regress_x_to_y", "regress_x_to_y2", "regress_x2_to_y3", "classify_x_to_y",
            "serving_default"])
        _tf1_half_plus(base / "half_plus_three" / "00000123", 3.0,
                       ["serving_default", "tensorflow/serving/regress"])
        _tf2_half_plus(base / "half_plus_two_tf2" / "00000123", 2.0)
        return {}

    return once_per_run(tmp_path_factory, "tf_serving_testdata", make)[0]
