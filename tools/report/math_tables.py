"""The math study's tables from committed runs: the preset's command against its training
length, runs that continue a preset, models on a held-out sample, and a preset's exact match
on its own training questions.

Steps (block ``math-steps``): the TP-Transformer runs of the preset's command (``--size
tiny``, the four focus modules, batch 128): ``results/math/focus/tp_transformer-seed<S>``
(15,000 steps) and ``results/math/steps<N>/tp_transformer-seed<S>`` (the same command with
``--steps N``). One row per length: the interpolate exact match of every module (the mean
over seeds where a length has several, with the range), training time, and how many modules
reach the bar of :data:`TARGET` %.

Continued (block ``math-continued``): every ``train.math --init_from`` run, whose
``results.json`` names its parent in ``config.init_from_preset`` (the preset, its weights'
SHA-256 and the parent run's command, commit and ``results.json``); the parent's row, the
continued run's, then the continued run's pooled validation error after each epoch.

Held out (block ``math-heldout``): each ``results/math/heldout/<name>.json`` is what
``tools.math_savedmodel_accuracy EXPORT SAMPLE/interpolate --json ...`` wrote for one
model's SavedModel, on a sample of the interpolate regime drawn by
``experiments.math_heldout_sample`` under a seed the dataset's files were not made with; one
row per model, then the lowest module (what a bar on every module asks) and the mean.

Answer buckets (block ``math-answer-buckets``): each
``results/math/answer_buckets/<name>/results.json``, runs that differ only in how
``train.math`` batches (``--answer_buckets`` or not); one row per run: its last epoch's
examples/s, its validation after its last step and its interpolate mean.

Fit (block ``math-fit``): each ``results/math/fit/<name>.json`` written by
``tools.math_fit``: exact match on the first questions of each training file beside
interpolate, and interpolate by kind of question.
"""

import glob
import json
import os

from tools.report.common import validation_curve

MATH = os.path.join("results", "math")
FOCUS = os.path.join(MATH, "focus")
STEPS = os.path.join(MATH, "steps{steps}")
HELDOUT = os.path.join(MATH, "heldout")
FIT = os.path.join(MATH, "fit")
ANSWER_BUCKETS = os.path.join(MATH, "answer_buckets")
MODEL = "tp_transformer"
#: The bar: every module the preset serves at >= 90 % interpolate exact match.
TARGET = 90.0
#: ``--modules`` of the preset's command (the modules it serves).
PRESET_MODULES = ("numbers__place_value,arithmetic__add_or_sub,comparison__pair,"
                  "numbers__round_number")
#: The columns of a fit table: each training difficulty, the three pooled, interpolate.
FIT_REGIMES = ("train-easy", "train-medium", "train-hard", "train", "interpolate")


# -------------------------------------------------------------------------- steps
def steps_runs(root):
    """``{steps: [results, ...]}`` of every committed run of the preset's command."""
    paths = glob.glob(os.path.join(root, FOCUS, f"{MODEL}-seed*", "results.json"))
    paths += glob.glob(os.path.join(root, STEPS.format(steps="*"), f"{MODEL}-seed*",
                                    "results.json"))
    runs = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
        runs.setdefault(int(result["steps"]), []).append(result)
    for results in runs.values():
        results.sort(key=lambda r: r["config"]["seed"])
    return dict(sorted(runs.items()))


def steps_markdown(root):
    """One row per training length; each module's mean exact match % (min-max over seeds)."""
    runs = steps_runs(root)
    if not runs:
        return f"No run is committed (`{FOCUS}` or `{STEPS}`)."
    names = sorted({m for results in runs.values() for r in results
                    for m in r["interpolate_accuracy_percent"]})
    lines = ["| steps of 128 | seeds | " + " | ".join(f"`{m}`" for m in names)
             + f" | modules ≥ {TARGET:g} % | training h per run |",
             "|---:|---|" + "---:|" * (len(names) + 2)]
    for steps, results in runs.items():
        cells, reached = [], 0
        for name in names:
            values = [r["interpolate_accuracy_percent"][name] for r in results]
            mean = sum(values) / len(values)
            reached += mean >= TARGET
            spread = f" ({min(values):.1f}–{max(values):.1f})" if len(values) > 1 else ""
            cells.append(f"{mean:.1f}{spread}")
        hours = sum(r["train_seconds"] for r in results) / len(results) / 3600
        seeds = ", ".join(str(r["config"]["seed"]) for r in results)
        lines.append(f"| {steps:,} | {seeds} | " + " | ".join(cells)
                     + f" | {reached} of {len(names)} | {hours:.2f} |")
    lines += ["", "Interpolate exact match %, mean over the seeds (min–max). Each run: "
              "`TF_NUM_INTRAOP_THREADS=1 python -m train.math --data_dir DIR --model "
              "tp_transformer --size tiny --modules numbers__place_value,"
              "arithmetic__add_or_sub,comparison__pair,numbers__round_number --steps N "
              "--epochs 1000 --seed S` (the 15,000-step rows: `results/math/focus`; longer: "
              "`results/math/steps<N>`)."]
    return "\n".join(lines)


# ---------------------------------------------------------------------- continued
def continued_runs(root):
    """``[(folder, results)]``: every committed math run with ``--init_from``, by folder."""
    runs = []
    pattern = os.path.join(root, MATH, "*", f"{MODEL}-seed*", "results.json")
    for path in sorted(glob.glob(pattern)):
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
        if result.get("config", {}).get("init_from"):
            runs.append((os.path.relpath(os.path.dirname(path), root), result))
    return runs


def parent(root, result):
    """The parent run's results (``init_from_preset.results_json`` under ``root``), or
    None when the run does not name one or it is not committed."""
    record = result["config"].get("init_from_preset") or {}
    path = record.get("results_json")
    if not path or not os.path.exists(os.path.join(root, path)):
        return None
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return json.load(f)


def rate_words(config):
    """The learning rate of a run in words: warm-up, rate, cool-down."""
    parts = [f"{config['learning_rate']:g}"]
    if config.get("warmup_steps"):
        parts.insert(0, f"warm-up {config['warmup_steps']:,}")
    if config.get("cooldown_steps"):
        parts.append(f"cool-down {config['cooldown_steps']:,}")
    return ", ".join(parts)


def final_error(result):
    """The pooled validation error % of the run's last validation."""
    curve = validation_curve(result)
    return curve[-1][2] if curve else None


def continued_row(name, result, names, hours_before=0.0):
    """One row of a continued run's table: its draw, schedule, length and scores."""
    scores = [result["interpolate_accuracy_percent"].get(m) for m in names]
    reached = sum(s is not None and s >= TARGET for s in scores)
    config, error = result["config"], final_error(result)
    hours = result["train_seconds"] / 3600
    total = f"{hours:.2f}" if not hours_before else f"+{hours:.2f} = {hours_before + hours:.2f}"
    return (f"| {name} | {config.get('module_weights') or 'equal'} | {rate_words(config)} | "
            f"{result['steps']:,} | {total} | "
            + " | ".join("–" if s is None else f"{s:.1f}" for s in scores)
            + f" | {'–' if error is None else f'{error:.2f}'} | {reached} of {len(names)} |")


def continued_markdown(root):
    """Per continued run: its parent's row and its own, then its validation curve."""
    runs = continued_runs(root)
    if not runs:
        return (f"No continued run is committed (a `train.math --init_from` run under "
                f"`{MATH}/<folder>/{MODEL}-seed<S>`).")
    lines = []
    for folder, result in runs:
        before = parent(root, result)
        record = result["config"].get("init_from_preset") or {}
        names = sorted(set(result["interpolate_accuracy_percent"])
                       | set((before or {}).get("interpolate_accuracy_percent", {})))
        lines += [f"`{folder}`: from `{result['config']['init_from']}`"
                  + (f" (weights SHA-256 `{record['weights_sha256'][:12]}…`, trained at "
                     f"`{(record.get('commit') or '?')[:7]}`)" if record else "") + ".", "",
                  "| run | module weights | learning rate | steps of 128 | training h | "
                  + " | ".join(f"`{m}`" for m in names)
                  + f" | pooled validation error % | modules ≥ {TARGET:g} % |",
                  "|---|---|---|---:|---:|" + "---:|" * (len(names) + 2)]
        hours_before = 0.0
        if before is not None:
            lines.append(continued_row("parent", before, names))
            hours_before = before["train_seconds"] / 3600
        lines.append(continued_row("continued", result, names, hours_before))
        lines += ["", "| epoch | step | training h | pooled validation error % |",
                  "|---:|---:|---:|---:|"]
        lines += [f"| {i + 1} | {step:,} | {hours:.2f} | {error:.2f} |"
                  for i, (step, hours, error) in enumerate(validation_curve(result))]
        commands = ([f"parent: `{record['command']}`"] if record.get("command") else []) + [
            f"continued: `{result['command']}`"]
        lines += ["", "Interpolate exact match % at the end of each run. Commands: "
                  + "; ".join(commands) + ".", ""]
    return "\n".join(lines).rstrip("\n")


# ----------------------------------------------------------------------- held out
def heldout_scores(root):
    """``[(name, scores)]``, by file name: every committed held-out score."""
    rows = []
    for path in sorted(glob.glob(os.path.join(root, HELDOUT, "*.json"))):
        with open(path, encoding="utf-8") as f:
            rows.append((os.path.splitext(os.path.basename(path))[0], json.load(f)))
    return rows


def accuracies(scores):
    """``{module: exact match %}`` of one model's scores."""
    return {m: r["accuracy_percent"] for m, r in scores["modules"].items()}


def lowest(scores):
    """``(exact match %, module)`` of the model's weakest module."""
    return min((v, m) for m, v in accuracies(scores).items())


def heldout_markdown(root):
    """One row per model: exact match % per module, the lowest module and the mean."""
    rows = heldout_scores(root)
    if not rows:
        return (f"No held-out score is committed (`{HELDOUT}/<name>.json`, written by "
                "`tools.math_savedmodel_accuracy --json`).")
    modules = sorted({m for _, scores in rows for m in scores["modules"]})
    lines = ["| model | SavedModel | " + " | ".join(f"`{m}`" for m in modules)
             + " | lowest | mean | questions per module |",
             "|---|---|" + "---:|" * (len(modules) + 3)]
    commands = []
    for name, scores in rows:
        values = accuracies(scores)
        counts = sorted({r["questions"] for r in scores["modules"].values()})
        lines.append(
            f"| {name} | `{scores['saved_model']}` | "
            + " | ".join(f"{values[m]:.2f}" if m in values else "–" for m in modules)
            + f" | {lowest(scores)[0]:.2f} | {sum(values.values()) / len(values):.2f} | "
            + "/".join(f"{c:,}" for c in counts) + " |")
        commands.append(f"`python -m tools.math_savedmodel_accuracy {scores['saved_model']} "
                        f"{scores['questions_path']} --json {HELDOUT}/{name}.json`")
    return "\n".join(lines + ["", "Exact match %. Commands: " + "; ".join(commands) + "."])


# ---------------------------------------------------------------------------- fit
def fit_markdown(root="."):
    """One table per committed JSON under ``results/math/fit``."""
    folder = os.path.join(root, FIT)
    names = sorted(n for n in os.listdir(folder) if n.endswith(".json")) \
        if os.path.isdir(folder) else []
    if not names:
        return f"No run committed yet under `{FIT}/`."
    out = []
    for name in names:
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            run = json.load(f)
        name = run.get("preset") or run["model_dir"]
        out += [f"`{name}`, the first {run['per_file']:,} questions of each file:", "",
                "| module | train-easy | train-medium | train-hard | training (pooled) | "
                "interpolate | training − interpolate |",
                "|---|---:|---:|---:|---:|---:|---:|"]
        for module, row in run["modules"].items():
            acc = {regime: row[regime]["accuracy_percent"] for regime in FIT_REGIMES}
            out.append(f"| `{module}` | " + " | ".join(f"{acc[r]:.1f}" for r in FIT_REGIMES)
                       + f" | {acc['train'] - acc['interpolate']:+.1f} |")
        out += ["", f"Exact match %. `{run['command']}`", ""]
        kinds = {module: row["interpolate_kinds"] for module, row in run["modules"].items()
                 if len(row.get("interpolate_kinds", ())) > 1}
        if kinds:
            out += ["Interpolate by kind of question (answer; numbers in the question):", "",
                    "| module | kind | questions | exact match % |", "|---|---|---:|---:|"]
            out += [f"| `{module}` | {name} | {cell['questions']:,} | "
                    f"{cell['accuracy_percent']:.1f} |"
                    for module, table in kinds.items() for name, cell in table.items()]
            out.append("")
    return "\n".join(out).rstrip("\n")


def answer_buckets_markdown(root="."):
    """One row per run under :data:`ANSWER_BUCKETS`, then each run's command."""
    paths = sorted(glob.glob(os.path.join(root, ANSWER_BUCKETS, "*", "results.json")))
    if not paths:
        return f"No run is committed (`{ANSWER_BUCKETS}/<name>/results.json`)."
    lines = ["| run | batches | steps of 128 | training examples/s | training h | "
             "validation loss | validation error % | interpolate mean % | modules ≥ 90 % |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    commands = []
    for path in paths:
        with open(path) as f:
            r = json.load(f)
        last = r["history"][-1]
        grid = "--answer_buckets" in r["command"].split()
        lines.append(
            f"| `{os.path.basename(os.path.dirname(path))}` | "
            f"{'question × answer length grid' if grid else 'question length buckets'} | "
            f"{r['steps']:,} | {last['examples_per_second']:.0f} | "
            f"{r['train_seconds'] / 3600:.2f} | {last['valid_loss']:.3f} | "
            f"{last['valid_error_percent']:.1f} | {r['summary']['interpolate']['mean']:.1f} | "
            f"{sum(v >= TARGET for v in r['interpolate_accuracy_percent'].values())} |")
        commands.append(f"`{r['command']}`")
    machine = r["machine"]["description"]
    return "\n".join(lines + ["", f"Side by side on {machine}, one core each. Commands: "
                               + "; ".join(commands) + "."])
