"""What a model version leaves behind when it is unloaded: nothing that grows.

A ModelManager loads and unloads many versions of a small SavedModel built here (a
vocabulary asset in a lookup table, a 4 MiB variable and a 4 MiB constant in its function,
a warm-up request: the parts a real export has), running requests on each. After each
poll the unloaded version's graph is gone without the test collecting garbage (it lives
in reference cycles, which :mod:`serving.core.memory` collects), the process's RSS grows
by far less per version than the graph a version would leave behind, and descriptors and
threads come back to where they were.

The objects the test process holds when the test starts are frozen (:func:`gc.freeze`, as
tests/conftest.py freezes what it holds after collection): the full collection each poll
runs then walks only what the test made (the versions' graphs among them), not every object
the earlier tests of the process left too, which made each of the 21 collections cost a
second or more.
"""

import gc
import os
import shutil
import weakref

import numpy as np
import pytest

from serving.core._tf import tf
from serving.core.manager import ModelManager
from tests.serving.server_requests import model_config
from tpr_keras.export.versions import write_warmup_requests

ROWS = 4096  # a 4096 x 256 float32 variable and constant: 4 MiB each
WORDS = ["mary", "john", "kitchen", "garden"]
#: Versions loaded after the first: the slope is fitted to the last VERSIONS - SKIP RSS
#: readings, 15 of them, enough to tell 0.2 from 13.8 MiB per version.
VERSIONS = 20
SKIP = 5  # the first versions fill the allocator's free lists

#: The largest RSS growth per version (MiB). Measured with this test on 2 cores: 0.19 MiB
#: per version with the poll releasing unloaded versions, 13.8 MiB per version when their
#: graphs wait for the cyclic garbage collector instead.
MAX_MIB_PER_VERSION = 1.0


def rss_mib():
    with open("/proc/self/status", encoding="ascii") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


def fds():
    return len(os.listdir("/proc/self/fd"))


def threads():
    with open("/proc/self/status", encoding="ascii") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Threads"))


class Lookup(tf.Module):
    """Words -> a score from a vocabulary table, a variable and a constant."""

    def __init__(self, vocab_path):
        super().__init__()
        self.vocab = tf.saved_model.Asset(vocab_path)
        self.table = tf.lookup.StaticHashTable(tf.lookup.TextFileInitializer(
            self.vocab, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64,
            tf.lookup.TextFileIndex.LINE_NUMBER), -1)
        rng = np.random.default_rng(0)
        self.weights = tf.Variable(rng.normal(size=(ROWS, 256)).astype("float32"))
        self.offsets = rng.normal(size=(ROWS, 256)).astype("float32")

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="words")])
    def serve(self, words):
        ids = tf.math.floormod(self.table.lookup(words) + 1, ROWS)
        rows = tf.gather(self.weights, ids) + tf.gather(tf.constant(self.offsets), ids)
        return {"score": tf.reduce_sum(rows, -1), "word": tf.strings.upper(words)}


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A version folder of :class:`Lookup` with its warm-up request."""
    root = tmp_path_factory.mktemp("version-memory")
    vocab = root / "vocab.txt"
    vocab.write_text("\n".join(WORDS) + "\n")
    module = Lookup(str(vocab))
    path = root / "1"
    tf.saved_model.save(module, str(path), signatures={"serving_default": module.serve})
    write_warmup_requests(str(path / "assets.extra" / "tf_serving_warmup_requests"), "m",
                          {"words": WORDS})
    return path


def run(manager, words=WORDS):
    with manager.acquire("m") as servable:
        out = servable.signature("").run({"words": np.array([w.encode() for w in words],
                                                            dtype=object)})
    return out["word"].tolist(), out["score"]


@pytest.fixture
def frozen_heap():
    """What the process holds before the test, out of the collector's sight from then on
    (none of it is garbage the test's versions leave); it stays frozen, as the suite's
    conftest leaves what it froze."""
    gc.collect()
    gc.freeze()


def test_unloaded_versions_leave_nothing_that_grows(tmp_path, template, frozen_heap):
    base = tmp_path / "m"
    shutil.copytree(template, base / "1")
    manager = ModelManager([model_config("m", base)])
    try:
        expected = run(manager)
        assert expected[0] == [w.upper().encode() for w in WORDS]
        baseline_fds, baseline_threads, rss, graphs = fds(), threads(), [], []
        for version in range(2, VERSIONS + 2):
            with manager.acquire("m") as old:
                graphs.append(weakref.ref(old.session.graph))
            del old
            shutil.copytree(template, base / f".new{version}")
            os.rename(base / f".new{version}", base / str(version))
            manager.poll()
            shutil.rmtree(base / str(version - 1))
            assert manager.servable("m").version == version
            for _ in range(3):
                words, scores = run(manager)
                assert words == expected[0]
                np.testing.assert_array_equal(scores, expected[1])
            # The unloaded version's graph is freed by the poll, not by a later collection.
            assert graphs[-1]() is None, f"version {version - 1}'s graph outlived its unload"
            rss.append(rss_mib())
            assert fds() == baseline_fds and threads() == baseline_threads
    finally:
        manager.stop()
    per_version = np.polyfit(np.arange(len(rss) - SKIP), rss[SKIP:], 1)[0]
    assert per_version < MAX_MIB_PER_VERSION, (
        f"RSS grows {per_version:.2f} MiB per version: {[round(r) for r in rss]}")
    gc.collect()
    assert all(g() is None for g in graphs)
