"""Soak test of ``serving.server``: mixed clients and version churn, its memory sampled.

Clients and version churn run for a bounded time against a server subprocess; its memory,
descriptors and threads are sampled throughout.

    python -m bench.serving_soak --minutes 3 --json /tmp/soak3.json
    python -m bench.serving_soak --minutes 60 --clients 3 --json results/serving_soak.json
    python -m bench.serving_soak --model_base_path exports/babi ...   # no export first

1. Exports ``--preset`` (``python -m train.export``) unless ``--model_base_path`` names an
   export; its latest version is the template of every version of the run, copied into a
   temporary base path (the user's folder is never touched).
2. Starts the server as a subprocess on loopback (free gRPC and REST ports), asks it every
   story once: those answers are the reference.
3. ``--clients`` threads send requests back to back: valid Predict requests of 1-3 stories
   (``--rest_fraction`` of them over REST), and ``--malformed_fraction`` malformed ones
   (unknown model, version or signature, missing input, wrong dtype, batch mismatch,
   undecodable bytes; REST: bad JSON, no instances, unknown input or model), each expected
   to get TF Serving's status for it (:mod:`bench.serving_soak_cases`).
4. Every ``--churn_seconds`` a new version appears (copied to a hidden name, then one
   rename), of the kinds of ``--kinds`` in turn: ``good`` copies, a ``corrupt``
   ``saved_model.pb``, ``empty_variables``, ``missing_assets``; all but the newest
   ``--keep_versions`` folders are deleted.
5. Every ``--sample_seconds`` the server's RSS, peak RSS, open descriptors and threads are
   read from ``/proc/<pid>``.
6. After ``--minutes`` (or ``--max_requests``, ``--max_versions``) the clients and the churn
   stop; the bench waits for the newest good version to serve, stops the server (SIGTERM)
   and reports: failed valid requests, answers that differ from the reference, unexpected
   statuses of malformed requests, the version served at the end, examples/s, the memory
   checks (:mod:`bench.serving_soak_report`). Exit status 0 when every check passed, 3 when
   one failed.
"""

import collections
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from bench import serving_soak_cases as cases  # noqa: E402
from bench.serving_soak_report import Sampler, checks, report  # noqa: E402
from bench.serving_soak_versions import KINDS, Churn, newest_version, settle  # noqa: E402
from serving.model_server.server_process import (  # noqa: E402
    ServerDidNotStart,
    start_server_process,
)

#: Exit status when the run finished but a target was missed.
CHECK_FAILED = 3


def export_preset(preset, export_dir, model_name):
    """``python -m train.export --preset ...`` into ``export_dir``; returns the base path."""
    cmd = [sys.executable, "-m", "train.export", "--preset", preset, "--export_dir",
           export_dir, "--model_name", model_name]
    done = subprocess.run(cmd, cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO),
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"export failed: {' '.join(cmd)}\n{done.stderr[-3000:]}")
    return os.path.join(export_dir, model_name)


def start_server(base, model_name, extra_args, workdir):
    """The server subprocess and its ``{"grpc": port, "rest": port}`` (from
    ``--server_info_file``); its log goes to ``workdir/server.log``."""
    info = os.path.join(workdir, "server.json")
    flags = ["--port=0", "--rest_api_port=-1", f"--model_name={model_name}",
             f"--model_base_path={base}", "--file_system_poll_wait_seconds=1", *extra_args]
    log = open(os.path.join(workdir, "server.log"), "w", encoding="utf-8")  # noqa: SIM115
    try:
        proc, started = start_server_process(flags, info, log, cwd=REPO, timeout_s=600)
    except ServerDidNotStart as exc:
        raise SystemExit(str(exc)) from None
    return proc, started["ports"], info


def reference_answers(ports, model_name):
    """Each story's answer from the first version, over gRPC; REST must agree."""
    ctx = cases.Context(ports["grpc"], ports["rest"], model_name)
    try:
        reference = {}
        for pair in cases.STORIES:
            status, reply = cases.grpc_call(lambda: ctx.stub.Predict(
                cases.predict_request(model_name, [pair]), timeout=120))
            if status != "OK":
                raise SystemExit(f"the reference request failed: {status}")
            reference[pair] = cases.grpc_answers(reply)[0]
            status, rest = cases.rest_predict(
                ctx, {"instances": [{"story": pair[0], "question": pair[1]}]})
            if rest != [reference[pair]]:
                raise SystemExit(f"REST answered {status} {rest}, gRPC {reference[pair]!r}")
        return reference
    finally:
        ctx.close()


class Clients:
    """``n`` client threads of mixed requests, and what they counted."""

    def __init__(self, n, ports, model_name, reference, args, stop, started):
        self.counts = collections.Counter()
        self.failed = collections.Counter()  # valid requests, by status
        self.malformed = collections.Counter()  # "kind: status"
        self.unexpected = collections.Counter()
        self.versions = collections.Counter()
        self.first_new_version_t = None
        self._lock = threading.Lock()
        self._args, self._reference, self._stop, self._started = args, reference, stop, started
        self._threads = [threading.Thread(target=self._loop, name=f"client-{k}",
                                          args=(k, ports, model_name)) for k in range(n)]

    def start(self):
        for t in self._threads:
            t.start()
        return self

    def join(self):
        for t in self._threads:
            t.join(timeout=300)

    def _loop(self, k, ports, model_name):
        rng = random.Random(self._args.seed * 1000 + k)
        ctx = cases.Context(ports["grpc"], ports["rest"], model_name)
        try:
            while not self._stop.is_set():
                with self._lock:
                    if sum(self.counts[x] for x in ("valid", "malformed")) >= (
                            self._args.max_requests):
                        self._stop.set()
                        return
                rest = rng.random() < self._args.rest_fraction
                if rng.random() < self._args.malformed_fraction:
                    kind, send = cases.malformed_case(rng, rest)
                    self._malformed(kind, send(ctx)[0])
                else:
                    self._valid(ctx, *cases.valid_case(rng, rest))
        finally:
            ctx.close()

    def _valid(self, ctx, kind, pairs, send):
        status, answers, version = send(ctx)
        with self._lock:
            self.counts["valid"] += 1
            if answers is None:
                self.failed[f"{kind}: {status}"] += 1
                return
            self.counts["examples"] += len(pairs)
            if answers != [self._reference[p] for p in pairs]:
                self.counts["wrong"] += 1
            if version is not None:
                self.versions[version] += 1
                if version != 1 and self.first_new_version_t is None:
                    self.first_new_version_t = time.monotonic() - self._started

    def _malformed(self, kind, status):
        with self._lock:
            self.counts["malformed"] += 1
            self.malformed[f"{kind}: {status}"] += 1
            if status not in cases.EXPECTED[kind]:
                self.unexpected[f"{kind}: {status}"] += 1


def command():
    from serving.command_flags import Command

    p = Command("python -m bench.serving_soak", __doc__.split("\n")[0],
                example="python -m bench.serving_soak --minutes 3 --json /tmp/soak3.json")
    p.float("minutes", 3.0, "how long the clients and the churn run")
    p.integer("clients", 3, "client threads", lower_bound=1)
    p.float("rest_fraction", 0.3, "share of requests sent over REST")
    p.float("malformed_fraction", 0.2, "share of malformed requests")
    p.float("churn_seconds", 20.0, "a new version every this many seconds (0: none)")
    p.string("kinds", "good,corrupt,good,empty_variables,good,missing_assets",
             "the kinds of the new versions, in turn")
    p.integer("keep_versions", 3, "version folders kept on disk (older ones are deleted)",
              lower_bound=1)
    p.integer("max_requests", 5_000_000, "stop after this many requests", lower_bound=1)
    p.integer("max_versions", 1000, "stop the churn after this many new versions")
    p.float("sample_seconds", 2.0, "how often the server's memory is read")
    p.float("warmup_seconds", None, "samples before this are not judged (default: 10 percent "
            "of the run, or until the first new version answers if later)")
    p.string("preset", "tpr_rnn_babi_all_tasks", "the preset exported and served")
    p.string("model_base_path", None, "serve the latest version of this export instead")
    p.string("model_name", "babi")
    p.string("server_args", "", "extra flags for serving.server")
    p.integer("seed", 0)
    p.string("server_log", None, "keep the server's log in this file")
    p.string("json", None, "also write the numbers to this file")
    return p


def main(argv=None):
    flags = command()
    args = flags.parse(argv)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        flags.error(f"--kinds: unknown {unknown} (kinds: {', '.join(KINDS)})")
    if args.minutes <= 0 or args.sample_seconds <= 0:
        flags.error("--minutes and --sample_seconds must be positive")
    workdir = tempfile.mkdtemp(prefix="serving-soak-")
    proc = None
    try:
        source = args.model_base_path or export_preset(
            args.preset, os.path.join(workdir, "export"), args.model_name)
        template = os.path.join(source, newest_version(source))
        base = os.path.join(workdir, "models", args.model_name)
        os.makedirs(base)
        shutil.copytree(template, os.path.join(base, "1"))
        proc, ports, info = start_server(base, args.model_name, args.server_args.split(),
                                         workdir)
        reference = reference_answers(ports, args.model_name)
        stop, started = threading.Event(), time.monotonic()
        sampler = Sampler(proc.pid, args.sample_seconds, started).start()
        sampler.sample()
        churn = Churn(base, template, kinds, args, stop, started).start()
        clients = Clients(args.clients, ports, args.model_name, reference, args, stop,
                          started).start()
        stop.wait(args.minutes * 60)
        stop.set()
        elapsed = time.monotonic() - started
        clients.join()
        churn.join()
        served, status = settle(ports["grpc"], args.model_name, churn.newest_good)
        sampler.sample()
        sampler.stop()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=180)
        warmup = args.warmup_seconds
        if warmup is None:
            warmup = max(0.1 * elapsed, clients.first_new_version_t or 0.0)
        result = summary(args, elapsed, warmup, clients, churn, served, status, info)
        result.update(checks(result, sampler.samples, warmup))
        result["samples"] = sampler.samples
        report(result, args.json)
        return 0 if result["passed"] else CHECK_FAILED
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
        if args.server_log and os.path.exists(os.path.join(workdir, "server.log")):
            shutil.copyfile(os.path.join(workdir, "server.log"), args.server_log)
        shutil.rmtree(workdir, ignore_errors=True)


def summary(args, elapsed, warmup, clients, churn, served, status, info):
    """The run's numbers (without the checks and the samples)."""
    with open(info, encoding="utf-8") as f:
        server_stats = json.load(f).get("stats", {})
    c = clients.counts
    return {
        "minutes": args.minutes, "seconds": elapsed, "clients": args.clients,
        "rest_fraction": args.rest_fraction, "malformed_fraction": args.malformed_fraction,
        "churn_seconds": args.churn_seconds, "kinds": args.kinds,
        "server_args": args.server_args, "preset": None if args.model_base_path
        else args.preset, "cores": os.cpu_count(), "warmup_seconds": warmup,
        "examples_per_second": c["examples"] / elapsed,
        "requests": {"valid": c["valid"], "valid_failed": sum(clients.failed.values()),
                     "valid_failed_by_status": dict(clients.failed),
                     "wrong_answers": c["wrong"], "malformed": c["malformed"],
                     "malformed_by_status": dict(clients.malformed),
                     "malformed_unexpected": sum(clients.unexpected.values()),
                     "malformed_unexpected_examples": dict(clients.unexpected)},
        "versions": {"dropped": churn.dropped, "deleted": churn.deleted,
                     "answered": {str(k): n for k, n in sorted(clients.versions.items())},
                     "expected_at_end": churn.newest_good, "served_at_end": served,
                     "status_at_end": status},
        "server_stats": server_stats,
        "bench_peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


if __name__ == "__main__":
    sys.exit(main())
