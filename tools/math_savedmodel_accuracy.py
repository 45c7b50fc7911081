"""Exact match of an exported math SavedModel on question/answer files, through its signature.

    python -m tools.math_savedmodel_accuracy runs/math/export/math/1 \\
        ../shared/data/mathematics/interpolate/numbers__place_value.txt [--json out.json]
    python -m tools.math_savedmodel_accuracy runs/math-all/export/math/1 MY_SAMPLE/interpolate \\
        --reported runs/math-all/results.json [--tolerance 3] [--json out.json]

Loads the SavedModel with ``tf.saved_model.load`` only (no tpr_keras, as a server would),
sends the questions of a file in the dataset's format (alternating question and answer lines)
to its ``serving_default`` signature in batches, and prints the exact-match accuracy of the
answers, the questions/s and the peak RSS. Given a folder instead of a file, it scores every
``<module>.txt`` in it, one line per module (for instance the ``interpolate/`` folder of a
sample made with the dataset's generator under another seed).

``--reported`` takes the ``results.json`` of the ``train.math`` run that exported the model
and puts its accuracy for each module (interpolate, or extrapolate for a ``*_big``/``*_more``
module) beside the measured one: the difference, its binomial standard error, and whether it
stays within ``--tolerance`` points. The exit status is 1 when a module with a reported
accuracy differs by more than the tolerance.
"""

import json
import math
import os
import resource
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def read_pairs(path, limit=None):
    """Questions and answers of a dataset file; a malformed file names itself and the line."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().rstrip("\n").split("\n")
    if lines == [""]:
        raise ValueError(f"{path}: the file is empty")
    if len(lines) % 2:
        raise ValueError(f"{path}:{len(lines)}: a question without an answer line "
                         f"(an odd number of lines, {len(lines)})")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            kind = "question" if number % 2 else "answer"
            raise ValueError(f"{path}:{number}: an empty {kind} line")
    return lines[0::2][:limit], lines[1::2][:limit]


def module_files(path):
    """``{module: file}`` for a file or for every ``*.txt`` of a folder."""
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path) if n.endswith(".txt"))
        if not names:
            raise ValueError(f"{path}: no <module>.txt files in this folder")
        return {n[:-4]: os.path.join(path, n) for n in names}
    return {os.path.basename(path)[:-4] if path.endswith(".txt") else path: path}


def score(serve, questions, batch):
    """The signature's answers to the questions, asked ``batch`` at a time."""
    got = []
    for i in range(0, len(questions), batch):
        out = serve(question=tf.constant(questions[i: i + batch]))
        got += [a.decode("utf-8") for a in out["answer"].numpy()]
    return got


def reported_accuracy(results):
    """``{module: accuracy %}`` from a train.math results.json (interpolate and extrapolate)."""
    reported = {}
    for key in ("extrapolate_accuracy_percent", "interpolate_accuracy_percent"):
        reported.update(results.get(key) or {})
    return reported


def compare(measured, reported, tolerance):
    """Per module: reported %, difference (measured - reported), its standard error, within.

    ``measured`` maps a module to ``(correct, questions)``; ``reported`` to an accuracy in %
    on ``reported_n`` questions (``None``: the standard error counts the measured sample only).
    A module missing from ``reported`` gets ``None`` fields and is not counted as a miss.
    """
    rows = {}
    for module, (correct, n, reported_n) in measured.items():
        accuracy = 100.0 * correct / n
        if module not in reported:
            rows[module] = {"reported": None, "difference": None, "stderr": None,
                            "within": None}
            continue
        ref = float(reported[module])
        p = accuracy / 100.0
        q = ref / 100.0
        variance = p * (1 - p) / n + (q * (1 - q) / reported_n if reported_n else 0.0)
        rows[module] = {"reported": ref, "difference": accuracy - ref,
                        "stderr": 100.0 * math.sqrt(variance),
                        "within": abs(accuracy - ref) <= tolerance}
    return rows


def parse_flags(argv=None):
    """The command's flags: ``(parser, args)``."""
    from serving.command_flags import Command

    parser = Command("python -m tools.math_savedmodel_accuracy", __doc__.split("\n\n")[0])
    parser.positional("saved_model", "<export_dir>/math/<version>")
    parser.positional("questions",
                      "a <module>.txt file (question, answer, question, "
                      "...) or a folder of them")
    parser.integer("batch", 256)
    parser.integer("limit", None, "score the first N of each file")
    parser.integer("show", 5, "print the first N wrong answers (of each file)")
    parser.string("reported", None, "results.json of the train.math run, to compare per module")
    parser.integer("reported_questions", None,
                   "questions per module behind the reported accuracies, for the "
                   "standard error (default: the number scored here)")
    parser.float("tolerance", 3.0, "points of difference allowed per module (with --reported)")
    parser.string("json", None)
    return parser, parser.parse(argv)


def score_modules(serve, pairs, files, args):
    """Each module's questions through ``serve``: ``({module: its scores and first wrong
    answers}, seconds spent answering)``."""
    modules, seconds = {}, 0.0
    for module, (questions, answers) in pairs.items():
        start = time.perf_counter()
        got = score(serve, questions, args.batch)
        seconds += time.perf_counter() - start
        correct = np.array([g == a for g, a in zip(got, answers)])
        modules[module] = {"questions_file": files[module], "questions": len(questions),
                           "correct": int(correct.sum()),
                           "accuracy_percent": 100.0 * float(correct.mean()),
                           "wrong": [{"question": questions[i], "answer": got[i],
                                      "expected": answers[i]}
                                     for i in np.flatnonzero(~correct)[: args.show]]}
    return modules, seconds


def print_modules(modules, rows, args):
    """One line per module (with its comparison to the reported accuracy, if any), which
    also joins the comparison to the module's scores; a single file's wrong answers."""
    width = max(len(m) for m in modules)
    for module, r in modules.items():
        line = (f"{module:<{width}}  {r['correct']:>6} / {r['questions']:<6} exact = "
                f"{r['accuracy_percent']:6.2f} %")
        row = rows.get(module)
        if row and row["reported"] is not None:
            line += (f" | reported {row['reported']:6.2f} %, difference "
                     f"{row['difference']:+6.2f} ± {row['stderr']:.2f}"
                     f"{'' if row['within'] else f'  OUTSIDE {args.tolerance:g} points'}")
        elif args.reported:
            line += " | not in the reported results"
        print(line)
        r.update(row or {})
        if len(modules) == 1:
            for w in r["wrong"]:
                print(f"  wrong: {w['question']!r} -> {w['answer']!r} "
                      f"(expected {w['expected']!r})")


def main(argv=None):
    parser, args = parse_flags(argv)
    try:
        files = module_files(args.questions)
        pairs = {module: read_pairs(path, args.limit) for module, path in files.items()}
    except (OSError, ValueError) as error:
        parser.error(str(error))
    reported = {}
    if args.reported:
        with open(args.reported, encoding="utf-8") as f:
            reported = reported_accuracy(json.load(f))
    serve = tf.saved_model.load(args.saved_model).signatures["serving_default"]
    first = next(iter(pairs.values()))[0]
    serve(question=tf.constant(first[:1]))  # warm-up outside the timing
    modules, seconds = score_modules(serve, pairs, files, args)
    measured = {m: (r["correct"], r["questions"], args.reported_questions or r["questions"])
                for m, r in modules.items()}
    rows = compare(measured, reported, args.tolerance) if args.reported else {}
    print_modules(modules, rows, args)
    total = sum(r["questions"] for r in modules.values())
    correct = sum(r["correct"] for r in modules.values())
    result = {"saved_model": args.saved_model, "questions_path": args.questions,
              "modules": modules, "questions": total, "correct": correct,
              "accuracy_percent": 100.0 * correct / total,
              "questions_per_second": total / seconds,
              "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    # The single-file keys of earlier versions stay at the top level.
    if len(modules) == 1:
        result["questions_file"] = next(iter(modules.values()))["questions_file"]
    print(f"{correct} / {total} exact = {result['accuracy_percent']:.2f} % over "
          f"{len(modules)} file(s) ({result['questions_per_second']:.0f} questions/s, "
          f"peak RSS {result['peak_rss_mib']:.0f} MiB)")
    compared = [m for m, row in rows.items() if row["within"] is not None]
    outside = [m for m in compared if not rows[m]["within"]]
    if args.reported:
        result["tolerance"] = args.tolerance
        result["outside_tolerance"] = outside
        print(f"{len(compared) - len(outside)} of {len(compared)} compared module(s) within "
              f"{args.tolerance:g} points of the reported accuracy"
              + (f"; outside: {', '.join(outside)}" if outside else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 1 if outside else 0


if __name__ == "__main__":
    sys.exit(main())
