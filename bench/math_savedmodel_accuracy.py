"""Exact match of an exported math SavedModel on a question/answer file, through its signature.

    python bench/math_savedmodel_accuracy.py runs/math/export/math/1 \\
        ../shared/data/mathematics/interpolate/numbers__place_value.txt [--json out.json]

Loads the SavedModel with ``tf.saved_model.load`` only (no tpr_keras, as a server would),
sends the questions of a file in the dataset's format (alternating question and answer lines;
for instance a sample made with the dataset's generator under another seed) to its
``serving_default`` signature in batches, and prints the exact-match accuracy of the answers,
the questions/s and the peak RSS.
"""

import argparse
import json
import os
import resource
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("saved_model", help="<export_dir>/math/<version>")
    parser.add_argument("questions", help="a <module>.txt file: question, answer, question, ...")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--limit", type=int, default=None, help="score the first N only")
    parser.add_argument("--show", type=int, default=5, help="print the first N wrong answers")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    with open(args.questions, encoding="utf-8") as f:
        lines = f.read().rstrip("\n").split("\n")
    if len(lines) % 2:
        parser.error(f"{args.questions}: an odd number of lines")
    questions, answers = lines[0::2][: args.limit], lines[1::2][: args.limit]
    serve = tf.saved_model.load(args.saved_model).signatures["serving_default"]
    serve(question=tf.constant(questions[:1]))  # warm-up outside the timing
    start, got = time.perf_counter(), []
    for i in range(0, len(questions), args.batch):
        out = serve(question=tf.constant(questions[i: i + args.batch]))
        got += [a.decode("utf-8") for a in out["answer"].numpy()]
    seconds = time.perf_counter() - start
    correct = np.array([g == a for g, a in zip(got, answers)])
    result = {"saved_model": args.saved_model, "questions_file": args.questions,
              "questions": len(questions), "correct": int(correct.sum()),
              "accuracy_percent": 100.0 * float(correct.mean()),
              "questions_per_second": len(questions) / seconds,
              "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    print(f"{result['correct']} / {result['questions']} exact = "
          f"{result['accuracy_percent']:.2f} % ({result['questions_per_second']:.0f} "
          f"questions/s, peak RSS {result['peak_rss_mib']:.0f} MiB)")
    for i in np.flatnonzero(~correct)[: args.show]:
        print(f"  wrong: {questions[i]!r} -> {got[i]!r} (expected {answers[i]!r})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
