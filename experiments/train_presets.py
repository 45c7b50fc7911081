"""Train the shipped presets' runs and turn the finished ones into presets, over several sittings.

    python -m experiments.train_presets --data_root ../shared/data --dry_run      # the commands
    python -m experiments.train_presets --data_root ../shared/data --jobs 2 \
        --presets tpr_rnn_babi_all_tasks --max_train_minutes 170            # train (resumes)
    python -m experiments.train_presets --data_root ../shared/data --make         # keep + save
    python -m experiments.train_presets --make --presets tpr_rnn_babi_all_tasks \
        --run_dir 'runs/e130/seed{seed}'           # from runs trained elsewhere by hand

Every run is one ``train.*`` command with the paper's recipe (the exact command is what the
preset's metadata.json records). A run folder under ``--runs`` resumes from its checkpoints
when the same command starts again, so the runs can be worked off over several sittings
(``--max_train_minutes`` bounds one sitting); a run whose ``results.json`` exists is skipped.
``--jobs 2`` trains two at once with one intra-op thread each.

``--make`` copies each finished run's (with ``--accept_time_budget``, also a run its last
sitting's budget stopped) ``results.json`` to its place under ``results/`` (where
``python -m tools.report`` makes the tables from it) and writes the preset from the chosen
run with ``python -m train.save_preset`` into ``tpr_keras/presets/<name>``. Where a preset has
several seeds (TPR-RNN all tasks: the paper's Table 1 reports seeds, Table 4 its best run),
the preset is the seed with the lowest mean validation error over the tasks (MemN2N's: the
lowest training error, by which Sukhbaatar et al. 2015, §4.2, pick the run they report), among
every seed whose run is here and every seed whose ``results.json`` is committed (a seed
committed beyond the listed ones counts too): the test set plays no part in the choice. ``--run_dir``
names each seed's run folder where the runs were trained by hand (``{seed}`` in it becomes
the seed). Task 3 trains on the 1,000 official questions available here.
"""

import concurrent.futures
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOCUS_MODULES = ("numbers__place_value,arithmetic__add_or_sub,comparison__pair,"
                 "numbers__round_number")

#: name -> (data folder, results/ folder of its runs' results.json, description, the train
#: command's arguments without --seed/--data_dir/--model_dir, seeds).
PRESETS = {
    "tpr_rnn_babi_all_tasks": (
        "babi", "results/babi/recipes/all_tasks_authors_130ep/tpr_rnn-seed{seed}",
        "TPR-RNN (Schlag & Schmidhuber 2018), all 20 bAbI tasks jointly, en-10k (task 3: the "
        "1,000 official questions available here); the authors' code's sizes, initialisation "
        "and TF1 Nadam (all_tasks_authors, nesterov_adam), 130 epochs",
        ["-m", "train.babi", "--task", "all", "--size", "all_tasks_authors", "--optimizer",
         "nesterov_adam", "--epochs", "130", "--checkpoint_every_steps", "2000", "--verbose",
         "2"], (1, 2, 3, 4, 5)),
    "memn2n_babi_all_tasks": (
        "babi", "results/babi/memn2n_joint/seed{seed}",
        "MemN2N (Sukhbaatar et al. 2015), PE LS RN, joint training on all 20 bAbI tasks, "
        "en-10k (task 3: 1,000 questions); the authors' joint protocol (joint_paper: 30 "
        "epochs of linear start, then 20 from lr 0.005 halved every 5), d = 50",
        ["-m", "train.babi", "--task", "all", "--model", "memn2n", "--size", "joint_paper",
         "--checkpoint_every_steps", "2000", "--verbose", "2"], tuple(range(1, 11))),
    "tpru32_entailment": (
        "entailment", "results/entailment/presets/tpru32_entailment",
        "BiDAF TPRU-32 (Tang, Smolensky & de Sa 2018, §5.2), d = 64, N(0, 1) embedding; "
        "§5.1 recipe (Adam 1e-3, batch 64, early stopping on validation)",
        ["-m", "train.entailment", "--recipe=paper", "--dim=64", "--epochs=90",
         "--patience=20", "--verbose=2", "--jit_compile", "--arch=bidaf", "--cell=tpru",
         "--roles=32", "--embedding_init=normal"], (0,)),
    "tp_transformer_math_focus": (
        "mathematics", "results/math/tiny-cooldown20000/tp_transformer-seed{seed}",
        "TP-Transformer (Schlag et al. 2019), CPU size 'tiny', on the four focus modules: "
        "80,000 steps of 128 at lr 1e-3, the last 20,000 cooled down linearly to 0 (the "
        "paper trains 1,000k steps of 1,024 at a constant 1e-4)",
        ["-m", "train.math", "--model", "tp_transformer", "--size", "tiny", "--modules",
         FOCUS_MODULES, "--steps", "80000", "--cooldown_steps", "20000", "--epochs", "1000",
         "--checkpoint_every_steps", "1000", "--verbose", "2",
         # the shipped weights' kept epoch was chosen on the interpolate test files
         "--validation_source", "test_interpolate"], (0,)),
}


#: Served model names other than the task's (one server serves every preset, so two bAbI
#: presets need two names, and the four-module math model, a part of the routed math preset
#: served as ``math``, is ``math_focus``; serving/models.config lists them).
MODEL_NAMES = {"memn2n_babi_all_tasks": "memn2n", "tp_transformer_math_focus": "math_focus"}


def run_folder(args, name, seed):
    """The seed's run folder: ``--run_dir`` with ``{seed}`` filled, else RUNS/NAME/seedN."""
    if args.run_dir:
        return args.run_dir.format(seed=seed)
    return os.path.join(args.runs, name, f"seed{seed}")


def command(args, name, seed):
    """The training command of one run."""
    data, _, _, argv, _ = PRESETS[name]
    cmd = [sys.executable, *argv, f"--seed={seed}",
           f"--data_dir={os.path.join(args.data_root, data)}",
           f"--model_dir={run_folder(args, name, seed)}"]
    if args.max_train_minutes:
        cmd.append(f"--max_train_minutes={args.max_train_minutes:g}")
    return cmd


def ended(args, name, seed):
    """The run's results.json (dict) once a process of it has ended, else None."""
    path = os.path.join(run_folder(args, name, seed), "results.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def finished(args, name, seed):
    """The run's results.json once it ended other than on a sitting's time budget (a run
    stopped by ``--max_train_minutes`` resumes when trained again), else None."""
    results = ended(args, name, seed)
    return None if results is None or results.get("stopped") == "time_budget" else results


def train(args, runs):
    env = dict(os.environ)
    if args.jobs > 1:
        env.update(TF_NUM_INTRAOP_THREADS="1", TF_NUM_INTEROP_THREADS="1")

    def one(run):
        name, seed = run
        folder = run_folder(args, name, seed)
        os.makedirs(folder, exist_ok=True)
        started = time.time()
        with open(os.path.join(folder, "train.log"), "a") as log:
            code = subprocess.call(command(args, name, seed), stdout=log,
                                   stderr=subprocess.STDOUT, env=env, cwd=REPO)
        return f"{name} seed {seed}: exit {code}, {time.time() - started:.0f} s"

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for line in pool.map(one, runs):
            print(line, flush=True)


#: Presets chosen among their seeds by training error (§4.2's rule for MemN2N), not validation.
BY_TRAINING_ERROR = frozenset({"memn2n_babi_all_tasks"})


def choice(name):
    """``(key, label)``: what picks the preset's seed among its runs (lower is better)."""
    if name in BY_TRAINING_ERROR:
        return (lambda results: results["train_error_percent_mean"]), "lowest training error"
    return mean_valid_error, "lowest mean validation error"


def mean_valid_error(results):
    """Mean validation error (%) of a run: over tasks (bAbI), or of the validate split."""
    if "valid_error_percent" in results:
        values = list(results["valid_error_percent"].values())
        return sum(values) / len(values)
    if "accuracy_percent" in results:
        return 100.0 - results["accuracy_percent"]["validate"]
    return 100.0 - results["summary"]["interpolate"]["mean"]


def kept_path(args, name, seed):
    """Where the seed's results.json is kept in the repository (``--root``)."""
    return os.path.join(args.root, PRESETS[name][1].format(seed=seed), "results.json")


def committed(args, name, seed):
    """The seed's results.json kept in the repository, else None."""
    path = kept_path(args, name, seed)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def committed_seeds(args, name):
    """Every seed whose results.json is kept in the repository (``--root``) for ``name``."""
    keep = PRESETS[name][1]
    if "{seed}" not in keep:  # one run, kept in one folder
        return set()
    prefix, suffix = keep.split("{seed}")
    seeds = set()
    for path in glob.glob(os.path.join(args.root, keep.format(seed="*"), "results.json")):
        folder = os.path.relpath(os.path.dirname(path), args.root).replace(os.sep, "/")
        seed = folder[len(prefix):len(folder) - len(suffix)]
        if folder.startswith(prefix) and folder.endswith(suffix) and seed.isdigit():
            seeds.add(int(seed))
    return seeds


def keep_results(args, name, seed):
    """Copies the run's results.json into the repository (``--root``)."""
    target = kept_path(args, name, seed)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copyfile(os.path.join(run_folder(args, name, seed), "results.json"), target)


def relabel(args, name, best, seeds):
    """The preset's description names the seeds it was chosen from: ``seed B of [...]``.
    Refuses (SystemExit) if the shipped preset is not seed ``best`` of this recipe (its
    recorded ``results_json`` is not the seed's kept one)."""
    path = os.path.join(args.root, "tpr_keras", "presets", name, "metadata.json")
    with open(path) as f:
        metadata = json.load(f)
    training = metadata["training"]
    wanted = f"{PRESETS[name][1].format(seed=best)}/results.json"
    if training.get("seed") != best or training.get("results_json") != wanted:
        raise SystemExit(f"{name}: seed {best} has the {choice(name)[1]} but the "
                         f"shipped preset is seed {training.get('seed')} "
                         f"({training.get('results_json')}): make it where seed {best}'s run "
                         "folder is (--run_dir)")
    metadata["description"] = re.sub(r"seed \d+ of \[[^\]]*\]", f"seed {best} of {seeds}",
                                     metadata["description"])
    with open(path, "w") as f:
        json.dump(metadata, f, indent=1, default=str)
        f.write("\n")


def make(args, name):
    """Keeps the ended runs' results.json and writes the preset from the best one (a run
    stopped by its time budget counts with ``--accept_time_budget``; the description says
    how each run stopped). Seeds whose runs are not on this machine take part through their
    committed results.json: if one of them is the best, the preset (made from it where its
    run was) is left as it is."""
    data, keep, description, _, seeds = PRESETS[name]
    look = ended if args.accept_time_budget else finished
    done = {seed: look(args, name, seed) for seed in seeds}
    done = {seed: r for seed, r in done.items() if r is not None}
    if not done:
        return f"{name}: no finished run"
    # Seeds trained on another machine count through their committed results.json.
    pool = {seed: committed(args, name, seed)
            for seed in set(seeds) | committed_seeds(args, name) if seed not in done}
    pool = {**{seed: r for seed, r in pool.items() if r is not None}, **done}
    key, rule = choice(name)
    best = min(pool, key=lambda seed: (key(pool[seed]), seed))
    if best not in done:
        if not args.dry_run:
            for seed in done:
                keep_results(args, name, seed)
            relabel(args, name, best, sorted(pool))
        return (f"{name}: seed {best} keeps the preset ({rule} of seeds "
                f"{sorted(pool)}; its run is not here, its committed results.json is); kept "
                f"the results.json of seed(s) {sorted(done)}")
    label = (f"; seed {best} of {sorted(pool)}, {rule}"
             if len(pool) > 1 else f"; seed {best}, the only finished seed")
    stop = {"time_budget": "stopped by its time budget", "early_stopping":
            "stopped early on validation", "epochs": "at its epoch cap",
            "steps": "at its step budget"}.get(done[best].get("stopped"),
                                                 f"stopped: {done[best].get('stopped')}")
    label += f", {stop} after {done[best].get('epochs')} epochs"
    cmd = [sys.executable, "-m", "train.save_preset",
           f"--model_dir={run_folder(args, name, best)}",
           f"--output={os.path.join(args.root, 'tpr_keras', 'presets', name)}",
           f"--data_dir={os.path.join(args.data_root, data)}",
           f"--description={description}{label}",
           f"--results_json={keep.format(seed=best)}/results.json", "--overwrite",
           *([f"--model_name={MODEL_NAMES[name]}"] if name in MODEL_NAMES else []),
           # used when results.json predates recording its command line
           "--command=python " + " ".join(command(args, name, best)[1:])]
    if args.dry_run:
        return " ".join(cmd[1:])
    for seed in done:
        keep_results(args, name, seed)
    code = subprocess.call(cmd, cwd=REPO)
    return f"{name}: preset from seed {best}, exit {code}"


def main(argv=None):
    from serving.command_flags import Command

    parser = Command("python -m experiments.train_presets", __doc__.split("\n\n")[0])
    parser.string("data_root", os.path.join(REPO, "..", "shared", "data"))
    parser.string("runs", os.path.join(REPO, "runs", "presets"))
    parser.string("run_dir", None, "each seed's run folder, {seed} replaced by the seed "
                  "(default RUNS/NAME/seed{seed}); one preset only")
    parser.string("root", REPO,
                  "the repository whose results/ and tpr_keras/presets/ --make fills")
    parser.string("presets", ",".join(PRESETS))
    parser.string("seeds", None,
                  "comma-separated seeds to train (default: every seed of a preset)")
    parser.integer("jobs", 1)
    parser.float("max_train_minutes", None)
    parser.boolean("make", False, "keep finished runs' results.json and write the presets")
    parser.boolean("accept_time_budget", False,
                   "--make also from runs stopped by --max_train_minutes")
    parser.boolean("dry_run", False, "print the commands only")
    args = parser.parse(argv)
    names = args.presets.split(",")
    unknown = sorted(set(names) - set(PRESETS))
    if unknown:
        parser.error(f"unknown presets {unknown}; choose from {sorted(PRESETS)}")
    if args.run_dir and (len(names) != 1 or "{seed}" not in args.run_dir):
        parser.error("--run_dir names one preset's run folders and holds {seed}")
    if args.make:
        for name in names:
            print(make(args, name))
        return 0
    seeds = None if args.seeds is None else {int(s) for s in args.seeds.split(",")}
    runs = [(n, s) for n in names for s in PRESETS[n][4]
            if (seeds is None or s in seeds) and finished(args, n, s) is None]
    if args.dry_run:
        for name, seed in runs:
            print("python " + " ".join(command(args, name, seed)[1:]))
        return 0
    train(args, runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
