"""The numbers of a ``bench.serving_bench`` run: latency percentiles, and the report printed
and written to ``--json`` once the server has stopped (its own statistics, peak memory,
QPS and latency, the server's time against the in-process calls)."""

import collections
import json
import resource

import numpy as np


def percentiles(times):
    if not times:
        return float("nan"), float("nan")
    p50, p99 = np.percentile(np.asarray(times) * 1e3, [50, 99])
    return float(p50), float(p99)


def print_baselines(base_times, gaps):
    """The in-process calls' percentiles (``gaps``: the paced one's idle time per round)."""
    print("in-process calls (this process, interleaved with the load phases):")
    for name, ts in base_times.items():
        b50, b99 = percentiles(ts)
        extra = (f" (idle before each call: median {np.median(gaps) * 1e3:.3f} ms)"
                 if "paced" in name else "")
        print(f"  {name:15s} {len(ts):6d} calls, p50 {b50:.3f} ms, p99 {b99:.3f} ms" + extra)


def report(args, out, elapsed, base_times, gaps, status, swapped_to, info_file):
    """Prints the load phase's numbers next to the server's own (``info_file``: its
    ``--server_info_file``, with ``ModelServer.stats()`` at shutdown) and the baselines'
    (``base_times``), and writes them to ``args.json`` when given."""
    with open(info_file, encoding="utf-8") as f:
        server_stats = json.load(f).get("stats", {})  # ModelServer.stats() at shutdown
    # Peak resident memory: the server (the largest child waited for) and this process.
    server_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    bench_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS: server {server_rss:.0f} MiB, benchmark process {bench_rss:.0f} MiB")

    times = [t for ts, _, _ in out for t in ts]
    errors = sum((e for _, e, _ in out), collections.Counter())
    versions = sum((v for _, _, v in out), collections.Counter())
    c50, c99 = percentiles(times)
    qps = len(times) / elapsed
    print(f"server: {len(times)} requests in {elapsed:.1f} s = {qps:.1f} QPS "
          f"({qps * args.batch:.1f} examples/s); client latency p50 {c50:.3f} ms, "
          f"p99 {c99:.3f} ms; errors {sum(errors.values())} {dict(errors) or ''}")
    s50 = s99 = m50 = m99 = float("nan")
    if "handler_ms" in server_stats and "signature_call_ms" in server_stats:
        s50, s99 = (server_stats["handler_ms"][k] for k in ("p50", "p99"))
        m50, m99 = (server_stats["signature_call_ms"][k] for k in ("p50", "p99"))
        print(f"server handler time: p50 {s50:.3f} ms, p99 {s99:.3f} ms; of which the "
              f"signature call inside the server: p50 {m50:.3f} ms, p99 {m99:.3f} ms")
    ratios = {name: s50 / percentiles(ts)[0] for name, ts in base_times.items()}
    print("server handler time / in-process call (p50): "
          + ", ".join(f"{name} {r:.2f}x" for name, r in ratios.items())
          + f"; server overhead outside the signature call (p50 handler - p50 call): "
          f"{s50 - m50:.3f} ms")
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
                       "baselines_p50_p99_ms": {k: percentiles(v)
                                                for k, v in base_times.items()},
                       "ratios": ratios,
                       "paced_gap_ms": float(np.median(gaps) * 1e3) if gaps else None,
                       "versions": dict(versions), "swapped_to": swapped_to,
                       "server_args": args.server_args, "pin": args.pin,
                       "peak_rss_mib_server": server_rss,
                       "peak_rss_mib_bench": bench_rss}, f, indent=1)
