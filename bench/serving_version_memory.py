"""What a model version leaves behind when it is unloaded: RSS after each of many swaps.

    python -m bench.serving_version_memory --versions 30
    python -m bench.serving_version_memory --model_base_path exports/babi --json /tmp/v.json

One process, one :class:`~serving.core.manager.ModelManager` (the server's, with its
warm-up), the latest version of ``--model_base_path`` (or of ``--preset``, exported first)
as the template: each round drops the next version into a temporary base path, polls (the
new version loads, the old one is unloaded, as ``serving.server`` does every
``--file_system_poll_wait_seconds``), deletes the old folder and sends
``--requests_per_version`` Predict calls to the new version; then it prints the process's
RSS, open descriptors, threads, the tf.Graph objects still alive (an unloaded version's
graph is one of them until it is collected) and the garbage collector's object count. Like
the server, it never calls the garbage collector itself. At the end: the RSS growth per
version, fitted over the rounds after ``--skip`` (the first rounds fill the allocator).
"""

import gc
import json
import os
import shutil
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

from bench.serving_soak import export_preset  # noqa: E402
from bench.serving_soak_cases import STORIES  # noqa: E402
from bench.serving_soak_report import read_proc  # noqa: E402
from bench.serving_soak_versions import newest_version  # noqa: E402


def live_graphs(tf) -> int:
    """tf.Graph objects still alive, collectable or not (without collecting them)."""
    return sum(1 for o in gc.get_objects() if isinstance(o, tf.Graph))


def measure(template, versions, requests, runtime, skip):
    """The rows ``{"version", "rss_mib", "fds", "threads", "graphs", "gc_objects",
    "seconds"}`` of ``versions`` swaps, and the fitted growth per version (MiB)."""
    import serving.core  # noqa: F401  (TensorFlow starts with its noise filtered)
    from tensorflow_serving.config import model_server_config_pb2

    from serving.core._tf import tf
    from serving.core.manager import ModelManager

    base = tempfile.mkdtemp(prefix="version-memory-")
    try:
        shutil.copytree(template, os.path.join(base, "1"))
        manager = ModelManager([model_server_config_pb2.ModelConfig(
            name="m", base_path=base, model_platform="tensorflow")], runtime=runtime)
        story = np.array([s.encode() for s, _ in STORIES], dtype=object)
        question = np.array([q.encode() for _, q in STORIES], dtype=object)
        rows = []
        try:
            for version in range(2, versions + 2):
                started = time.perf_counter()
                tmp = os.path.join(base, ".new")
                shutil.copytree(template, tmp)
                os.rename(tmp, os.path.join(base, str(version)))
                manager.poll()
                shutil.rmtree(os.path.join(base, str(version - 1)))
                for _ in range(requests):
                    with manager.acquire("m") as servable:
                        servable.signature("").run({"story": story, "question": question})
                row = {"version": version, **read_proc(os.getpid()),
                       "graphs": live_graphs(tf), "gc_objects": len(gc.get_objects()),
                       "seconds": round(time.perf_counter() - started, 2)}
                rows.append(row)
                print(f"version {version:3d}: RSS {row['rss_mib']:7.1f} MiB, fds "
                      f"{row['fds']}, threads {row['threads']}, tf.Graphs alive "
                      f"{row['graphs']}, gc objects {row['gc_objects']} "
                      f"({row['seconds']:.1f} s)", flush=True)
        finally:
            manager.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    tail = rows[skip:]
    slope = (float(np.polyfit([r["version"] for r in tail], [r["rss_mib"] for r in tail],
                              1)[0]) if len(tail) >= 2 else float("nan"))
    return rows, slope


def main(argv=None):
    from serving.command_flags import Command

    p = Command("python -m bench.serving_version_memory", __doc__.split("\n")[0],
                example="python -m bench.serving_version_memory --versions 30")
    p.integer("versions", 30, "versions loaded and unloaded", lower_bound=2)
    p.integer("requests_per_version", 10, "Predict calls to each version", lower_bound=0)
    p.integer("skip", 5, "rounds left out of the fit (the allocator fills up)",
              lower_bound=0)
    p.enum("runtime", "session", ["session", "function"], "the servables' runtime")
    p.string("preset", "tpr_rnn_babi_all_tasks", "the preset exported and loaded")
    p.string("model_base_path", None, "load the latest version of this export instead")
    p.string("json", None, "also write the rows and the fit to this file")
    args = p.parse(argv)
    workdir = tempfile.mkdtemp(prefix="version-memory-export-")
    try:
        source = args.model_base_path or export_preset(
            args.preset, os.path.join(workdir, "export"), "m")
        template = os.path.join(source, newest_version(source))
        rows, slope = measure(template, args.versions, args.requests_per_version,
                              args.runtime, args.skip)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"RSS growth per version after the first {args.skip}: {slope:.2f} MiB "
          f"({rows[args.skip - 1 if args.skip else 0]['rss_mib']:.0f} -> "
          f"{rows[-1]['rss_mib']:.0f} MiB)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"versions": args.versions, "runtime": args.runtime,
                       "requests_per_version": args.requests_per_version, "skip": args.skip,
                       "rss_mib_per_version": slope, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
