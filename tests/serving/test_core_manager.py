"""serving.core.manager with fake servables (no TensorFlow load): version labels checked
when a config loads, a base_path change that never leaves the model without a version, and
independent models that load in parallel."""

import threading

import grpc
import pytest
from tensorflow_serving.config import model_server_config_pb2

from serving.core import manager as manager_module
from serving.core.manager import ModelManager
from serving.core.status import ServingError


class FakeServable:
    """Stands in for a loaded version; ``on_load`` (if set) runs in the loading thread."""

    on_load = None

    def __init__(self, name, version, path, *_args):
        self.name, self.version, self.path = name, version, path
        if FakeServable.on_load is not None:
            FakeServable.on_load(self)
        self.closed = False

    def acquire(self):
        return not self.closed

    def release(self):
        pass

    def close(self):
        self.closed = True


@pytest.fixture(autouse=True)
def fake_servables(monkeypatch):
    monkeypatch.setattr(manager_module, "Servable", FakeServable)
    monkeypatch.setattr(manager_module, "warm_up", lambda servable, iterations=1: 0)
    FakeServable.on_load = None
    yield
    FakeServable.on_load = None


def versions(base, *numbers):
    for n in numbers:
        (base / str(n)).mkdir(parents=True, exist_ok=True)
        (base / str(n) / "saved_model.pb").write_bytes(b"")
    return base


def config(name, base, labels=None, policy="latest"):
    c = model_server_config_pb2.ModelConfig(name=name, base_path=str(base),
                                            model_platform="tensorflow")
    if policy == "all":
        c.model_version_policy.all.SetInParent()
    for label, version in (labels or {}).items():
        c.version_labels[label] = version
    return c


def test_a_label_naming_an_unavailable_version_is_an_error_at_load(tmp_path):
    base = versions(tmp_path / "m", 1, 2)
    with pytest.raises(ValueError, match=r"'m'.*label 'canary' names version 3.*available: "
                                         r"\[1, 2\]"):
        ModelManager([config("m", base, {"stable": 1, "canary": 3}, "all")])
    # Version 1 exists but the policy (latest) does not load it: not available either.
    with pytest.raises(ValueError, match="'stable' names version 1"):
        ModelManager([config("m", base, {"stable": 1})])
    ok = ModelManager([config("m", base, {"stable": 1, "canary": 2}, "all")])
    assert ok.servable("m", label="stable").version == 1
    ok.stop()


def test_allow_version_labels_for_unavailable_models(tmp_path):
    base = versions(tmp_path / "m", 1)
    manager = ModelManager([config("m", base, {"stable": 1, "next": 2}, "all")],
                           allow_version_labels_for_unavailable_models=True)
    with pytest.raises(ServingError) as info:
        manager.servable("m", label="next")
    assert info.value.code == grpc.StatusCode.NOT_FOUND
    versions(base, 2)
    manager.poll()
    assert manager.servable("m", label="next").version == 2
    # Moving a label that is in use to a version that is not available is still refused,
    # and the model keeps its previous labels.
    with pytest.raises(ValueError, match="'stable' names version 7"):
        manager.reload_config([config("m", base, {"stable": 7, "next": 2}, "all")])
    assert manager.servable("m", label="stable").version == 1
    manager.stop()


def test_reload_with_a_bad_label_keeps_serving_the_old_labels(tmp_path):
    base = versions(tmp_path / "m", 1, 2)
    manager = ModelManager([config("m", base, {"stable": 1}, "all")])
    with pytest.raises(ValueError, match="version 9"):
        manager.reload_config([config("m", base, {"stable": 9}, "all")])
    assert manager.servable("m", label="stable").version == 1
    manager.stop()


def test_a_base_path_change_serves_the_old_version_until_the_new_one_is_available(tmp_path):
    old = versions(tmp_path / "old", 1)
    new = versions(tmp_path / "new", 1, 2)
    manager = ModelManager([config("m", old)])
    first = manager.servable("m")
    assert first.path == str(old / "1")
    loading, release = threading.Event(), threading.Event()

    def slow_new_load(servable):
        if str(new) in servable.path:
            loading.set()
            assert release.wait(30)

    FakeServable.on_load = slow_new_load
    reload = threading.Thread(target=manager.reload_config, args=([config("m", new)],))
    reload.start()
    try:
        assert loading.wait(30)
        for _ in range(20):  # while the new version loads, the old one answers
            assert manager.servable("m") is first and not first.closed
    finally:
        release.set()
        reload.join(30)
    current = manager.servable("m")
    assert current.path == str(new / "2") and first.closed
    assert [s.version for s in manager.status("m")] == [1, 2]
    manager.stop()


def test_same_version_number_under_a_new_base_path_replaces_the_old(tmp_path):
    old = versions(tmp_path / "old", 3)
    new = versions(tmp_path / "new", 3)
    manager = ModelManager([config("m", old)])
    first = manager.servable("m")
    manager.reload_config([config("m", new)])
    assert manager.servable("m").path == str(new / "3") and first.closed
    manager.stop()


def test_a_new_base_path_that_does_not_load_keeps_the_old_versions(tmp_path):
    old = versions(tmp_path / "old", 1)
    new = tmp_path / "empty"
    new.mkdir()
    manager = ModelManager([config("m", old)])
    manager.reload_config([config("m", new)])
    assert manager.servable("m").path == str(old / "1")
    manager.stop()


def test_independent_models_load_in_parallel(tmp_path):
    """Each load waits for the other model's load to start: only loads that overlap pass."""
    barrier = threading.Barrier(2, timeout=10)
    FakeServable.on_load = lambda servable: barrier.wait()
    configs = [config("a", versions(tmp_path / "a", 1)), config("b", versions(tmp_path / "b", 1))]
    manager = ModelManager(configs)
    assert manager.servable("a").version == manager.servable("b").version == 1
    manager.stop()


def test_a_slow_model_does_not_hold_up_the_others(tmp_path):
    slow_started, release = threading.Event(), threading.Event()

    def hold_slow(servable):
        if servable.name == "slow":
            slow_started.set()
            assert release.wait(30)

    manager = ModelManager([config("slow", versions(tmp_path / "slow", 1)),
                            config("fast", versions(tmp_path / "fast", 1))])
    FakeServable.on_load = hold_slow
    versions(tmp_path / "slow", 2)
    versions(tmp_path / "fast", 2)
    poll = threading.Thread(target=manager.poll)
    poll.start()
    try:
        assert slow_started.wait(30)
        deadline = threading.Event()
        for _ in range(200):
            if manager.servable("fast").version == 2:
                break
            deadline.wait(0.05)
        assert manager.servable("fast").version == 2
        assert manager.servable("slow").version == 1  # still loading version 2
    finally:
        release.set()
        poll.join(30)
    assert manager.servable("slow").version == 2
    manager.stop()


def test_every_load_attempt_is_reported_with_its_outcome(tmp_path):
    """``on_load`` (the model server's load metrics) hears of each attempt, failed or not,
    with the version folder; a failing callback does not fail the load."""
    base = versions(tmp_path / "m", 1, 2)
    attempts = []

    def fail_version_2(servable):
        if servable.version == 2:
            raise OSError("corrupt")

    def on_load(name, version, path, ok, seconds):
        attempts.append((name, version, path, ok))
        assert seconds >= 0
        raise RuntimeError("a broken metrics sink")

    FakeServable.on_load = fail_version_2
    manager = ModelManager([config("m", base)], max_num_load_retries=1, on_load=on_load)
    assert manager.servable("m").version == 1  # version 2 gave up, latest fell back
    assert attempts == [("m", 2, str(base / "2"), False), ("m", 1, str(base / "1"), True)]
    manager.stop()


@pytest.mark.parametrize("kwargs,expected", [({}, [1]), ({"warmup_iterations": 3}, [3]),
                                             ({"model_warmup": False}, [])])
def test_warm_up_follows_the_warmup_flags(tmp_path, monkeypatch, kwargs, expected):
    calls = []
    monkeypatch.setattr(manager_module, "warm_up",
                        lambda servable, iterations=1: calls.append(iterations) or iterations)
    manager = ModelManager([config("m", versions(tmp_path / "m", 1))], **kwargs)
    assert manager.servable("m").version == 1 and calls == expected
    manager.stop()


def test_version_folders_with_leading_zeros_are_their_number(tmp_path):
    """TF Serving's file-system source: a folder named by a non-negative integer is that
    version (its test models live in 00000123/); other names are not versions."""
    versions(tmp_path / "m", "00000123", "0", "abc", "-5", "12x")
    manager = ModelManager([config("m", tmp_path / "m", policy="all")])
    try:
        assert [s.version for s in manager.status("m")] == [0, 123]
        servable = manager.servable("m")
        assert (servable.version, servable.path) == (123, str(tmp_path / "m" / "00000123"))
        assert manager.servable("m", 123) is servable
    finally:
        manager.stop()


def test_two_folders_of_one_version_load_one_of_them(tmp_path):
    versions(tmp_path / "m", "7", "007")
    manager = ModelManager([config("m", tmp_path / "m")])
    try:
        assert manager.servable("m").path == str(tmp_path / "m" / "7")
        assert [s.version for s in manager.status("m")] == [7]
    finally:
        manager.stop()
