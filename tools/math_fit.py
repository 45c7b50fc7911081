"""A math preset's exact match on its own training questions beside interpolate: short of
questions, or short of capacity?

    python -m tools.math_fit --preset tp_transformer_math_focus \\
        --data_dir ../shared/data/mathematics --per_file 1000 \\
        --json results/math/fit/tp_transformer_math_focus.json
    python -m tools.math_fit --model_dir runs/math/RUN --data_dir ... --json ...  # a run

``python -m tools.report --print math-fit`` tabulates the committed JSON.

For each module the preset serves, the first ``--per_file`` questions of its
``train-easy``, ``train-medium`` and ``train-hard`` files (all of them trained on) and of
its ``interpolate`` file are answered greedily by ``MathAnswerer.generate`` (what the
served SavedModel answers) and scored by exact match. The generator writes questions in
random order, so the first N of a file are a sample of it.

The interpolate questions are also scored by kind (:func:`kind`: a True/False answer or a
value, and whether the question's numbers are integers, decimals or fractions), which says
what a module's misses have in common.

How to read it: a model far better on its training questions than on interpolate has
memorised them, and more questions from the generator would help; a model that misses its
training questions about as often as new ones is short of capacity or of training steps,
and more questions of the same kind do not help by themselves.
"""

import json
import os
import re
import sys

DIFFICULTIES = ("train-easy", "train-medium", "train-hard")


def kind(question, answer):
    """The kind of a question: ``"True/False"`` or ``"value"`` answer, and ``"fractions"``,
    ``"decimals"`` or ``"integers"`` in the question (the first that occurs).

    >>> kind("Is 164262/25 greater than 6569?", "True")
    'True/False, fractions'
    >>> kind("Which is bigger: 1.000194 or -7?", "1.000194")
    'value, decimals'
    """
    what = "True/False" if answer in ("True", "False") else "value"
    if re.search(r"\d/\d", question):
        return f"{what}, fractions"
    return f"{what}, {'decimals' if re.search(r'[0-9][.][0-9]', question) else 'integers'}"


def count(pairs):
    """``{"questions", "correct", "accuracy_percent"}`` of ``(correct?, ...)`` pairs."""
    correct = sum(ok for ok in pairs)
    return {"questions": len(pairs), "correct": correct,
            "accuracy_percent": 100.0 * correct / len(pairs)}


def fit(answer, data_dir, modules, per_file):
    """``{module: {regime: {"questions", "correct", "accuracy_percent"}}}``, with a pooled
    ``"train"`` entry over the three difficulties and ``"interpolate_kinds"``: ``{kind:
    {...}}`` (:func:`kind`). ``answer`` maps a list of questions to the list of answers."""
    from tools.math_savedmodel_accuracy import read_pairs  # imports TensorFlow

    table = {}
    for module in modules:
        row, pooled = {}, [0, 0]
        for regime in DIFFICULTIES + ("interpolate",):
            questions, answers = read_pairs(
                os.path.join(data_dir, regime, f"{module}.txt"), per_file)
            right = [g == a for g, a in zip(answer(questions), answers)]
            row[regime] = count(right)
            if regime in DIFFICULTIES:
                pooled[0] += sum(right)
                pooled[1] += len(questions)
            else:
                kinds = {}
                for question, gold, ok in zip(questions, answers, right):
                    kinds.setdefault(kind(question, gold), []).append(ok)
                row["interpolate_kinds"] = {k: count(v) for k, v in sorted(kinds.items())}
        row["train"] = {"questions": pooled[1], "correct": pooled[0],
                        "accuracy_percent": 100.0 * pooled[0] / pooled[1]}
        table[module] = row
    return table


def load_answerer(preset, model_dir=None):
    """``(MathAnswerer, the modules it was trained on)`` of a preset or, given
    ``model_dir``, of a ``train.math`` run folder (its saved model, vocabulary and
    ``results.json``)."""
    from tpr_keras.models import MathAnswerer

    if not model_dir:
        answerer = MathAnswerer.from_preset(preset)
        templates = answerer.preprocessor.templates
        return answerer, list(templates.modules) if templates is not None else []
    import keras

    from tpr_keras.data.mathematics import CharVocabulary
    from tpr_keras.models import MathPreprocessor

    export = os.path.join(model_dir, "export")
    model = keras.models.load_model(os.path.join(export, "model.keras"))
    vocabulary = CharVocabulary.load(os.path.join(export, "vocab.txt"))
    with open(os.path.join(model_dir, "results.json"), encoding="utf-8") as f:
        modules = json.load(f)["config"]["modules"].split(",")
    return MathAnswerer(model, MathPreprocessor(vocabulary)), modules


def main(argv=None):
    from serving.command_flags import Command

    parser = Command("python -m tools.math_fit", __doc__.split("\n\n")[0])
    parser.string("preset", "tp_transformer_math_focus", "the math preset to score")
    parser.string("model_dir", None, "score a train.math run folder instead (its "
                  "export/model.keras and export/vocab.txt; --modules: the run's)")
    parser.string("data_dir", None, "dataset folder in the v1.0 layout")
    parser.string("modules", None, "comma list (default: the modules the preset serves)")
    parser.integer("per_file", 1000, "questions scored per file")
    parser.integer("batch_size", 128)
    parser.string("json", None)
    args = parser.parse(argv)
    if not args.data_dir:
        parser.error("--data_dir: required to score a preset")
    try:
        answerer, trained = load_answerer(args.preset, args.model_dir)
    except (OSError, ValueError) as error:
        parser.error(str(error))
    modules = args.modules.split(",") if args.modules else trained
    if not modules:
        parser.error(f"--modules: {args.model_dir or args.preset} names no modules; list them")
    try:
        table = fit(lambda qs: answerer.generate(qs, batch_size=args.batch_size),
                    args.data_dir, modules, args.per_file)
    except (OSError, ValueError) as error:
        parser.error(str(error))
    for module, row in table.items():
        print(f"{module:<28} training {row['train']['accuracy_percent']:6.2f} %  "
              f"interpolate {row['interpolate']['accuracy_percent']:6.2f} %")
    if args.json:
        command = ("python -m tools.math_fit " + " ".join(
            a for a in (argv if argv is not None else sys.argv[1:])))
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"command": command, "preset": None if args.model_dir else args.preset,
                       "model_dir": args.model_dir, "per_file": args.per_file,
                       "modules": table}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
