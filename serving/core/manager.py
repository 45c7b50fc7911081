"""The model manager: which versions are loaded, and finding the one a request asks for.

TF Serving's ``AspiredVersionsManager`` with a file-system source
(``tensorflow_serving/core/aspired_versions_manager.cc``,
``sources/storage_path/file_system_storage_path_source.cc``): every poll lists each
model's base path (a folder named by a non-negative integer is that version: ``00000123``
is 123); the version policy (latest N, all, specific) says which versions are
wanted; a new version is loaded completely (and warmed up) before it is published, then
versions no longer wanted are removed from the table and closed. Requests hold a lease on
the version they started on (:meth:`ModelManager.acquire`), so a request in flight during
a swap finishes on the old version, whose session closes when that request returns.

Models are independent: each has its own lock, and a poll loads the models in parallel
(``num_load_threads``), so a slow model does not hold up the others. A model whose
``base_path`` changes keeps serving the versions it loaded from the old path until a
version from the new path is available. Version labels are checked when a config loads
(:mod:`serving.core.version_labels`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence

import grpc
from tensorflow_serving.apis import get_model_status_pb2
from tensorflow_serving.config import model_server_config_pb2

from serving.core._tf import tf
from serving.core.batch_scheduler import BatchScheduler
from serving.core.batching import BatchingParameters
from serving.core.memory import release_unloaded
from serving.core.runners import DEFAULT_MAX_ROWS
from serving.core.servable import RUNTIMES, Servable
from serving.core.status import ServingError
from serving.core.version_labels import checked_labels
from serving.core.versions import STATE, Model, VersionState, version_folders
from serving.core.warmup import warm_up

log = logging.getLogger("serving.server")

#: ``on_load(name, version, path, ok, seconds)``: one attempt to load a SavedModel (its
#: session and signatures; the warm-up replay is not part of it).
LoadCallback = Callable[[str, int, str, bool, float], None]


class ModelManager:
    """Loads model versions from disk, keeps them current, and finds them for requests.

    Args:
        configs: The models (TF Serving ``ModelConfig`` protos).
        tags: MetaGraph tags to load (``serve``).
        batching: If set, each loaded version's batchable signatures are batched, all in
            one pool of ``num_batch_threads`` threads named ``thread_pool_name`` (TF
            Serving's shared batch scheduler).
        max_num_load_retries: Attempts to load a version before giving up on it.
        runtime: How versions run their signatures (see ``Servable``).
        session_config: ``ConfigProto`` for each version's session (thread pools).
        max_rows_per_call: Split larger requests of batchable signatures into calls of
            at most this many rows (None: never split; see ``ChunkedRunner``).
        allow_version_labels_for_unavailable_models: TF Serving's flag: a new version label
            may name a version that is not available yet (see
            :mod:`serving.core.version_labels`); otherwise such a config is a ValueError.
        num_load_threads: Models polled and loaded in parallel (<= 1: one after another).
        model_warmup: Replay each version's warm-up requests before it serves
            (``--enable_model_warmup``).
        warmup_iterations: Run each warm-up request this many times
            (``--num_request_iterations_for_warmup``).
        on_load: Called after every attempt to load a version (:data:`LoadCallback`), in
            the loading thread; the model server's metrics count loads with it.
    """

    def __init__(self, configs: Sequence[model_server_config_pb2.ModelConfig],
                 tags: Sequence[str] = ("serve",), batching: BatchingParameters | None = None,
                 max_num_load_retries: int = 5, runtime: str = "session",
                 session_config: tf.compat.v1.ConfigProto | None = None,
                 max_rows_per_call: int | None = DEFAULT_MAX_ROWS,
                 allow_version_labels_for_unavailable_models: bool = False,
                 num_load_threads: int = 4, model_warmup: bool = True,
                 warmup_iterations: int = 1, on_load: LoadCallback | None = None) -> None:
        if runtime not in RUNTIMES:
            raise ValueError(f"runtime must be one of {RUNTIMES}, got {runtime!r}")
        self._max_rows = max_rows_per_call
        self._tags = list(tags)
        self._runtime = runtime
        self._session_config = session_config
        self._batching = batching
        self._batch_scheduler = (None if batching is None else BatchScheduler(
            batching.num_batch_threads, batching.thread_pool_name))
        self._max_retries = max_num_load_retries
        self._allow_unavailable_labels = allow_version_labels_for_unavailable_models
        self._load_threads = num_load_threads
        self._warmup_iterations = warmup_iterations if model_warmup else 0
        self._on_load = on_load
        self._models: dict[str, Model] = {}
        self._lock = threading.Lock()  # swaps of the model table, never requests
        self._config_lock = threading.Lock()  # one reload_config at a time
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        try:
            self.reload_config(configs)
        except BaseException:
            self.stop()
            raise

    # ---- requests -----------------------------------------------------------------

    def model(self, name: str) -> Model:
        model = self._models.get(name)
        if model is None:
            raise ServingError(grpc.StatusCode.NOT_FOUND,
                               f"Servable not found for request: model '{name}' is not served "
                               f"(models: {sorted(self._models)})")
        return model

    @staticmethod
    def _labelled_version(model: Model, version: int | None, label: str | None) -> int | None:
        """``version``, or the version ``label`` names (NOT_FOUND if it names none)."""
        if not label:
            return version
        labels = model.labels
        if label not in labels:
            raise ServingError(grpc.StatusCode.NOT_FOUND,
                               f"Unrecognized servable version label '{label}' of model "
                               f"'{model.config.name}' (labels: {sorted(labels)})")
        return int(labels[label])

    def servable(self, name: str, version: int | None = None,
                 label: str | None = None) -> Servable:
        """The version a request asks for: latest, a number, or a label (no lease: use
        :meth:`acquire` to run it)."""
        model = self.model(name)
        version = self._labelled_version(model, version, label)
        servables = model.servables
        if version is None:
            if not servables:
                raise ServingError(grpc.StatusCode.NOT_FOUND,
                                   f"Servable not found for request: Latest({name}): no version "
                                   "is loaded yet")
            return servables[max(servables)]
        servable = servables.get(version)
        if servable is None:
            raise ServingError(grpc.StatusCode.NOT_FOUND,
                               f"Servable not found for request: Specific({name}, {version}); "
                               f"loaded versions: {sorted(servables)}")
        return servable

    def lease(self, name: str, version: int | None = None,
              label: str | None = None) -> Servable:
        """The version a request asks for, leased: it is not closed before the caller's
        ``release()``, even if it is unloaded meanwhile."""
        while True:
            servable = self.servable(name, version, label)
            if servable.acquire():
                return servable
            # Retired between the lookup and the lease: the table no longer holds it.

    @contextlib.contextmanager
    def acquire(self, name: str, version: int | None = None,
                label: str | None = None) -> Iterator[Servable]:
        """:meth:`lease` for a ``with`` block."""
        servable = self.lease(name, version, label)
        try:
            yield servable
        finally:
            servable.release()

    def status(self, name: str, version: int | None = None,
               label: str | None = None) -> list[get_model_status_pb2.ModelVersionStatus]:
        model = self.model(name)
        version = self._labelled_version(model, version, label)
        states = dict(model.states)
        if version is not None:
            if version not in states:
                raise ServingError(grpc.StatusCode.NOT_FOUND,
                                   f"Could not find version {version} of model {name}")
            states = {version: states[version]}
        elif not states:
            raise ServingError(grpc.StatusCode.NOT_FOUND,
                               f"Could not find any versions of model {name}")
        out = []
        for v in sorted(states):
            s = states[v]
            status = get_model_status_pb2.ModelVersionStatus(version=v, state=s.state)
            status.status.error_code = s.error_code.value[0]
            status.status.error_message = s.error_message
            out.append(status)
        return out

    @property
    def model_names(self) -> list[str]:
        return sorted(self._models)

    # ---- configuration and polling --------------------------------------------------

    def reload_config(self, configs: Sequence[model_server_config_pb2.ModelConfig]) -> None:
        """Serves exactly ``configs``: new models are added, removed ones closed, then the
        version labels are checked (ValueError naming the model and label: that model keeps
        its previous labels, everything else of the config applies, as in TF Serving)."""
        names = [c.name for c in configs]
        if len(set(names)) != len(names) or not all(names):
            raise ValueError(f"model names must be non-empty and unique, got {names}")
        for c in configs:
            if c.model_platform not in ("", "tensorflow"):
                raise ValueError(f"model '{c.name}': unsupported model_platform "
                                 f"'{c.model_platform}' (only 'tensorflow')")
            if not c.base_path:
                raise ValueError(f"model '{c.name}': base_path is required")
        with self._config_lock:
            with self._lock:
                models, kept_servables = {}, set()
                for c in configs:
                    old = self._models.get(c.name)
                    if old is not None and old.config.base_path == c.base_path:
                        old.config = c
                        models[c.name] = old
                    elif old is not None:  # new base_path: serve the old versions meanwhile
                        with old.lock:
                            old.dropped = True
                            models[c.name] = Model(c, old.servables)
                            models[c.name].labels = dict(old.labels)
                        kept_servables.update(id(s) for s in old.servables.values())
                    else:
                        models[c.name] = Model(c)
                dropped = [m for n, m in self._models.items() if models.get(n) is not m]
                self._models = models
            for m in dropped:
                with m.lock:
                    m.dropped = True
                    for s in m.servables.values():
                        if id(s) not in kept_servables:
                            s.close()
            self.poll()
            errors = []
            for m in models.values():
                with m.lock:
                    try:
                        m.labels = checked_labels(
                            m.config.name, m.config.version_labels, m.labels,
                            [v for v, s in m.servables.items() if m.fresh(v)],
                            self._allow_unavailable_labels)
                    except ValueError as exc:
                        errors.append(str(exc))
            if errors:
                raise ValueError("; ".join(errors))

    def _aspired(self, model: Model, on_disk: list[int]) -> list[int]:
        policy = model.config.model_version_policy
        kind = policy.WhichOneof("policy_choice")
        if kind == "all":
            return on_disk
        if kind == "specific":
            return sorted(set(on_disk) & set(policy.specific.versions))
        n = policy.latest.num_versions if kind == "latest" and policy.latest.num_versions else 1
        return sorted(on_disk)[-n:]

    def poll(self) -> None:
        """Lists every base path once; loads new versions, then unloads unwanted ones (and
        frees their memory). Models are polled in parallel (``num_load_threads``)."""
        with self._lock:
            models = list(self._models.values())
        if self._load_threads <= 1 or len(models) <= 1:
            list(map(self._poll_locked, models))
        else:
            with concurrent.futures.ThreadPoolExecutor(
                    min(self._load_threads, len(models)), thread_name_prefix="load") as pool:
                list(pool.map(self._poll_locked, models))
        release_unloaded()  # what unloaded and failed versions left (serving.core.memory)

    def _poll_locked(self, model: Model) -> None:
        with model.lock:
            if model.dropped:
                return
            try:
                self._poll_model(model)
            except Exception:  # noqa: BLE001 - a bad model must not stop the others
                log.exception("polling model %s failed", model.config.name)

    def _poll_model(self, model: Model) -> None:
        base = model.config.base_path
        try:
            names = os.listdir(base)
        except OSError as exc:
            log.warning("model %s: cannot list %s (%s); keeping loaded versions",
                        model.config.name, base, exc)
            return
        model.folders = version_folders(base, names)
        on_disk = sorted(model.folders)
        for _ in range(len(on_disk) + 1):  # bounded: each extra round gives up on a version
            # Given-up versions drop out: "latest" falls back to the newest loadable one.
            usable = [v for v in on_disk if not self._gave_up(model, v)]
            aspired = self._aspired(model, usable)
            if not aspired:
                if not model.servables:
                    log.warning("model %s: no loadable version under %s", model.config.name,
                                base)
                return  # keep serving what is loaded rather than going dark
            for version in sorted(v for v in aspired if not model.fresh(v))[::-1]:
                self._load(model, version)
            if not any(self._gave_up(model, v) for v in aspired):
                break
        # Unwanted: not aspired, or kept from an old base_path. Dropped once an aspired
        # version from the current path serves, never leaving the model without a version.
        unwanted = {v for v in model.servables if v not in aspired or not model.fresh(v)}
        if unwanted and any(model.fresh(v) for v in aspired):
            kept = {v: s for v, s in model.servables.items() if v not in unwanted}
            for v in unwanted:
                model.states[v] = VersionState(STATE.UNLOADING)
            gone = [model.servables[v] for v in unwanted]
            model.servables = kept  # atomic swap; in-flight requests keep their lease
            for s in gone:
                s.close()  # now, or when its last request in flight returns
            for v in unwanted:
                model.states[v] = VersionState(STATE.END)
                log.info("model %s: unloaded version %d", model.config.name, v)

    def _gave_up(self, model: Model, version: int) -> bool:
        state = model.states.get(version)
        return state is not None and state.failures >= self._max_retries and (
            not model.fresh(version))

    def _load(self, model: Model, version: int) -> None:
        name, path = model.config.name, model.version_path(version)
        previous = model.states.get(version)
        failures = previous.failures if previous else 0
        serving_old = version in model.servables  # the same number from an old base_path
        if not serving_old:
            model.states[version] = VersionState(STATE.LOADING, failures=failures)
        started = time.perf_counter()
        servable = None
        try:
            try:
                servable = Servable(name, version, path, self._tags, self._runtime,
                                    self._session_config, self._batching, self._max_rows,
                                    self._batch_scheduler)
            finally:
                self._report_load(name, version, path, servable is not None,
                                  time.perf_counter() - started)
            warmed = warm_up(servable, self._warmup_iterations) if self._warmup_iterations else 0
        except Exception as exc:  # noqa: BLE001 - report in GetModelStatus, retry next poll
            if servable is not None:
                servable.close()
            failures += 1
            log.error("model %s: loading version %d failed (attempt %d of %d): %s",
                      name, version, failures, self._max_retries, exc)
            model.states[version] = VersionState(
                STATE.AVAILABLE if serving_old else STATE.END,
                grpc.StatusCode.UNKNOWN if failures >= self._max_retries
                else grpc.StatusCode.UNAVAILABLE, f"loading failed: {exc}", failures)
            return
        servables = dict(model.servables)
        replaced = servables.get(version)
        servables[version] = servable
        model.servables = servables  # publish atomically
        if replaced is not None:
            replaced.close()  # now, or when its last request in flight returns
        model.states[version] = VersionState(STATE.AVAILABLE)
        log.info("model %s: version %d available (%s; loaded in %.2f s, %d warm-up requests)",
                 name, version, path, time.perf_counter() - started, warmed)

    def _report_load(self, name: str, version: int, path: str, ok: bool,
                     seconds: float) -> None:
        if self._on_load is None:
            return
        try:
            self._on_load(name, version, path, ok, seconds)
        except Exception:  # a metrics bug must not fail the load
            log.exception("model %s: the load callback failed", name)

    def start_polling(self, interval_s: float) -> None:
        """Polls every ``interval_s`` seconds in a daemon thread (<= 0: never)."""
        if interval_s <= 0 or self._thread is not None:
            return

        def loop() -> None:
            while not self._stop.wait(interval_s):
                self.poll()

        self._thread = threading.Thread(target=loop, daemon=True, name="version-poller")
        self._thread.start()

    def stop(self) -> None:
        """Stops polling and closes every version (after its requests in flight)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        with self._lock:
            models = list(self._models.values())
        for m in models:
            with m.lock:
                m.dropped = True
                for s in m.servables.values():
                    s.close()
        if self._batch_scheduler is not None:  # after the batchers: what they hold runs
            self._batch_scheduler.stop()
