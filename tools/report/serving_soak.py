"""The committed soak of the server (block ``serving-soak`` of docs/serving_reference.md):
``results/serving/soak_60min.json``, written by ``python -m bench.serving_soak --json``.
Requests, versions, memory after the warm-up and each target, with the command that ran it.
"""

import os

from tools.report.common import load_json

RECORD = os.path.join("results", "serving", "soak_60min.json")


def tenths(result):
    """The mean RSS (MiB) of each tenth of the run's samples, warm-up included."""
    samples = result["samples"]
    n = max(1, len(samples) // 10)
    return [sum(s["rss_mib"] for s in samples[i * n:(i + 1) * n]) / n for i in range(10)
            if samples[i * n:(i + 1) * n]]


def markdown(root):
    """The soak's numbers and targets as a short table."""
    result = load_json(root, RECORD)
    r, v, m = result["requests"], result["versions"], result["memory"]
    kinds = {}
    for dropped in v["dropped"]:
        kinds[dropped["kind"]] = kinds.get(dropped["kind"], 0) + 1
    dropped = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    rows = [
        ("run", f"{result['seconds'] / 60:.0f} min, {result['clients']} clients, "
                f"{result['examples_per_second']:.1f} examples/s"),
        ("valid requests", f"{r['valid']:,}: {r['valid_failed']} failed, "
                           f"{r['wrong_answers']} answers differing from the reference"),
        ("malformed requests", f"{r['malformed']:,}: {r['malformed_unexpected']} answered "
                               "with another status than TF Serving's"),
        ("versions", f"{len(v['dropped'])} dropped into the base path ({dropped}), "
                     f"{v['deleted']} deleted; served at the end: {v['served_at_end']} "
                     f"(newest good: {v['expected_at_end']})"),
        (f"RSS after the {result['warmup_seconds']:.0f} s warm-up",
         f"{m['rss_mib_first']:.0f} → {m['rss_mib_last']:.0f} MiB ({m['rss_change']:+.1%}; "
         f"first and last tenth of {m['samples_after_warmup']:,} samples), "
         f"peak {m['peak_rss_mib']:.0f} MiB"),
        ("RSS by tenth of the run", " · ".join(f"{rss:.0f}" for rss in tenths(result))
                                    + " MiB (mean of each tenth's samples)"),
        ("descriptors, threads", f"{m['fds_first']:.1f} → {m['fds_last']:.1f}, "
                                 f"{m['threads_first']:.1f} → {m['threads_last']:.1f}"),
        ("targets", ", ".join(f"{name.replace('_', ' ')}: {'yes' if ok else 'NO'}"
                              for name, ok in result["checks"].items())),
    ]
    lines = ["| | |", "|---|---|"] + [f"| {k} | {val} |" for k, val in rows]
    command = result.get("command")
    if command:
        lines += ["", f"Command: `{command}`" + (f" on {result['machine']}"
                                                 if result.get("machine") else "") + "."]
    return "\n".join(lines) + "\n"
