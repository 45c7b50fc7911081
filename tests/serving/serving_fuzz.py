"""Randomized probe of ``python -m serving.server``: thousands of valid and malformed requests.

    python -m tests.serving.serving_fuzz --model_base_path /tmp/export/babi --requests 10000 \
        --threads 16
    python -m tests.serving.serving_fuzz ... --json fuzz.json --seed 3

Starts the server as a subprocess on loopback (free ports, read back from its
``--server_info_file``), takes each pool question's answer with one plain request, then
sends ``--requests`` requests from ``--threads`` threads, generated from ``--seed`` by
:mod:`tests.serving.fuzz` (gRPC and REST; corrupt bytes, bad shapes and dtypes, bad JSON,
bad ``Content-Length``, short bodies, oversize messages, unknown models, valid requests...).
Prints requests per category and status, the server's peak RSS and its mean RSS over the
first and last 10 % of the requests, and the server's own error counts
(``ModelServer.stats()``). Exits 1 on any failure: a status outside the category's
expected set, INTERNAL/UNKNOWN/5xx (other than 501 for an unimplemented verb), a dropped
connection, a wrong answer to a valid request, or a server that died.

The server gets ``--max_message_bytes`` (default 8 MiB here, so that oversize cases are
cheap to send) and ``--rest_api_timeout_in_ms`` (default 2000 here, so that short-body
cases cost 2 s each instead of 30); other flags are the server's defaults unless
``--server_args`` adds some.
"""

import json
import os
import signal
import sys
import tempfile
import threading

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from serving.model_server.server_process import (  # noqa: E402
    ServerDidNotStart,
    start_server_process,
)
from tests.serving import fuzz  # noqa: E402


def rss_mib(pid, field="VmRSS"):
    """The process's resident memory (``VmHWM``: its peak so far), MiB; Linux only."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def load_pool(data_dir, limit):
    try:
        from tpr_keras.export.babi_tokenizer import join_story
        from tpr_keras.data import babi

        root = babi.find_babi_dir(data_dir, download=False)
        samples = babi.parse_babi_file(babi.task_files(root, 1)[1])[:limit]
        return [(join_story(s.story), " ".join(s.question)) for s in samples], "task-1 test"
    except (FileNotFoundError, OSError, ImportError) as exc:
        print(f"(no bAbI data: {exc.__class__.__name__}; using built-in stories)")
        return list(fuzz.STORIES), "built-in"


def start_server(base, name, info_file, server_args):
    """The server subprocess, its ports and its log (a temporary file)."""
    flags = ["--port=0", "--rest_api_port=-1", f"--model_name={name}",
             f"--model_base_path={base}", *server_args]
    log = tempfile.TemporaryFile()
    try:
        proc, info = start_server_process(flags, info_file, log, cwd=REPO)
    except ServerDidNotStart as exc:
        raise SystemExit(str(exc)) from None
    return proc, info["ports"], log


def command():
    from serving.command_flags import Command

    p = Command("python -m tests.serving.serving_fuzz", __doc__.split("\n\n")[0])
    p.string("model_base_path", None, "folder with integer version folders", required=True)
    p.string("model_name", "babi")
    p.string("data_dir", os.path.join(REPO, "..", "shared", "data", "babi"))
    p.integer("pool", 50, "task-1 test questions to draw from")
    p.integer("requests", 10_000)
    p.integer("threads", 16)
    p.integer("seed", 0)
    p.integer("max_message_bytes", 8 << 20)
    p.integer("rest_api_timeout_in_ms", 2000)
    p.string("server_args", "", "extra flags for serving.server")
    p.string("json", None, "also write the numbers to this file")
    return p


def run_sampled(proc, target, args, pool):
    """``fuzz.run`` with the server's RSS sampled every 50 ms: the report, the samples
    ``(requests done, RSS MiB)`` and the RSS before the first request."""
    done = [0]
    samples = []
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            rss = rss_mib(proc.pid)
            if rss is not None:
                samples.append((done[0], rss))
            stop.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    start_rss = rss_mib(proc.pid)
    sampler.start()
    lock = threading.Lock()

    def progress(_i, _result):
        with lock:
            done[0] += 1

    try:
        report = fuzz.run(target, args.requests, seed=args.seed, threads=args.threads, pool=pool,
                          on_result=progress)
    finally:
        stop.set()
        sampler.join()
    return report, samples, start_rss


def rss_summary(samples, n, start_rss, hwm):
    """The RSS numbers: at start, peak, mean over the first and last 10 % of the ``n``
    requests; and the last / first ratio."""
    tenth = max(1, n // 10)
    first = [r for d, r in samples if d < tenth]
    last = [r for d, r in samples if d >= n - tenth]
    peak = hwm if hwm is not None else max((r for _, r in samples), default=float("nan"))
    rss = {"start_mib": start_rss, "peak_mib": peak,
           "first_10pct_mean_mib": sum(first) / len(first) if first else None,
           "last_10pct_mean_mib": sum(last) / len(last) if last else None}
    ratio = (rss["last_10pct_mean_mib"] / rss["first_10pct_mean_mib"]
             if first and last else float("nan"))
    return rss, ratio


def main(argv=None):
    args = command().parse(argv)
    pool, source = load_pool(args.data_dir, args.pool)
    workdir = tempfile.mkdtemp(prefix="serving-fuzz-")
    info_file = os.path.join(workdir, "server.json")
    server_args = [f"--max_message_bytes={args.max_message_bytes}",
                   f"--rest_api_timeout_in_ms={args.rest_api_timeout_in_ms}",
                   *args.server_args.split()]
    proc, ports, log = start_server(os.path.abspath(args.model_base_path), args.model_name,
                                    info_file, server_args)
    print(f"server pid {proc.pid}, ports {ports}, flags {server_args}; {len(pool)} {source} "
          f"questions; {args.requests} requests from {args.threads} threads, seed {args.seed}")
    target = fuzz.Target(ports["grpc"], ports["rest"], args.model_name,
                         max_message_bytes=args.max_message_bytes,
                         rest_timeout_s=args.rest_api_timeout_in_ms / 1000)

    report, samples, start_rss = run_sampled(proc, target, args, pool)
    alive = proc.poll() is None
    hwm = rss_mib(proc.pid, "VmHWM")  # peak RSS, between our samples too
    still_answers = False
    if alive:
        try:
            fuzz.reference_answers(target, pool[:2])
            still_answers = True
        except Exception as exc:  # noqa: BLE001
            print(f"the server no longer answers: {exc}")
        proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=120)
    with open(info_file, encoding="utf-8") as f:
        server_stats = json.load(f).get("stats", {})

    table = report.table()
    width = max(len(k) for k in table)
    print(f"\n{'category':<{width}}  statuses")
    for category, statuses in table.items():
        print(f"{category:<{width}}  " + ", ".join(f"{s} {n}" for s, n in statuses.items()))
    totals = {}
    for statuses in table.values():
        for s, n in statuses.items():
            totals[s] = totals.get(s, 0) + n
    n = len(report.results)
    rss, ratio = rss_summary(samples, n, start_rss, hwm)
    peak = rss["peak_mib"]
    failures = report.failures
    print(f"\n{n} requests in {report.seconds:.1f} s ({n / report.seconds:.0f}/s), "
          f"{len(table)} categories; statuses: {dict(sorted(totals.items()))}")
    print(f"server RSS: start {start_rss:.0f} MiB, peak (VmHWM) {peak:.0f} MiB; mean over the first "
          f"10 % of requests {rss['first_10pct_mean_mib'] or float('nan'):.0f} MiB, last 10 % "
          f"{rss['last_10pct_mean_mib'] or float('nan'):.0f} MiB (last / first {ratio:.2f}x)")
    print(f"server's own counts: {server_stats.get('errors')} errors; requests "
          f"{server_stats.get('requests')}")
    print(f"server alive after the run: {alive}; answers a valid request: {still_answers}; "
          f"exit code after SIGTERM: {code}")
    print(f"failures: {len(failures)}")
    for r in failures[:20]:
        print(f"  {r.category} [{r.transport}] -> {r.status}: {r.detail}")
    log.seek(0)
    text = log.read().decode("utf-8", "replace")
    tracebacks = text.count("Traceback (most recent call last)")
    print(f"server log: {len(text.splitlines())} lines, {tracebacks} tracebacks")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"requests": n, "seconds": report.seconds, "seed": args.seed,
                       "threads": args.threads, "server_flags": server_args, "table": table,
                       "statuses": totals, "failures": [r.__dict__ for r in failures],
                       "rss": rss, "rss_last_over_first": ratio, "server_alive": alive,
                       "server_stats": server_stats, "server_tracebacks": tracebacks}, f,
                      indent=1)
    ok = not failures and alive and still_answers and code == 0 and tracebacks == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
