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
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
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

from bench.serving_report import percentiles, report  # noqa: E402

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


def start_server(base, model_name, extra_args, info_file, cpus=None):
    """Starts the server; its ports come from --server_info_file (ModelServer.ports)."""
    cmd = [sys.executable, "-m", "serving.server", "--port=0", f"--model_name={model_name}",
           f"--model_base_path={base}", "--file_system_poll_wait_seconds=0.5",
           f"--server_info_file={info_file}", *extra_args]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, PYTHONPATH=REPO),
                            preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stderr], daemon=True).start()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if os.path.exists(info_file):
            with open(info_file, encoding="utf-8") as f:
                return proc, json.load(f)["ports"]["grpc"], lines
        time.sleep(0.1)
    proc.kill()
    log = []
    while not lines.empty():
        log.append(lines.get())
    raise SystemExit("server did not start:\n" + "".join(log)[-3000:])


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


def main():
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
    args = p.parse()

    server_args = args.server_args.split()
    runtime, session_config = thread_settings(server_args)
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    server_cpus = client_cpus = None
    if args.pin:
        if len(cpus) < 2:
            raise SystemExit("--pin needs at least 2 CPUs")
        server_cpus, client_cpus = set(cpus[:len(cpus) // 2]), set(cpus[len(cpus) // 2:])
    workdir = tempfile.mkdtemp(prefix="serving-bench-")
    try:
        if args.keras_model:
            import keras

            import tpr_keras.models.all_families  # noqa: F401
            from serving.export import export_babi_model

            model = keras.models.load_model(args.keras_model)
            export_babi_model(model, os.path.join(os.path.dirname(args.keras_model), "vocab.txt"),
                              workdir, args.model_name)
            base = os.path.join(workdir, args.model_name)
        elif args.model_base_path:
            base = args.model_base_path
            if args.swap:  # never add versions to the user's folder
                v = latest_version(base)
                shutil.copytree(os.path.join(base, str(v)), os.path.join(workdir, "m", str(v)))
                base = os.path.join(workdir, "m")
        else:
            raise SystemExit("pass --model_base_path or --keras_model")
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
        proc, port, lines = start_server(base, args.model_name, server_args, info_file,
                                         server_cpus)
        base_times = {"tf2": [], "runtime": []}
        if args.clients == 1:
            base_times["runtime, paced"] = []
        gaps, offset = [], 0
        try:
            go, stop, out = threading.Event(), threading.Event(), []
            threads = [threading.Thread(target=client_loop,
                                        args=(port, args.model_name, questions, args.batch,
                                              go, stop, k * 997, out))
                       for k in range(args.clients)]
            for t in threads:
                t.start()
            while len(out) < args.clients and all(t.is_alive() for t in threads):
                time.sleep(0.1)
            time.sleep(1.0)  # clients connected and warmed up
            # Interleaved rounds: baselines (clients paused), load, paced baseline. On a
            # shared machine all phases see the same background load.
            elapsed, swapped_to, started = 0.0, None, time.perf_counter()
            per_phase = args.baseline_seconds / args.rounds
            for r in range(args.rounds):
                go.clear()
                time.sleep(0.05)  # let requests in flight finish
                pin_this_process(server_cpus)
                for name in ("tf2", "runtime"):
                    offset = baseline(calls[name], questions, args.batch, per_phase,
                                      base_times[name], offset)
                pin_this_process(client_cpus)
                client_times = [ts for ts, _, _ in out]
                load_start = [len(ts) for ts in client_times]
                go.set()
                phase = time.perf_counter()
                if args.swap and r == args.rounds // 2:
                    swapped_to = version + 1
                    tmp = os.path.join(base, f".bench-copy-{swapped_to}")
                    shutil.copytree(os.path.join(base, str(version)), tmp)
                    os.rename(tmp, os.path.join(base, str(swapped_to)))
                    print(f"round {r + 1}/{args.rounds}, "
                          f"t={time.perf_counter() - started:.1f} s: copied version {version} "
                          f"to {swapped_to}")
                time.sleep(max(0.0, args.seconds / args.rounds - (time.perf_counter() - phase)))
                elapsed += time.perf_counter() - phase
                go.clear()
                time.sleep(0.05)
                if args.clients != 1:
                    continue
                # The server's idle time between two requests in this round.
                round_times = [t for ts, k in zip(client_times, load_start) for t in ts[k:]]
                round_base = base_times["runtime"][-200:]
                gap = max(0.0, float(np.median(round_times) - np.median(round_base))
                          if round_times and round_base else 0.0)
                gaps.append(gap)
                pin_this_process(server_cpus)
                offset = baseline(calls["runtime"], questions, args.batch, per_phase,
                                  base_times["runtime, paced"], offset, gap)
                pin_this_process(client_cpus)
            stop.set()
            for t in threads:
                t.join(timeout=120)
            print("in-process calls (this process, interleaved with the load phases):")
            for name, ts in base_times.items():
                b50, b99 = percentiles(ts)
                extra = (f" (idle before each call: median {np.median(gaps) * 1e3:.3f} ms)"
                         if "paced" in name else "")
                print(f"  {name:15s} {len(ts):6d} calls, p50 {b50:.3f} ms, p99 {b99:.3f} ms"
                      + extra)
            status = None
            if args.swap:
                with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                    req = get_model_status_pb2.GetModelStatusRequest()
                    req.model_spec.name = args.model_name
                    status = {s.version: get_model_status_pb2.ModelVersionStatus.State.Name(
                        s.state) for s in model_service_pb2_grpc.ModelServiceStub(
                            channel).GetModelStatus(req, timeout=30).model_version_status}
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
        report(args, out, elapsed, base_times, gaps, status, swapped_to, info_file)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
