"""serving.server and its ModelManager as versions come and go: a new version swapped in
under load without losing a request, a config file with several models, version policies
and labels (and its reload), an unloaded version closing its session when its last request
returns, and a broken version reported while the old one keeps serving.
"""

import os
import shutil
import threading
import time

import grpc
import numpy as np
from tensorflow_serving.apis import (
    model_management_pb2,
    model_service_pb2_grpc,
    prediction_service_pb2_grpc,
)

from serving.core.manager import ModelManager
from serving.model_server.model_config import parse_model_config
from serving.model_server.server import ModelServer
from tests.serving.server_requests import (
    AVAILABLE,
    END,
    assert_status,
    model_config,
    request,
)


# --------------------------------------------------------------------------------------
# Versions, configs, batching
# --------------------------------------------------------------------------------------


def copy_version(base, src, dst):
    """Copies a version folder the safe way: to a hidden name, then one rename."""
    tmp = os.path.join(base, f".copy-{dst}")
    shutil.copytree(os.path.join(base, str(src)), tmp)
    os.rename(tmp, os.path.join(base, str(dst)))


def wait_for(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_version_swap_under_load_loses_no_request(tmp_path, version_dir, task1):
    base = tmp_path / "babi"
    shutil.copytree(version_dir, base / "1")
    manager = ModelManager([model_config("babi", base)])
    manager.start_polling(0.1)
    failures, versions, stop = [], set(), threading.Event()
    req = request(task1.stories[:2], task1.questions[:2])
    with ModelServer(manager, port=0) as server, \
            grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)

        def load():
            while not stop.is_set():
                try:
                    versions.add(stub.Predict(req, timeout=30).model_spec.version.value)
                except grpc.RpcError as exc:
                    failures.append(exc.code())

        threads = [threading.Thread(target=load) for _ in range(2)]
        for t in threads:
            t.start()
        try:
            assert wait_for(lambda: versions)
            copy_version(base, 1, 2)
            assert wait_for(lambda: 2 in versions)
            time.sleep(0.3)
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=60)
        states = {s.version: s.state for s in manager.status("babi")}
    assert failures == []
    assert versions == {1, 2} and states == {1: END, 2: AVAILABLE}


def test_config_file_several_models_policies_labels_and_reload(tmp_path, version_dir, task1):
    base = tmp_path / "m"
    shutil.copytree(version_dir, base / "1")
    shutil.copytree(version_dir, base / "2")
    configs = parse_model_config(f"""
        model_config_list {{
          config {{ name: 'latest' base_path: '{base}' model_platform: 'tensorflow' }}
          config {{
            name: 'all' base_path: '{base}' model_platform: 'tensorflow'
            model_version_policy {{ all {{}} }}
            version_labels {{ key: 'stable' value: 1 }}
          }}
          config {{
            name: 'pinned' base_path: '{base}' model_platform: 'tensorflow'
            model_version_policy {{ specific {{ versions: 1 }} }}
          }}
        }}""")
    with ModelServer(ModelManager(configs), port=0) as server, \
            grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        req = request(task1.stories[:1], task1.questions[:1])

        def version(name, **spec):
            req.model_spec.name = name
            req.model_spec.ClearField("version")
            req.model_spec.version_label = spec.get("label", "")
            if "version" in spec:
                req.model_spec.version.value = spec["version"]
            return stub.Predict(req, timeout=30).model_spec.version.value

        assert (version("latest"), version("all"), version("pinned")) == (2, 2, 1)
        assert (version("all", version=1), version("all", label="stable")) == (1, 1)
        assert_status(lambda: version("latest", version=1), grpc.StatusCode.NOT_FOUND)
        assert_status(lambda: version("all", label="canary"), grpc.StatusCode.NOT_FOUND,
                      "canary")

        reload = model_management_pb2.ReloadConfigRequest()
        reload.config.model_config_list.config.extend(configs[2:])
        models = model_service_pb2_grpc.ModelServiceStub(channel)
        assert models.HandleReloadConfigRequest(reload, timeout=60).status.error_code == 0
        assert version("pinned") == 1
        assert_status(lambda: version("latest"), grpc.StatusCode.NOT_FOUND, "'latest'")


def test_unloaded_version_closes_its_session_when_its_last_request_returns(tmp_path,
                                                                            version_dir):
    """Deterministic unload: an explicit close, run by the last lease, not by the GC."""
    base = tmp_path / "babi"
    shutil.copytree(version_dir, base / "1")
    manager = ModelManager([model_config("babi", base)])
    story = {"story": np.array([b"Mary went to the garden."], dtype=object),
             "question": np.array([b"Where is Mary?"], dtype=object)}
    with manager.acquire("babi") as held:  # as a request in flight holds it
        session = held.session
        shutil.copytree(version_dir, base / "2")
        manager.poll()
        assert manager.servable("babi").version == 2
        assert not session._closed and not held.closed
        # The old version still answers its request.
        assert held.signature("").run(story)["answer"].shape == (1,)
    assert held.closed and session._closed  # closed by the lease's release, no gc needed
    assert not held.acquire()  # a retired version takes no new request
    with manager.acquire("babi") as current:
        assert current.version == 2 and current.signature("").run(story)["answer"].shape == (1,)
    # Unused versions close at once; stop() closes the rest.
    two = manager.servable("babi")
    manager.stop()
    assert two.closed and two.session._closed


def test_broken_version_is_reported_and_old_one_keeps_serving(tmp_path, version_dir):
    base = tmp_path / "babi"
    shutil.copytree(version_dir, base / "1")
    manager = ModelManager([model_config("babi", base)], max_num_load_retries=2)
    os.makedirs(base / "2")
    (base / "2" / "saved_model.pb").write_bytes(b"not a SavedModel")
    manager.poll()
    manager.poll()  # the second and last attempt
    manager.poll()  # no third one
    (two,) = [s for s in manager.status("babi") if s.version == 2]
    assert two.state == END and "loading failed" in two.status.error_message
    assert manager.servable("babi").version == 1
    # Started with the broken version present: after its retries, the newest good one.
    fresh = ModelManager([model_config("babi", base)], max_num_load_retries=1)
    assert fresh.servable("babi").version == 1
    manager.stop()
    fresh.stop()
