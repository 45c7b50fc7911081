"""``python -m tools.analysis.systematic``: TPR-RNN §7 systematic generalisation (Figure 5),
test accuracy per new name and task of a ``train.babi`` run on the data of
``python -m tools.analysis.systematic_data``.

    python -m tools.analysis.systematic_data --data_dir ../shared/data/babi --out runs/sg-data
    python -m train.babi --task 1,6,7,8,9,11,12,13 --data_dir runs/sg-data --model_dir runs/sg
    python -m tools.analysis.systematic --model_dir runs/sg --data runs/sg-data \\
        --out results/figures/systematic

writes ``systematic.json``, ``systematic.md`` and, with the ``analysis`` extra,
``systematic.png``. Two or more evaluated models side by side::

    python -m tools.analysis.systematic --compare TPR-RNN=runs/sg-fig/systematic.json \\
        --compare MemN2N=runs/sg-memn2n-fig/systematic.json --out results/figures/systematic

writes ``compare.md`` and ``compare.png``. What is measured: :mod:`tpr_keras.analysis.systematic`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from serving.command_flags import Command
from tools.report.systematic import compare_markdown, systematic_markdown
from tpr_keras.analysis import systematic


def run_compare(command: Command, specs: Sequence[str], out: str) -> int:
    """``--compare``: the tables and figure of earlier ``systematic.json`` files."""
    results = {}
    for spec in specs:
        label, _, path = spec.partition("=")
        if not label or not path:
            command.error(f"--compare takes LABEL=path/to/systematic.json, got {spec!r}")
        with open(path) as f:
            results[label] = json.load(f)
    os.makedirs(out, exist_ok=True)
    table = compare_markdown(results)
    with open(os.path.join(out, "compare.md"), "w") as f:
        f.write(table)
    print(table)
    try:
        systematic.plot_compare(results, os.path.join(out, "compare.png"))
    except ImportError:
        print("(no matplotlib: pip install -e '.[analysis]' for compare.png)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    command = Command("python -m tools.analysis.systematic", __doc__.split("\n\n")[0])
    command.string("model_dir", None, "a train.babi --model_dir")
    command.string("data", None, "the --out folder of tools.analysis.systematic_data")
    command.multi("compare", "LABEL=JSON: side by side, the systematic.json files of earlier "
                  "evaluations; once per model")
    command.string("out", None, "output folder", required=True)
    args = command.parse(argv)
    if args.compare:
        return run_compare(command, args.compare, args.out)
    if not (args.model_dir and args.data):
        command.error("--model_dir and --data are required (or --compare)")
    from tpr_keras.runtime import import_tensorflow

    import_tensorflow()  # quiet start-up, as the train.* commands
    import keras

    import tpr_keras.models.all_families  # noqa: F401  (registers the models for load_model)
    from tpr_keras.data import babi

    export = os.path.join(args.model_dir, "export")
    model = keras.models.load_model(os.path.join(export, "model.keras"))
    vocab = babi.Vocabulary.load(os.path.join(export, "vocab.txt"))
    result = systematic.evaluate_pairs(model, vocab, args.data)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "systematic.json"), "w") as f:
        json.dump(result, f, indent=1)
    table = systematic_markdown(result)
    with open(os.path.join(args.out, "systematic.md"), "w") as f:
        f.write(table)
    print(table)
    try:
        systematic.plot(result, os.path.join(args.out, "systematic.png"),
                        f"{type(model).__name__}: accuracy on the new names")
    except ImportError:
        print("(no matplotlib: pip install -e '.[analysis]' for systematic.png)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
