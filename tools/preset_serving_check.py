"""Serve trained presets from serving/models.config and score their test sets over gRPC.

    python -m tools.preset_serving_check --preset tpr_rnn_babi_all_tasks \
        --data_dir ../shared/data/babi [--sample] [--json FILE]

Exports each preset with ``train.export``'s code into a temporary folder, starts the embedded
TF Serving-compatible server from ``serving/models.config`` (base paths moved to that folder),
sends every question of the official test files (with ``--sample``, the first questions of
each, the preset's recorded sample) as raw text through the official ``tensorflow-serving-api`` stubs,
one Predict request per task / split / module, and prints the served accuracy beside the one
the preset recorded. Exits 1 if any differs by more than 0.05 points.
``tests/presets/test_shipped_presets.py`` runs the same on every preset's recorded sample.
"""

import contextlib
import json
import os
import pathlib
import sys
import tempfile
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
#: The folder under ../shared/data (or --data_dir) of each task.
DATA = {"babi": "babi", "entailment": "entailment", "math": "mathematics"}
#: The output each check reads: bAbI's and math's answer string, entailment's verdict.
OUTPUT = {"babi": "answer", "entailment": "entails", "math": "answer"}


def sample_requests(meta, data_dir, limit):
    """``[(row, inputs {name: [str]}, expected)]``: the test questions as raw text (the first
    ``limit`` of each file, or all), one request per task / split / module."""
    from tpr_keras.data import entailment, mathematics
    from tpr_keras.data.babi import files, parse_babi_file
    from tpr_keras.models.babi import join_story
    from tpr_keras.training.evaluation import ENTAILMENT_SPLITS

    task = meta["task"]
    out = []
    if task == "babi":
        root = files.find_babi_dir(data_dir, download=False)
        for t in meta["evaluation_options"]["tasks"]:
            samples = parse_babi_file(files.task_file(root, t, "test"))[:limit]
            out.append((str(t), {"story": [join_story(s.story) for s in samples],
                                 "question": [" ".join(s.question) for s in samples]},
                        [s.answer for s in samples]))
    elif task == "entailment":
        root = pathlib.Path(entailment.find_entailment_dir(data_dir))
        for split in ENTAILMENT_SPLITS:
            fields = [line.split(",") for line in
                      (root / f"{split}.txt").read_text().splitlines()[:limit]]
            out.append((split, {"premise": [f[0] for f in fields],
                                "hypothesis": [f[1] for f in fields]},
                        [f[2] == "1" for f in fields]))
    else:
        root = pathlib.Path(mathematics.find_mathematics_dir(data_dir, download=False))
        for regime in ("interpolate", "extrapolate"):
            for module in meta["evaluation"]["table"][f"{regime}_accuracy_percent"]:
                lines = (root / regime / f"{module}.txt").read_text().splitlines()
                end = len(lines) if limit is None else 2 * limit
                out.append((f"{regime}/{module}", {"question": lines[0:end:2]},
                            lines[1:end:2]))
    return out


def recorded_accuracy(table, task, row):
    """The accuracy (%) a preset's table records for one row of :func:`sample_requests`."""
    if task == "babi":
        return 100.0 - table["test_error_percent"][row]
    if task == "entailment":
        return table["accuracy_percent"][row]
    regime, module = row.split("/")
    return table[f"{regime}_accuracy_percent"][module]


@contextlib.contextmanager
def serve_presets(names, root):
    """Exports ``names`` under ``root/exports`` and serves them from serving/models.config;
    yields ``(PredictionServiceStub, {model name: metadata})``."""
    import grpc
    from google.protobuf import text_format
    from tensorflow_serving.apis import prediction_service_pb2_grpc
    from tensorflow_serving.config import model_server_config_pb2

    from serving.core.manager import ModelManager
    from serving.model_server.server import ModelServer
    from tpr_keras.presets import load_preset
    from train.export import export_preset

    metas = {}
    for name in names:
        preset = load_preset(name)
        export_preset(preset, os.path.join(root, "exports"))
        metas[preset.metadata["model_name"]] = preset.metadata
    config = text_format.Parse((REPO / "serving" / "models.config").read_text(),
                               model_server_config_pb2.ModelServerConfig())
    configs = [c for c in config.model_config_list.config if c.name in metas]
    missing = sorted(set(metas) - {c.name for c in configs})
    if missing:
        raise ValueError(f"serving/models.config serves no model named {missing}")
    for c in configs:
        c.base_path = os.path.join(root, c.base_path)
    server = ModelServer(ModelManager(configs), port=0, rest_api_port=0).start()
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        yield prediction_service_pb2_grpc.PredictionServiceStub(channel), metas
    finally:
        channel.close()
        server.stop(grace=2)


def served_rows(stub, meta, requests, batch=500):
    """``[(row, served accuracy %, questions)]`` of ``requests`` sent to ``meta``'s model."""
    import tensorflow as tf
    from tensorflow_serving.apis import model_pb2, predict_pb2

    rows = []
    for row, inputs, expected in requests:
        answers = []
        for start in range(0, len(expected), batch):
            request = predict_pb2.PredictRequest(
                model_spec=model_pb2.ModelSpec(name=meta["model_name"]))
            for key, values in inputs.items():
                request.inputs[key].CopyFrom(
                    tf.make_tensor_proto(values[start:start + batch], dtype=tf.string))
            response = stub.Predict(request, timeout=300)
            answers += [v.decode() if isinstance(v, bytes) else bool(v) for v in
                        tf.make_ndarray(response.outputs[OUTPUT[meta["task"]]])]
        accuracy = 100.0 * float(np.mean([a == e for a, e in zip(answers, expected)]))
        rows.append((row, accuracy, len(expected)))
    return rows


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
