"""The version churn of ``bench.serving_soak``: new version folders dropped into the served
base path, good and broken, old ones deleted, as an export job and a clean-up job would;
and the wait, at the end, for the newest good version to serve.

Every folder appears at once (copied to a hidden name, then one rename) and disappears at
once (renamed to a hidden name, then removed), as TF Serving's file-system source expects.
"""

import os
import random
import shutil
import threading
import time

import grpc
from tensorflow_serving.apis import (
    get_model_status_pb2,
    model_service_pb2_grpc,
    prediction_service_pb2_grpc,
)

from bench.serving_soak_cases import STORIES, grpc_call, predict_request

#: What each kind of new version breaks (``good``: nothing).
KINDS = ("good", "corrupt", "empty_variables", "missing_assets")


def newest_version(base: str) -> str:
    """The name of the highest-numbered version folder of ``base``."""
    names = [n for n in os.listdir(base) if n.isdigit()]
    if not names:
        raise SystemExit(f"no version folders in {base}")
    return max(names, key=int)


def drop_version(template: str, base: str, version: int, kind: str, rng: random.Random):
    """A copy of ``template`` as ``base/<version>``, broken as ``kind`` says."""
    tmp = os.path.join(base, f".soak-new-{version}")
    shutil.copytree(template, tmp)
    if kind == "corrupt":
        with open(os.path.join(tmp, "saved_model.pb"), "wb") as f:
            f.write(rng.randbytes(4096))
    elif kind == "empty_variables":
        shutil.rmtree(os.path.join(tmp, "variables"))
        os.mkdir(os.path.join(tmp, "variables"))
    elif kind == "missing_assets":
        shutil.rmtree(os.path.join(tmp, "assets"))
    elif kind != "good":
        raise ValueError(f"unknown kind of version {kind!r} (kinds: {', '.join(KINDS)})")
    os.rename(tmp, os.path.join(base, str(version)))


def delete_version(base: str, name: str) -> None:
    gone = os.path.join(base, f".soak-old-{name}")
    os.rename(os.path.join(base, name), gone)
    shutil.rmtree(gone)


class Churn:
    """A thread dropping a version of the next of ``kinds`` every ``args.churn_seconds``
    and deleting all but the newest ``args.keep_versions`` folders, until ``stop`` or
    ``args.max_versions`` new versions. ``dropped``: ``{"version", "kind", "t"}`` rows;
    ``newest_good``: the highest good version number."""

    def __init__(self, base, template, kinds, args, stop, started):
        self.dropped: list[dict] = []
        self.deleted = 0
        self.newest_good = int(newest_version(base))
        self._base, self._template, self._kinds = base, template, kinds
        self._args, self._stop, self._started = args, stop, started
        self._rng = random.Random(args.seed)
        self._thread = threading.Thread(target=self._loop, daemon=True, name="churn")

    def start(self) -> "Churn":
        if self._args.churn_seconds > 0 and self._kinds:
            self._thread.start()
        return self

    def join(self) -> None:
        if self._thread.is_alive():
            self._thread.join(timeout=120)

    def _loop(self) -> None:
        version = self.newest_good
        while (not self._stop.wait(self._args.churn_seconds)
               and len(self.dropped) < self._args.max_versions):
            version += 1
            kind = self._kinds[len(self.dropped) % len(self._kinds)]
            drop_version(self._template, self._base, version, kind, self._rng)
            self.dropped.append({"version": version, "kind": kind,
                                 "t": round(time.monotonic() - self._started, 2)})
            if kind == "good":
                self.newest_good = version
            names = sorted((n for n in os.listdir(self._base) if n.isdigit()), key=int)
            for name in names[:-self._args.keep_versions]:
                delete_version(self._base, name)
                self.deleted += 1


def settle(grpc_port: int, model_name: str, expected: int, timeout: float = 300.0):
    """Waits (up to ``timeout`` s) until ``expected`` answers a Predict; returns the
    version that answered last and GetModelStatus's ``{version: state}``."""
    served, states = None, {}
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        models = model_service_pb2_grpc.ModelServiceStub(channel)
        request = predict_request(model_name, STORIES[:1])
        while True:
            status, reply = grpc_call(lambda: stub.Predict(request, timeout=60))
            if status == "OK":
                served = reply.model_spec.version.value
            if served == expected or time.monotonic() > deadline:
                break
            time.sleep(1.0)
        req = get_model_status_pb2.GetModelStatusRequest()
        req.model_spec.name = model_name
        status, reply = grpc_call(lambda: models.GetModelStatus(req, timeout=60))
        if status == "OK":
            states = {str(s.version): get_model_status_pb2.ModelVersionStatus.State.Name(
                s.state) for s in reply.model_version_status}
    return served, states
