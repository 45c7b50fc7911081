"""Serve trained presets from serving/models.config and score their test sets over gRPC.

    python -m tools.preset_serving_check --preset tpr_rnn_babi_all_tasks \
        --data_dir ../shared/data/babi [--sample] [--json FILE]

Exports each preset through its task model (``TaskModel.from_preset(name).export``, what
``train.export`` runs) into a temporary folder, starts the embedded TF Serving-compatible
server from ``serving/models.config`` (base paths moved to that folder,
:mod:`serving.model_server.in_process`), sends every question of the official test files
(with ``--sample``, the first questions of each, the preset's recorded sample) as raw text
through the official ``tensorflow-serving-api`` stubs, one Predict request per task / split /
module (the requests and the recorded accuracies: :mod:`tpr_keras.evaluation.sample_requests`),
and prints the served accuracy beside the one the preset recorded. Exits 1 if any differs by
more than 0.05 points. ``tests/presets/test_shipped_presets.py`` runs the same pieces on
every preset's recorded sample.
"""

import contextlib
import json
import os
import pathlib
import sys
import tempfile
import time

from tpr_keras.evaluation.sample_requests import (
    ANSWER_OUTPUT,
    accuracy_rows,
    recorded_accuracy,
    sample_requests,
)

REPO = pathlib.Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def serve_presets(names, root):
    """Exports ``names`` under ``root/exports`` and serves them from serving/models.config;
    yields ``(PredictionServiceStub, {model name: metadata})``."""
    from serving.model_server.in_process import serve_model_config
    from tpr_keras.models import TaskModel

    metas = {}
    for name in names:
        task_model = TaskModel.from_preset(name)
        task_model.export(os.path.join(root, "exports"))
        metas[task_model.served_name] = task_model.preset.metadata
    with serve_model_config(REPO / "serving" / "models.config", root, sorted(metas)) as stub:
        yield stub, metas


def served_rows(stub, meta, requests):
    """``[(row, served accuracy %, questions)]`` of ``requests`` sent to ``meta``'s model."""
    from serving.model_server.in_process import predict_strings

    output = ANSWER_OUTPUT[meta["task"]]
    return accuracy_rows(requests, lambda inputs: predict_strings(
        stub, meta["model_name"], inputs, output))


def main(argv=None):
    from serving.command_flags import Command

    parser = Command("python -m tools.preset_serving_check", __doc__.split("\n\n")[0])
    parser.string("preset", None, "a shipped name or a preset folder", required=True)
    parser.string("data_dir", None, "the task's official files", required=True)
    parser.boolean("sample", False,
                   "only the preset's recorded sample (the first questions of "
                   "every test file) instead of every question")
    parser.string("json", None)
    args = parser.parse(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from tpr_keras.presets import load_preset

    meta = load_preset(args.preset).metadata
    recorded = meta["evaluation_sample" if args.sample else "evaluation"]
    limit = recorded.get("limit") if args.sample else None
    started = time.time()
    with tempfile.TemporaryDirectory() as root, serve_presets([args.preset], root) as (stub, _):
        rows = served_rows(stub, meta, sample_requests(meta, args.data_dir, limit))
    seconds = time.time() - started
    bad, checked = 0, []
    print(f"{'row':45s} | served % | recorded % | questions")
    for row, accuracy, n in rows:
        want = recorded_accuracy(recorded["table"], meta["task"], row)
        ok = abs(accuracy - want) <= 0.05
        bad += not ok
        checked.append({"row": row, "served_accuracy_percent": accuracy,
                        "recorded_accuracy_percent": want, "questions": n, "matches": ok})
        print(f"{row:45s} | {accuracy:8.2f} | {want:10.2f} | {n:9d}"
              + ("" if ok else "   <- differs"))
    total = sum(n for *_, n in rows)
    print(f"{total} questions served over gRPC in {seconds:.0f} s (export and start "
          f"included); {len(rows) - bad} of {len(rows)} rows at the recorded accuracy.")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"preset": meta["name"], "limit": limit, "seconds": seconds,
                       "command": "python -m tools.preset_serving_check " + " ".join(
                           argv if argv is not None else sys.argv[1:]),
                       "rows": checked}, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
