"""Run the MemN2N authors' MATLAB code beside ours on the same data.

    python -m experiments.memn2n_matlab_check subset --data_dir ../shared/data/babi --out DIR
    python -m experiments.memn2n_matlab_check convert --log octave.log --out RESULTS_JSON \
        --command "..."

``subset`` writes ``DIR/qaN_*_train.txt`` (the first 1,000 questions of each en-10k training
file, what ``python -m train.babi --setting 1k`` trains on) and links the test files there.
``convert`` turns the lines the MATLAB ``train.m`` prints (``ep | train error: x | val error:
y``, here with the epoch's mean training cost appended) and ``test.m``'s ``task t`` / ``test
error: e`` pairs into a ``results.json`` in the keys of the linear-start table
(``tools/report/babi.py``); the linear start's epochs come first, then the main phase's,
whose count starts again at 1 in their log.

The MATLAB side (``facebookarchive/MemNN``, ``MemN2N-babi-matlab``, under GNU Octave 7.3 from
Debian): ``run_babi_joint.m`` with ``base_dir`` set to ``DIR``, its ``rng('shuffle')``
replaced by a fixed seed, and its ``config_babi_joint.m`` unchanged (the 1k joint
protocol: 30 epochs of linear start at 0.005, then 60 epochs halved every 15). Two local
edits, neither in the training: ``parseBabiTask.m``'s arrays preallocated for all 20 tasks
(Octave copies a growing array on every new story: hours of parsing otherwise), and the
epoch line of ``train.m`` also prints ``total_cost / total_num``. One epoch of the 1k data
takes about 50 s on one core here.
"""

import argparse
import glob
import json
import os
import re

LINE = re.compile(r"^(\d+) \| train error: ([\d.e-]+) \| val error: ([\d.e-]+)"
                  r"(?: \| cost: ([\w.+-]+))?")


def subset(data_dir, out, questions=1000):
    """The first ``questions`` questions of every training file, the test files linked."""
    source = os.path.join(data_dir, "en-10k")
    os.makedirs(out, exist_ok=True)
    for path in sorted(glob.glob(os.path.join(source, "qa*_train.txt"))):
        kept, count = [], 0
        with open(path, encoding="utf-8") as f:
            for line in f:
                kept.append(line)
                count += "?" in line
                if count == questions:
                    break
        with open(os.path.join(out, os.path.basename(path)), "w", encoding="utf-8") as f:
            f.writelines(kept)
    for path in sorted(glob.glob(os.path.join(source, "qa*_test.txt"))):
        target = os.path.join(out, os.path.basename(path))
        if not os.path.exists(target):
            os.symlink(os.path.abspath(path), target)


def convert(log_text, linear_start_epochs=30):
    """``{"history": [...], "test_error_percent": {...}}`` from an Octave log."""
    history, tests, task = [], {}, None
    for line in log_text.splitlines():
        match = LINE.match(line.strip())
        if match:
            cost = match[4]
            history.append({
                "epoch": len(history) + 1,
                "phase": "linear_start" if len(history) < linear_start_epochs else "softmax",
                "train_error_percent": 100.0 * float(match[2]),
                "valid_error_percent": 100.0 * float(match[3]),
                "train_loss": None if cost in (None, "Inf") else float(cost)})
        elif line.startswith("task "):
            task = line.split()[1]
        elif line.startswith("test error: ") and task is not None:
            tests[task] = 100.0 * float(line.split(": ")[1])
    return {"history": history, "test_error_percent": tests}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    one = sub.add_parser("subset")
    one.add_argument("--data_dir", required=True)
    one.add_argument("--out", required=True)
    two = sub.add_parser("convert")
    two.add_argument("--log", required=True)
    two.add_argument("--out", required=True)
    two.add_argument("--command", required=True, help="how the log was made, recorded")
    args = parser.parse_args(argv)
    if args.what == "subset":
        subset(args.data_dir, args.out)
        return 0
    with open(args.log, encoding="utf-8") as f:
        result = convert(f.read())
    result.update(code="MATLAB (Octave 7.3)", command=args.command)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
