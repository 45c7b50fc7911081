"""Load benchmark of ``python -m serving.server`` with the in-process call as baseline.

    python -m bench.serving_bench --model_base_path /tmp/export/babi --clients 1 --seconds 10
    python -m bench.serving_bench --keras_model runs/babi-task1/export/model.keras ...
    python -m bench.serving_bench ... --swap          # a new version appears mid-run
    python -m bench.serving_bench ... --server_args="--enable_batching"

1. Baselines, the latest version called in this process at the request batch size
   (p50/p99 per call), ``--baseline_seconds`` each:
   - ``tf2``: ``tf.saved_model.load(...).signatures["serving_default"]``, back to back:
     the usual way to call a SavedModel from Python;
   - ``runtime``: the server's own ``Servable`` (same runtime and thread settings as the
     server), back to back: the same call without the server around it;
   - ``runtime, paced`` (one client only): the same, but each call waits as long as the
     server sat idle between two requests in the load phase just before (client p50 -
     runtime p50), so the CPU goes idle between calls as it does in the server (on a VM
     an idle vCPU comes back slower: ``results/serving.md``). With several clients the
     server is rarely idle, so there is no gap to reproduce.
2. The server runs as a subprocess on loopback (free ports); ``--clients`` threads, each
   with its own channel and the official ``PredictionServiceStub``, send Predict requests
   for ``--seconds``: QPS, p50/p99 client latency, errors by status code. Baseline and
   load phases alternate (``--rounds``) so that both see the same background load on a
   shared machine. ``--pin``: the server and the in-process baselines run on the first
   half of the CPUs, the clients on the rest (as if the clients were on another
   machine).
3. ``--swap``: halfway through, the latest version folder is copied to the next number
   (to a hidden name, then one rename); the run reports failed requests and which
   versions answered.
4. SIGTERM to the server; its statistics at shutdown (``ModelServer.stats()``, written to
   its ``--server_info_file``) give the server-side handler time (request parsed ->
   response built) p50/p99, compared with the baseline.

Stories are the task-1 test stories when ``--data_dir`` finds them, else built-in ones.
"""

import collections
import contextlib
import os
import shutil
import signal
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import grpc  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow_serving.apis import (  # noqa: E402
    get_model_status_pb2,
    model_service_pb2_grpc,
    predict_pb2,
    prediction_service_pb2_grpc,
)

from bench.serving_report import print_baselines, report  # noqa: E402
from serving.model_server.server_process import (  # noqa: E402
    ServerDidNotStart,
    start_server_process,
)

FALLBACK = [
    ("Mary moved to the bathroom.\nJohn went to the hallway.", "Where is Mary?"),
    ("Daniel went back to the hallway.\nSandra moved to the garden.\nJohn moved to the office.",
     "Where is Daniel?"),
    ("Sandra journeyed to the bedroom.\nMary travelled to the kitchen.", "Where is Sandra?"),
]


def load_questions(data_dir):
    try:
        from tpr_keras.export.babi_tokenizer import join_story
        from tpr_keras.data import babi

        root = babi.find_babi_dir(data_dir, download=False)
        samples = babi.parse_babi_file(babi.task_files(root, 1)[1])
        return [(join_story(s.story), " ".join(s.question)) for s in samples], "task-1 test"
    except (FileNotFoundError, OSError, ImportError) as exc:
        print(f"(no bAbI data: {exc.__class__.__name__}; using built-in stories)")
        return FALLBACK, "built-in"


def latest_version(base):
    versions = [int(n) for n in os.listdir(base) if n.isdigit()]
    if not versions:
        raise SystemExit(f"no version folders in {base}")
    return max(versions)



def load_baselines(version_dir, questions, batch, runtime, session_config):
    """The two in-process calls: name -> fn(story array, question array) -> outputs."""
    from serving.core.servable import Servable

    tf2 = tf.saved_model.load(version_dir).signatures["serving_default"]
    sig = Servable("babi", 1, version_dir, ["serve"], runtime, session_config).signature("")
    calls = {"tf2": lambda s, q: {k: v.numpy() for k, v in tf2(story=s, question=q).items()},
             "runtime": lambda s, q: sig.run({"story": s, "question": q})}
    s = np.array([questions[0][0].encode()] * batch, dtype=object)
    q = np.array([questions[0][1].encode()] * batch, dtype=object)
    for fn in calls.values():
        for _ in range(20):  # warm-up (the first call optimises the graph)
            fn(s, q)
    return calls


def baseline(fn, questions, batch, seconds, times, offset=0, gap=0.0):
    """Calls ``fn`` in this process for ``seconds`` (sleeping ``gap`` s before each call);
    appends the call times."""
    i = offset
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        chunk = [questions[(i + j) % len(questions)] for j in range(batch)]
        i += batch
        story = np.array([s.encode() for s, _ in chunk], dtype=object)
        question = np.array([q.encode() for _, q in chunk], dtype=object)
        if gap > 0:
            time.sleep(gap)
        t = time.perf_counter()
        fn(story, question)
        times.append(time.perf_counter() - t)
    return i


def pin_this_process(cpus):
    """Moves every thread of this process to ``cpus`` (Linux; a no-op elsewhere)."""
    if not cpus or not hasattr(os, "sched_setaffinity"):
        return
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except OSError:  # the thread ended meanwhile
            pass


def start_server(base, model_name, extra_args, info_file, log, cpus=None):
    """Starts the server, its output into ``log``; returns it and its gRPC port (from
    --server_info_file: ModelServer.ports)."""
    flags = ["--port=0", f"--model_name={model_name}", f"--model_base_path={base}",
             "--file_system_poll_wait_seconds=0.5", *extra_args]
    try:
        proc, info = start_server_process(
            flags, info_file, log, cwd=REPO,
            preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
    except ServerDidNotStart as exc:
        raise SystemExit(str(exc)) from None
    return proc, info["ports"]["grpc"]


def make_request(model_name, chunk):
    req = predict_pb2.PredictRequest()
    req.model_spec.name = model_name
    for key, values in (("story", [s for s, _ in chunk]), ("question", [q for _, q in chunk])):
        t = req.inputs[key]
        t.dtype = tf.string.as_datatype_enum
        t.tensor_shape.dim.add(size=len(values))
        t.string_val.extend(v.encode() for v in values)
    return req


def client_loop(port, model_name, questions, batch, go, stop, offset, out):
    """Sends requests back to back while ``go`` is set, until ``stop``."""
    requests = [make_request(model_name, [questions[(k + j) % len(questions)]
                                          for j in range(batch)])
                for k in range(offset, offset + 200 * batch, batch)]
    times, errors, versions = [], collections.Counter(), collections.Counter()
    out.append((times, errors, versions))  # filled while running: read per round
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        stub.Predict(requests[0], timeout=60)  # connect + warm-up
        i = 0
        while not stop.is_set():
            if not go.wait(0.1):
                continue
            t = time.perf_counter()
            try:
                response = stub.Predict(requests[i % len(requests)], timeout=30)
                times.append(time.perf_counter() - t)
                versions[response.model_spec.version.value] += 1
            except grpc.RpcError as exc:
                errors[exc.code().name] += 1
            i += 1


def thread_settings(server_args):
    """The server's TF thread flags (0: TF's default), applied to this process too."""
    values = {"intra": 0, "inter": 0}
    for arg in server_args:
        for key in values:
            flag = f"--tensorflow_{key}_op_parallelism="
            if arg.startswith(flag):
                values[key] = int(arg[len(flag):])
    if values["intra"] > 0:
        tf.config.threading.set_intra_op_parallelism_threads(values["intra"])
    if values["inter"] > 0:
        tf.config.threading.set_inter_op_parallelism_threads(values["inter"])
    runtime = "session"
    for arg in server_args:
        if arg.startswith("--servable_runtime="):
            runtime = arg.split("=", 1)[1]
    return runtime, tf.compat.v1.ConfigProto(intra_op_parallelism_threads=max(values["intra"], 0),
                                             inter_op_parallelism_threads=values["inter"])


def command():
    from serving.command_flags import Command

    p = Command("python -m bench.serving_bench", __doc__.split("\n")[0])
    p.string("model_base_path", None, "folder with integer version folders")
    p.string("keras_model", None, "or: a model.keras to export first (vocab.txt next to it)")
    p.string("model_name", "babi")
    p.string("data_dir", os.path.join(REPO, "..", "shared", "data", "babi"))
    p.integer("clients", 1)
    p.float("seconds", 10)
    p.float("baseline_seconds", 5, "per baseline (three of them), over all rounds")
    p.integer("rounds", 5, "alternate baseline and load phases this many times")
    p.integer("batch", 1, "examples per request")
    p.boolean("swap", False, "add a new version halfway through")
    p.boolean("pin", False,
              "server and baselines on the first half of the CPUs, clients on the rest")
    p.string("server_args", "", "extra flags for serving.server")
    p.string("json", None, "also write the numbers to this file")
    return p


def cpu_halves(pin):
    """``(server CPUs, client CPUs)``: the two halves of this process's CPUs with ``--pin``,
    else ``(None, None)``."""
    if not pin:
        return None, None
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(cpus) < 2:
        raise SystemExit("--pin needs at least 2 CPUs")
    return set(cpus[:len(cpus) // 2]), set(cpus[len(cpus) // 2:])


def model_base(args, workdir):
    """The base path to serve: ``--keras_model`` exported into ``workdir``, or
    ``--model_base_path`` (with ``--swap``, its latest version copied into ``workdir``:
    versions are never added to the user's folder)."""
    if args.keras_model:
        import keras

        import tpr_keras.models.all_families  # noqa: F401
        from serving.export import export_babi_model

        model = keras.models.load_model(args.keras_model)
        export_babi_model(model, os.path.join(os.path.dirname(args.keras_model), "vocab.txt"),
                          workdir, args.model_name)
        return os.path.join(workdir, args.model_name)
    if not args.model_base_path:
        raise SystemExit("pass --model_base_path or --keras_model")
    base = args.model_base_path
    if args.swap:
        v = latest_version(base)
        shutil.copytree(os.path.join(base, str(v)), os.path.join(workdir, "m", str(v)))
        base = os.path.join(workdir, "m")
    return base


class Rounds:
    """Interleaved rounds: in-process baselines (clients paused), the load phase, and with
    one client the paced baseline. On a shared machine all phases see the same background
    load."""

    def __init__(self, args, calls, questions, base, version, server_cpus, client_cpus):
        self.args, self.calls, self.questions = args, calls, questions
        self.base, self.version = base, version
        self.server_cpus, self.client_cpus = server_cpus, client_cpus
        self.base_times = {"tf2": [], "runtime": []}
        if args.clients == 1:
            self.base_times["runtime, paced"] = []
        self.gaps, self.offset = [], 0
        self.elapsed, self.swapped_to = 0.0, None
        self.go, self.stop, self.out = threading.Event(), threading.Event(), []
        self.threads = []

    def start_clients(self, port):
        """``--clients`` client threads, connected and warmed up, paused."""
        args = self.args
        self.threads = [threading.Thread(target=client_loop,
                                         args=(port, args.model_name, self.questions,
                                               args.batch, self.go, self.stop, k * 997,
                                               self.out))
                        for k in range(args.clients)]
        for t in self.threads:
            t.start()
        while len(self.out) < args.clients and all(t.is_alive() for t in self.threads):
            time.sleep(0.1)
        time.sleep(1.0)  # clients connected and warmed up

    def run(self):
        """Every round, then the clients stopped."""
        self.started = time.perf_counter()
        per_phase = self.args.baseline_seconds / self.args.rounds
        for r in range(self.args.rounds):
            self.go.clear()
            time.sleep(0.05)  # let requests in flight finish
            for name in ("tf2", "runtime"):
                self._in_process(name, name, per_phase)
            client_times, load_start = self._load_phase(r)
            if self.args.clients != 1:
                continue
            # The server's idle time between two requests in this round.
            round_times = [t for ts, k in zip(client_times, load_start) for t in ts[k:]]
            round_base = self.base_times["runtime"][-200:]
            gap = max(0.0, float(np.median(round_times) - np.median(round_base))
                      if round_times and round_base else 0.0)
            self.gaps.append(gap)
            self._in_process("runtime", "runtime, paced", per_phase, gap)
        self.stop.set()
        for t in self.threads:
            t.join(timeout=120)

    def _in_process(self, call, times, seconds, gap=0.0):
        """One in-process baseline on the server's CPUs."""
        pin_this_process(self.server_cpus)
        self.offset = baseline(self.calls[call], self.questions, self.args.batch, seconds,
                               self.base_times[times], self.offset, gap)
        pin_this_process(self.client_cpus)

    def _load_phase(self, r):
        """The clients send for their share of ``--seconds`` (``--swap``: a new version in
        the middle round); returns each client's times and where this phase's begin."""
        args = self.args
        client_times = [ts for ts, _, _ in self.out]
        load_start = [len(ts) for ts in client_times]
        self.go.set()
        phase = time.perf_counter()
        if args.swap and r == args.rounds // 2:
            self.swapped_to = self.version + 1
            tmp = os.path.join(self.base, f".bench-copy-{self.swapped_to}")
            shutil.copytree(os.path.join(self.base, str(self.version)), tmp)
            os.rename(tmp, os.path.join(self.base, str(self.swapped_to)))
            print(f"round {r + 1}/{args.rounds}, "
                  f"t={time.perf_counter() - self.started:.1f} s: copied version "
                  f"{self.version} to {self.swapped_to}")
        time.sleep(max(0.0, args.seconds / args.rounds - (time.perf_counter() - phase)))
        self.elapsed += time.perf_counter() - phase
        self.go.clear()
        time.sleep(0.05)
        return client_times, load_start


def version_states(port, model_name):
    """``{version: state name}`` from the server's GetModelStatus."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        req = get_model_status_pb2.GetModelStatusRequest()
        req.model_spec.name = model_name
        return {s.version: get_model_status_pb2.ModelVersionStatus.State.Name(s.state)
                for s in model_service_pb2_grpc.ModelServiceStub(
                    channel).GetModelStatus(req, timeout=30).model_version_status}


def main():
    args = command().parse()
    server_args = args.server_args.split()
    runtime, session_config = thread_settings(server_args)
    server_cpus, client_cpus = cpu_halves(args.pin)
    workdir = tempfile.mkdtemp(prefix="serving-bench-")
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, workdir, ignore_errors=True)
        base = model_base(args, workdir)
        version = latest_version(base)
        questions, source = load_questions(args.data_dir)
        print(f"model {base}/{version}; {source} stories; batch {args.batch}; "
              f"{args.clients} client(s) x {args.seconds:g} s; cores {os.cpu_count()}; "
              f"load average {os.getloadavg()[0]:.2f}; server args {server_args}; "
              + (f"server + baselines on CPUs {sorted(server_cpus)}, clients on "
                 f"{sorted(client_cpus)}" if args.pin else "no pinning"))

        calls = load_baselines(os.path.join(base, str(version)), questions, args.batch,
                               runtime, session_config)
        info_file = os.path.join(workdir, "server.json")
        log = stack.enter_context(tempfile.TemporaryFile())
        proc, port = start_server(base, args.model_name, server_args, info_file, log,
                                  server_cpus)
        rounds = Rounds(args, calls, questions, base, version, server_cpus, client_cpus)
        try:
            rounds.start_clients(port)
            rounds.run()
            print_baselines(rounds.base_times, rounds.gaps)
            status = version_states(port, args.model_name) if args.swap else None
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
        report(args, rounds.out, rounds.elapsed, rounds.base_times, rounds.gaps, status,
               rounds.swapped_to, info_file)


if __name__ == "__main__":
    main()
