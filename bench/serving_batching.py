"""Server-side batching before and after: ``bench/serving_bench.py`` at 1, 4 and 16 clients,
each without batching and with ``--enable_batching`` and a parameters file, run in turn.

    python -m bench.serving_batching --model_base_path /tmp/export/babi \\
        --json results/bench/serving-batching.json

For each client count the two configurations run in the order off, on, on, off, so both see
the same machine and neither always runs first; every run is a full ``serving_bench`` (server
subprocess on loopback, official stubs, in-process baselines interleaved with the load).
Prints QPS, examples/s, p50/p99 client latency and the server's peak RSS per run, and the
batched/unbatched ratios of the means of each configuration's two runs; ``--json`` keeps all
of it with the command, the parameters file and the machine.
``tools.report`` turns that file into the table of ``results/serving.md``.
"""

import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: What each run keeps: throughput, client latency, the server's handler time and memory.
KEYS = ("qps", "client_p50_ms", "client_p99_ms", "server_handler_p50_ms",
        "server_handler_p99_ms", "errors", "requests", "seconds", "peak_rss_mib_server")

#: The batched configuration: merge what queued while the previous batch ran (timeout 0),
#: up to 16 requests, in one thread.
PARAMETERS = """max_batch_size { value: 16 }
batch_timeout_micros { value: 0 }
max_enqueued_batches { value: 100 }
num_batch_threads { value: 1 }
"""


def run(args, clients, server_args, out):
    cmd = [sys.executable, "-m", "bench.serving_bench",
           f"--model_base_path={args.model_base_path}", f"--model_name={args.model_name}",
           f"--clients={clients}", f"--seconds={args.seconds:g}",
           f"--baseline_seconds={args.baseline_seconds:g}", f"--rounds={args.rounds}",
           f"--batch={args.batch}", f"--json={out}"]
    if args.data_dir:
        cmd.append(f"--data_dir={args.data_dir}")
    if server_args:
        cmd.append(f"--server_args={server_args}")
    subprocess.run(cmd, check=True, cwd=REPO, stderr=subprocess.DEVNULL)
    with open(out, encoding="utf-8") as f:
        return json.load(f)


def main():
    from serving.command_flags import Command

    p = Command("python -m bench.serving_batching", __doc__.split("\n")[0])
    p.string("model_base_path", None, "folder with version folders", required=True)
    p.string("model_name", "babi")
    p.string("data_dir", None)
    p.string("clients", "1,4,16")
    p.float("seconds", 10)
    p.float("baseline_seconds", 2)
    p.integer("rounds", 2)
    p.integer("batch", 1)
    p.string("json", None, "also write the numbers to this file")
    args = p.parse()

    work = tempfile.mkdtemp(prefix="serving-batching-")
    params_file = os.path.join(work, "batching.config")
    with open(params_file, "w", encoding="utf-8") as f:
        f.write(PARAMETERS)
    configs = {"unbatched": "",
               "batched": f"--enable_batching=true --batching_parameters_file={params_file}"}
    started, rows, load = time.time(), [], os.getloadavg()[0]
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load average "
          f"{load:.2f}; batching parameters:\n{PARAMETERS}")
    for clients in (int(c) for c in args.clients.split(",")):
        runs = {name: [] for name in configs}
        # A-B-B-A: each configuration runs first once, so drift and order cancel out.
        for i, name in enumerate(["unbatched", "batched", "batched", "unbatched"]):
            r = run(args, clients, configs[name], os.path.join(work, f"{name}-{clients}-{i}.json"))
            runs[name].append(r)
            print(f"{clients:3d} clients, {name:9s}: {r['qps']:8.1f} QPS "
                  f"({r['qps'] * args.batch:.1f} examples/s), p50 {r['client_p50_ms']:.2f} ms, "
                  f"p99 {r['client_p99_ms']:.2f} ms, errors {sum(r['errors'].values())}, "
                  f"server peak RSS {r['peak_rss_mib_server']:.0f} MiB", flush=True)
        for name, rs in runs.items():
            rows.append({"clients": clients, "config": name, "runs": [
                {k: r[k] for k in KEYS} for r in rs], **{
                k: float(np.mean([r[k] for r in rs])) for k in KEYS if k != "errors"},
                "errors": sum(sum(r["errors"].values()) for r in rs)})
        before, after = rows[-2], rows[-1]
        print(f"    batched / unbatched (mean of 2 runs each): QPS "
              f"{after['qps'] / before['qps']:.2f}x, p50 "
              f"{after['client_p50_ms'] / before['client_p50_ms']:.2f}x, p99 "
              f"{after['client_p99_ms'] / before['client_p99_ms']:.2f}x", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"command": "python -m bench.serving_batching " + " ".join(sys.argv[1:]),
                       "batch": args.batch, "seconds": args.seconds,
                       "batching_parameters": PARAMETERS, "cpus": os.cpu_count(),
                       "machine": platform.processor() or platform.machine(),
                       "load_average_start": load,
                       "wall_seconds": time.time() - started, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
