"""Load benchmark of ``python -m serving.server`` with the in-process call as baseline.

    python bench/serving_bench.py --model_base_path /tmp/export/babi --clients 1 --seconds 10
    python bench/serving_bench.py --keras_model runs/babi-task1/export/model.keras ...
    python bench/serving_bench.py ... --swap          # a new version appears mid-run
    python bench/serving_bench.py ... --server_args="--enable_batching"

1. Baseline: the latest version loaded in this process with ``tf.saved_model.load``; its
   ``serving_default`` signature called at the request batch size for ``--baseline_seconds``
   (p50/p99 per call).
2. The server runs as a subprocess on loopback (free ports); ``--clients`` threads, each
   with its own channel and the official ``PredictionServiceStub``, send Predict requests
   for ``--seconds``: QPS, p50/p99 client latency, errors by status code. Baseline and
   load phases alternate (``--rounds``) so that both see the same background load on a
   shared machine.
3. ``--swap``: halfway through, the latest version folder is copied to the next number
   (to a hidden name, then one rename); the run reports failed requests and which
   versions answered.
4. SIGTERM to the server; its shutdown line gives the server-side handler time
   (request received -> response built) p50/p99, compared with the baseline.

Stories are the task-1 test stories when ``--data_dir`` finds them, else built-in ones.
"""

import argparse
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
sys.path.insert(0, REPO)
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

FALLBACK = [
    ("Mary moved to the bathroom.\nJohn went to the hallway.", "Where is Mary?"),
    ("Daniel went back to the hallway.\nSandra moved to the garden.\nJohn moved to the office.",
     "Where is Daniel?"),
    ("Sandra journeyed to the bedroom.\nMary travelled to the kitchen.", "Where is Sandra?"),
]


def load_questions(data_dir):
    try:
        from serving.export import join_story
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


def percentiles(times):
    if not times:
        return float("nan"), float("nan")
    p50, p99 = np.percentile(np.asarray(times) * 1e3, [50, 99])
    return float(p50), float(p99)


def load_signature(version_dir, questions, batch):
    fn = tf.saved_model.load(version_dir).signatures["serving_default"]
    for _ in range(3):  # warm-up (the first call optimises the graph)
        fn(story=tf.constant([questions[0][0]] * batch),
           question=tf.constant([questions[0][1]] * batch))
    return fn


def baseline(fn, questions, batch, seconds, times, offset=0):
    """Calls the signature in this process for ``seconds``; appends the call times."""
    i = offset
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        chunk = [questions[(i + j) % len(questions)] for j in range(batch)]
        i += batch
        story = np.array([s.encode() for s, _ in chunk], dtype=object)
        question = np.array([q.encode() for _, q in chunk], dtype=object)
        t = time.perf_counter()
        fn(story=story, question=question)["answer"].numpy()
        times.append(time.perf_counter() - t)
    return i


def start_server(base, model_name, extra_args):
    cmd = [sys.executable, "-m", "serving.server", "--port=0", f"--model_name={model_name}",
           f"--model_base_path={base}", "--file_system_poll_wait_seconds=0.5", *extra_args]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, PYTHONPATH=REPO))
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stderr], daemon=True).start()
    log, deadline = [], time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            continue
        log.append(line)
        if "gRPC ModelServer at" in line:
            return proc, int(line.split(":")[-1].split()[0]), lines, log
    proc.kill()
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
    out.append((times, errors, versions))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model_base_path", help="folder with integer version folders")
    p.add_argument("--keras_model", help="or: a model.keras to export first (vocab.txt next to it)")
    p.add_argument("--model_name", default="babi")
    p.add_argument("--data_dir", default=os.path.join(REPO, "..", "shared", "data", "babi"))
    p.add_argument("--clients", type=int, default=1)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--baseline_seconds", type=float, default=5)
    p.add_argument("--rounds", type=int, default=5,
                   help="alternate baseline and load phases this many times")
    p.add_argument("--batch", type=int, default=1, help="examples per request")
    p.add_argument("--swap", action="store_true", help="add a new version halfway through")
    p.add_argument("--server_args", default="", help="extra flags for serving.server")
    p.add_argument("--json", help="also write the numbers to this file")
    args = p.parse_args()

    # The baseline runs with the server's TensorFlow thread settings.
    for flag, setter in (("--tensorflow_intra_op_parallelism=",
                          tf.config.threading.set_intra_op_parallelism_threads),
                         ("--tensorflow_inter_op_parallelism=",
                          tf.config.threading.set_inter_op_parallelism_threads)):
        for arg in args.server_args.split():
            if arg.startswith(flag) and int(arg[len(flag):]):
                setter(int(arg[len(flag):]))
    workdir = tempfile.mkdtemp(prefix="serving-bench-")
    try:
        if args.keras_model:
            import keras

            import tpr_keras.models  # noqa: F401
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
              f"load average {os.getloadavg()[0]:.2f}")

        fn = load_signature(os.path.join(base, str(version)), questions, args.batch)
        proc, port, lines, log = start_server(base, args.model_name, args.server_args.split())
        base_times, offset = [], 0
        try:
            go, stop, out = threading.Event(), threading.Event(), []
            threads = [threading.Thread(target=client_loop,
                                        args=(port, args.model_name, questions, args.batch,
                                              go, stop, k * 997, out))
                       for k in range(args.clients)]
            for t in threads:
                t.start()
            time.sleep(1.0)  # clients connected and warmed up
            # Interleaved rounds: baseline phase (clients paused), then load phase; on a
            # shared machine both see the same background load.
            elapsed, swapped_to, started = 0.0, None, time.perf_counter()
            for r in range(args.rounds):
                go.clear()
                time.sleep(0.05)  # let requests in flight finish
                offset = baseline(fn, questions, args.batch, args.baseline_seconds / args.rounds,
                                  base_times, offset)
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
            stop.set()
            for t in threads:
                t.join(timeout=120)
            b50, b99 = percentiles(base_times)
            print(f"in-process signature call (this process, interleaved): {len(base_times)} "
                  f"calls, p50 {b50:.3f} ms, p99 {b99:.3f} ms")
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
        time.sleep(0.2)
        while not lines.empty():
            log.append(lines.get())
        summary = [x for x in log if "Shut down; served" in x]

        times = [t for ts, _, _ in out for t in ts]
        errors = sum((e for _, e, _ in out), collections.Counter())
        versions = sum((v for _, _, v in out), collections.Counter())
        c50, c99 = percentiles(times)
        qps = len(times) / elapsed
        print(f"server: {len(times)} requests in {elapsed:.1f} s = {qps:.1f} QPS "
              f"({qps * args.batch:.1f} examples/s); client latency p50 {c50:.3f} ms, "
              f"p99 {c99:.3f} ms; errors {sum(errors.values())} {dict(errors) or ''}")
        s50 = s99 = m50 = m99 = float("nan")
        if summary:
            text = summary[-1]
            s50, s99, m50, m99 = (float(x.split(" ms")[0]) for x in text.split("p50 ")[1:3]
                                  for x in (x, x.split("p99 ")[1]))
            print(f"server handler time: p50 {s50:.3f} ms, p99 {s99:.3f} ms; of which the "
                  f"signature call inside the server: p50 {m50:.3f} ms, p99 {m99:.3f} ms")
        print(f"ratio to the in-process call (p50): server handler {s50 / b50:.2f}x, "
              f"client round trip {c50 / b50:.2f}x; server overhead outside the signature "
              f"call (p50 handler - p50 call): {s50 - m50:.3f} ms")
        if args.swap:
            print(f"versions that answered: {dict(versions)}; status after the run: {status}; "
                  f"failed requests: {sum(errors.values())}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"clients": args.clients, "batch": args.batch, "seconds": elapsed,
                           "requests": len(times), "qps": qps, "client_p50_ms": c50,
                           "client_p99_ms": c99, "errors": dict(errors),
                           "server_handler_p50_ms": s50, "server_handler_p99_ms": s99,
                           "server_call_p50_ms": m50, "server_call_p99_ms": m99,
                           "baseline_p50_ms": b50, "baseline_p99_ms": b99,
                           "versions": dict(versions), "swapped_to": swapped_to,
                           "server_args": args.server_args}, f, indent=1)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
