"""How much slower is one signature call when the CPU was idle (or busy) just before it?

    taskset -c 0 python -m bench.serving_idle_gap --model_dir /tmp/export/babi/1

Loads the version with the server's own ``Servable`` (Session runtime, one intra-op thread,
ops in the caller's thread) and calls ``serving_default`` at batch 1 on task-1 test stories,
``--calls`` times for each of these things done before every call:

- nothing (a tight loop, like an in-process benchmark);
- ``time.sleep`` of 0.2, 0.5 and 1 ms (the CPU goes idle, as a server's does between the
  requests of one client);
- streaming through 2 MB of memory (cache pollution);
- Python work of a request's size, five times: a PredictRequest built, serialized and parsed,
  a regex substitution and a sort;
- with ``--busy_cpu N``: a busy loop running on CPU N the whole time (a loaded neighbour).

It explains why the call inside the server is slower than the same call in a tight loop
(``results/serving.md``). Pin it to one CPU (``taskset``) so that it measures one core.
"""

import os
import re
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bench.serving_bench import load_questions, make_request  # noqa: E402
from serving.core.servable import Servable  # noqa: E402
from tensorflow_serving.apis import predict_pb2  # noqa: E402


def main():
    from serving.command_flags import Command

    p = Command("python -m bench.serving_idle_gap", __doc__.split("\n")[0])
    p.string("model_dir", None, "one version folder (a SavedModel)", required=True)
    p.string("data_dir", os.path.join(REPO, "..", "shared", "data", "babi"))
    p.integer("calls", 3000)
    p.integer("busy_cpu", -1, "also run with a busy loop here")
    args = p.parse()

    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1,
                                      inter_op_parallelism_threads=-1)
    sig = Servable("babi", 1, args.model_dir, ["serve"], "session", config).signature("")
    questions, source = load_questions(args.data_dir)
    inputs = [{"story": np.array([s.encode()], dtype=object),
               "question": np.array([q.encode()], dtype=object)} for s, q in questions[:200]]
    for x in inputs[:50]:
        sig.run(x)
    memory = np.random.default_rng(0).random(1 << 18)  # 2 MB

    def python_work():
        for _ in range(5):
            data = make_request("babi", [questions[0]]).SerializeToString()
            predict_pb2.PredictRequest.FromString(data)
            re.sub("a+", "b", "caaat" * 20)
            sorted(np.random.random(200).tolist())

    before = {
        "nothing (tight loop)": None,
        "time.sleep(0.0002)": lambda: time.sleep(0.0002),
        "time.sleep(0.0005)": lambda: time.sleep(0.0005),
        "time.sleep(0.001)": lambda: time.sleep(0.001),
        "stream through 2 MB of memory": lambda: memory.sum(),
        "a request's Python work x5": python_work,
    }
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    print(f"{args.model_dir}; {source} stories; {args.calls} calls per row; this process on "
          f"CPUs {affinity}; load average {os.getloadavg()[0]:.2f}")

    def measure(work):
        times = []
        for i in range(args.calls):
            if work is not None:
                work()
            t = time.perf_counter()
            sig.run(inputs[i % len(inputs)])
            times.append(time.perf_counter() - t)
        return np.percentile(np.asarray(times) * 1e3, [50, 99])

    print("| before each call | p50 ms | p99 ms |\n|---|---|---|")
    for name, work in before.items():
        p50, p99 = measure(work)
        print(f"| {name} | {p50:.2f} | {p99:.2f} |", flush=True)
    if args.busy_cpu >= 0:
        busy = subprocess.Popen(["taskset", "-c", str(args.busy_cpu), sys.executable, "-c",
                                 "while True: pass"])
        try:
            time.sleep(0.5)
            p50, p99 = measure(None)
            print(f"| nothing, a busy loop on CPU {args.busy_cpu} | {p50:.2f} | {p99:.2f} |")
        finally:
            busy.kill()


if __name__ == "__main__":
    main()
