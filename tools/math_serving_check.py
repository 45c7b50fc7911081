"""Export a trained math model, serve it, and ask it over gRPC and with saved_model_cli.

    python -m tools.math_serving_check RUN_DIR [--data_dir ../shared/data/mathematics] [--n 5]
    python -m tools.math_serving_check RUN_DIR --modules all [--n 5] [--json FILE]

RUN_DIR is a ``train.math --model_dir`` (its ``export/model.keras`` and ``vocab.txt``). Prints
the first N interpolate questions of the module with the served and expected answers, then the
``saved_model_cli run`` output for the same questions. With ``--modules all`` (every
``interpolate/*.txt`` of the data dir) or a comma list, asks the first N questions of each
module over gRPC instead (one request per module), prints them per module and counts the
modules answered correctly at least once and the exact-match % over all questions;
``--json FILE`` also writes every question, answer and count.
"""

import glob
import json
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import tpr_keras.models.tp_transformer  # noqa: E402, F401  (registers TPTransformer)
from serving.client import MathClient  # noqa: E402
from tools.served import model_config, serve  # noqa: E402
from tpr_keras.data.mathematics import CharVocabulary  # noqa: E402
from tpr_keras.export.tp_transformer import export_math_model  # noqa: E402


def main():
    from serving.command_flags import Command

    parser = Command("python -m tools.math_serving_check", __doc__.split("\n\n")[0])
    parser.positional("run_dir")
    parser.string("data_dir", "../shared/data/mathematics")
    parser.string("module", "numbers__place_value")
    parser.string("modules", None, "'all' or a comma list: ask every module over gRPC")
    parser.integer("n", 5)
    parser.string("json", None)
    args = parser.parse()
    export = os.path.join(args.run_dir, "export")
    model = keras.models.load_model(os.path.join(export, "model.keras"))
    vocab = CharVocabulary.load(os.path.join(export, "vocab.txt"))
    base = tempfile.mkdtemp(prefix="math-serving-")
    path = export_math_model(model, vocab, base, "math")
    print("exported", path)
    folder = os.path.join(args.data_dir, "interpolate")
    if args.modules == "all":
        modules = sorted(os.path.basename(p)[:-4] for p in glob.glob(f"{folder}/*.txt"))
    else:
        modules = (args.modules or args.module).split(",")
    asked = {}
    for module in modules:
        with open(os.path.join(folder, module + ".txt")) as f:
            lines = f.read().splitlines()
        asked[module] = (lines[0:2 * args.n:2], lines[1:2 * args.n:2])
    with serve([model_config("math", os.path.dirname(path))]) as address:
        with MathClient(address) as client:
            solved = {module: client.solve_batch(q) for module, (q, _) in asked.items()}
    rows, right = [], {}
    for module, (questions, answers) in asked.items():
        right[module] = sum(s.answer == a for s, a in zip(solved[module], answers))
        if args.modules:
            print(f"== {module}: {right[module]} of {len(answers)} served answers are right")
        for question, answer, solution in zip(questions, answers, solved[module]):
            print(f"{question!r} -> {solution.answer!r} (expected {answer!r}, "
                  f"log_prob {solution.log_prob:.4f})")
            rows.append({"module": module, "question": question, "answer": solution.answer,
                         "expected": answer, "log_prob": solution.log_prob,
                         "version": solution.version})
    summary = {"modules": len(asked), "modules_right_at_least_once": sum(
        n > 0 for n in right.values()), "questions": len(rows),
        "exact_match_percent": 100.0 * sum(right.values()) / max(len(rows), 1)}
    print(f"{summary['modules_right_at_least_once']} of {summary['modules']} modules answered "
          f"correctly at least once; exact match {sum(right.values())} of {len(rows)} "
          f"({summary['exact_match_percent']:.1f} %)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "right_per_module": right, "rows": rows}, f, indent=1)
    if args.modules:
        return
    questions = asked[args.module][0]
    done = subprocess.run(
        [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli", "run", "--dir", path,
         "--tag_set", "serve", "--signature_def", "serving_default",
         "--input_exprs", f"question={questions!r}"], capture_output=True, text=True)
    print(done.stdout[-800:])


if __name__ == "__main__":
    main()
