"""Train MemN2N jointly on all 20 bAbI tasks at the paper's protocol, seeds 1..10.

    python -m experiments.memn2n_joint_runs --data_dir ../shared/data/babi --dry_run
    python -m experiments.memn2n_joint_runs --data_dir ../shared/data/babi --jobs 2 \
        --max_train_minutes 100      # one sitting; the same command resumes
    python -m experiments.memn2n_joint_runs --report                  # Markdown only

Every run is the same command but for ``--seed`` (and its folder): ``python -m train.babi
--task all --model memn2n --size joint_paper`` (the authors' MATLAB joint protocol on
§4.2's 10k schedule: 30 epochs of linear start at 0.005, then 20 epochs from 0.005 halved
at the start of every 5th; summed loss, each matrix's gradient clipped at norm 40; see
``docs/training.md``). Sukhbaatar et al. (2015), §4.2, train each setting 10 times and report
the run with the lowest training error: ``tools/memn2n_joint.py`` picks it the same way.

``--jobs 2`` runs two trainings at once, each with one intra-op thread. Runs go to
``<runs>/seed<S>`` (with their ``train.log``); a run that finishes (``stopped: epochs``)
has its ``results.json`` copied to ``results/babi/memn2n_joint/seed<S>/`` (``--keep``,
committed), and a seed kept there is skipped. A run stopped by ``--max_train_minutes``
writes a provisional ``results.json`` that is neither kept nor counted: the same command
resumes it from its checkpoint.
"""

import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import time

from tools import memn2n_joint

SEEDS = tuple(range(1, 11))


def run_dir(runs, seed):
    return os.path.join(runs, f"seed{seed}")


def command(args, seed):
    """The training command of one seed: identical for every seed but ``--seed`` and the
    folder it names."""
    return [sys.executable, "-m", "train.babi", "--task=all", "--model=memn2n",
            "--size=joint_paper", f"--seed={seed}", f"--model_dir={run_dir(args.runs, seed)}",
            *([f"--data_dir={args.data_dir}"] if args.data_dir else []),
            "--checkpoint_every_steps=2000", "--verbose=2",
            *([f"--max_train_minutes={args.max_train_minutes:g}"]
              if args.max_train_minutes else [])]


def kept_path(args, seed):
    return os.path.join(args.keep, f"seed{seed}", "results.json")


def finished(path):
    """The results at ``path`` if that run trained all its epochs, else None."""
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        result = json.load(f)
    return result if result.get("stopped") == "epochs" else None


def todo(args, seeds):
    """The seeds without a kept run (a finished run not yet kept is kept now)."""
    left = []
    for seed in seeds:
        if finished(kept_path(args, seed)) is None and keep(args, seed) is None:
            left.append(seed)
    return left


def keep(args, seed):
    """Copies a finished run's ``results.json`` to its kept path; the path, or None."""
    source = os.path.join(run_dir(args.runs, seed), "results.json")
    if finished(source) is None:
        return None
    target = kept_path(args, seed)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copyfile(source, target)
    return target


def execute(args, seeds):
    """Trains ``seeds``, ``args.jobs`` at a time; returns the seeds whose process failed."""
    env = dict(os.environ)
    if args.jobs > 1:
        threads = str(max(1, (os.cpu_count() or args.jobs) // args.jobs))
        env.update(TF_NUM_INTRAOP_THREADS=threads, TF_NUM_INTEROP_THREADS=threads)

    def one(seed):
        folder = run_dir(args.runs, seed)
        os.makedirs(folder, exist_ok=True)
        cmd = command(args, seed)
        print("running: python " + " ".join(cmd[1:]), flush=True)
        start = time.time()
        with open(os.path.join(folder, "train.log"), "a") as log:
            code = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
        kept = keep(args, seed)
        print(f"finished: seed {seed}: exit {code}, {time.time() - start:.0f} s"
              + (f"; commit {kept}" if kept else "; not finished (the same command resumes)"),
              flush=True)
        return seed if code else None

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        return [seed for seed in pool.map(one, seeds) if seed is not None]


def main(argv=None):
    from serving.command_flags import Command

    parser = Command("python -m experiments.memn2n_joint_runs", __doc__.split("\n\n")[0])
    parser.string("seeds", ",".join(map(str, SEEDS)))
    parser.string("data_dir", None)
    parser.string("runs", "runs/memn2n_joint")
    parser.string("keep", memn2n_joint.RESULTS,
                  "where finished runs' results.json go, to be committed; seeds kept there "
                  "are skipped")
    parser.integer("jobs", 1, "trainings at once (each gets cores/jobs intra-op threads)")
    parser.float("max_train_minutes", None,
                 "each run's budget in this sitting (the same command resumes)")
    parser.boolean("dry_run", False, "print the commands only")
    parser.boolean("report", False, "tabulate kept runs only")
    args = parser.parse(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    failures = []
    if not args.report:
        left = todo(args, seeds)
        if args.dry_run:
            for seed in left:
                print("python " + " ".join(command(args, seed)[1:]))
            return 0
        failures = execute(args, left)
    root = os.path.dirname(os.path.abspath(args.keep.rstrip(os.sep)))
    root = os.path.dirname(os.path.dirname(root))  # <root>/results/babi/memn2n_joint
    print(memn2n_joint.markdown(root))
    if failures:
        print(f"{len(failures)} run(s) failed (see their train.log): seeds {failures}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
