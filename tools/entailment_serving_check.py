"""Serve an exported entailment model and score it over gRPC on the dataset's files.

    python -m tools.entailment_serving_check RUN_DIR [--data_dir ../shared/data/entailment]
        [--splits validate,test_easy,...] [--batch 500] [--json FILE]

RUN_DIR is a ``train.entailment --model_dir``: its ``export/entailment/<version>/`` (the
SavedModel TF Serving loads) and ``results.json`` (the accuracies the training run computed
with the Keras model). The check starts the project's model server on a free port with the
entailment model beside any other ``--model_config_file`` entries whose exports exist (so
the served model shares a server with the bAbI and math models, as in
``serving/models.config``), sends every pair of each split as string premises and
hypotheses (``Predict``, ``--batch`` pairs per request), and prints, per split, the served
accuracy next to the training run's, with pairs/s through the server. It ends with a
``saved_model_cli run`` of three pairs, the command-line route the C++ server shares.
"""

import json
import os
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from serving.client import EntailmentClient  # noqa: E402
from serving.model_server.model_config import read_model_config_file  # noqa: E402
from tools.served import model_config, serve  # noqa: E402
from tpr_keras.data.entailment import SPLITS, load_entailment_split  # noqa: E402


def configs(export_base, config_file):
    """The entailment model at ``export_base`` plus the config file's other models whose
    base path exists (relative paths from the repository root, as the server reads them)."""
    models = [model_config("entailment", export_base)]
    if config_file:
        for config in read_model_config_file(config_file):
            if config.name != "entailment" and os.path.isdir(config.base_path):
                models.append(config)
    return models


def score(client, data, batch):
    """Served accuracy (%) of ``data`` and the pairs/s of the requests."""
    right, started = 0, time.perf_counter()
    for i in range(0, len(data.a), batch):
        replies = client.entails_batch(data.a[i:i + batch], data.b[i:i + batch])
        right += sum(r.entails == bool(label)
                     for r, label in zip(replies, data.labels[i:i + batch]))
    seconds = time.perf_counter() - started
    return 100.0 * right / len(data.a), len(data.a) / seconds


def main():
    from serving.command_flags import Command

    parser = Command("python -m tools.entailment_serving_check", __doc__.split("\n\n")[0])
    parser.positional("run_dir")
    parser.string("data_dir", None)
    parser.string("splits", ",".join(s for s in SPLITS if s != "train"))
    parser.integer("batch", 500)
    parser.string("model_config_file", "serving/models.config",
                  "serve these models too, where their exports exist ('' for none)")
    parser.string("json", None)
    args = parser.parse()
    export_base = os.path.join(args.run_dir, "export", "entailment")
    with open(os.path.join(args.run_dir, "results.json")) as f:
        trained = json.load(f)["accuracy_percent"]
    models = configs(export_base, args.model_config_file)
    print("serving", ", ".join(f"{m.name} ({m.base_path})" for m in models))
    rows = {}
    with serve(models) as address:
        with EntailmentClient(address) as client:
            for split in args.splits.split(","):
                data = load_entailment_split(split, args.data_dir)
                served, rate = score(client, data, args.batch)
                rows[split] = {"pairs": len(data.a), "served_percent": served,
                               "trained_percent": trained.get(split), "pairs_per_s": rate}
                print(f"{split}: served {served:.2f} % of {len(data.a):,} pairs, training run "
                      f"{trained.get(split, float('nan')):.2f} %; {rate:,.0f} pairs/s",
                      flush=True)
            example = client.entails("(a&b)", "a")
            print(f"(a&b) entails a? {example.entails} (probability {example.probability:.3f},"
                  f" version {example.version})")
    version = max((d for d in os.listdir(export_base) if d.isdigit()), key=int)
    done = subprocess.run(
        [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli", "run",
         "--dir", os.path.join(export_base, version), "--tag_set", "serve",
         "--signature_def", "serving_default", "--input_exprs",
         "premise=['(a&b)','a','(p>q)'];hypothesis=['a','(a&b)','(~q>~p)']"],
        capture_output=True, text=True)
    print(done.stdout[-600:] or done.stderr[-600:])
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"run_dir": args.run_dir, "models": [m.name for m in models],
                       "splits": rows}, f, indent=1)


if __name__ == "__main__":
    main()
