"""The generated blocks about the shipped presets (the README's table, each preset's section
in ``results/*.md``, a math preset's modules, the served checks), from each preset's
``metadata.json``. A routed preset (``train.route_presets``) records its parts' own
training under ``training.parts``: its section shows each part's command."""

import glob
import os

from tools.report.common import load_json as _load
from tools.report.common import portable_command
from tpr_keras.presets import TRAINED_PRESET_NAMES

HELDOUT = os.path.join("results", "math", "heldout")


def trained_cell(training):
    """The README table's "trained" cell: seed, epochs and hours; a routed preset's parts,
    with the hours of each part's own run summed (a part continued from another preset, or
    over several runs, brings only its last run's hours: its section lists the rest)."""
    hours = (training.get("train_seconds") or 0) / 3600
    parts = training.get("parts")
    if parts:
        seeds = ", ".join(str(p["training"].get("seed")) for p in parts.values())
        return f"{len(parts)} decoders (seeds {seeds}), {hours:.1f} h in their last runs"
    return f"seed {training.get('seed')}, {training.get('epochs')} epochs, {hours:.1f} h of training"


def part_lines(root, route, part, shown=()):
    """One part of a routed preset: which questions it answers, its preset and weights, and
    how it was trained (its parent first, for a continued part, unless the parent's weights
    are among ``shown``, SHA-256s whose training the section already shows)."""
    training = part["training"]
    answers = ("every question no other decoder takes" if route == "default"
               else f"the questions worded as `{route}`")
    head = (f"**{route}** decoder, answering {answers}: `{part['preset']}` (weights SHA-256 "
            f"`{part['weights_sha256'][:12]}…`), trained "
            f"{(training.get('train_seconds') or 0) / 3600:.1f} h "
            f"({training.get('steps') or 0:,} steps, code at "
            f"`{str(training.get('source', {}).get('commit'))[:7]}`)")
    if training.get("part_of"):  # written out of a routed preset by train.extract_part
        head += (f", taken out of `{training['part_of']['preset']}` (its "
                 f"`{training['part_of']['part']}` decoder as stored there) by "
                 "`train.extract_part`")
    parent = training.get("parent")
    if parent and parent["weights_sha256"] in shown:  # one paragraph: the parent is above
        lines = [f"{head}; c{parent_lines(root, parent, shown)[0][1:]}", ""]
    else:
        lines = [f"{head}:", ""] + parent_lines(root, parent, shown)
    return lines + ["```bash", portable_command(training["command"]), "```", ""]


def training_lines(root, training):
    """How a preset was trained: the command (after its parent's, for a continued run), or
    for a routed preset each part's and then the command that joined them."""
    if training.get("parts"):
        lines, shown = [], set()
        for route, part in training["parts"].items():
            lines += part_lines(root, route, part, shown)
            parent = part["training"].get("parent")
            shown |= {part["weights_sha256"]} | ({parent["weights_sha256"]} if parent else set())
            # a part taken out of a routed preset: the weights it was routed from
            shown |= {part["training"].get("part_of", {}).get("part_weights_sha256")} - {None}
        return lines + [f"joined into one preset ({training['parameters']:,} parameters; code "
                        f"at `{training['source']['commit'][:7]}`) by:", "", "```bash",
                        portable_command(training["command"]), "```", ""]
    return parent_lines(root, training.get("parent")) + [
        f"Trained {(training['train_seconds'] or 0) / 3600:.1f} h on {training['machine']}"
        f" ({training['epochs']} epochs, {training['steps']:,} steps, stopped: "
        f"{training['stopped']}; code at `{training['source']['commit'][:7]}`):", "",
        "```bash", portable_command(training["command"]), "```", ""]


def presets_block(root):
    """The README's table of the trained presets, from each one's metadata.json."""
    folder = os.path.join(root, "tpr_keras", "presets")
    shipped = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name, "metadata.json")
        if os.path.isfile(path):
            shipped[name] = _load(folder, name, "metadata.json")
    lines = ["| preset | model | task, served as | recorded on the official test sets | "
             "trained | size |", "|---|---|---|---|---|---:|"]
    for name, meta in shipped.items():
        training = meta.get("training", {})
        size = sum(os.path.getsize(os.path.join(d, f))
                   for d, _, files in os.walk(os.path.join(folder, name)) for f in files)
        lines.append(
            f"| `{name}` | {meta['class_name']} | {meta['task']}, `{meta['model_name']}` | "
            f"{meta.get('headline', '')} | {trained_cell(training)} | {size / 1e6:.2f} MB |")
    missing = [n for n in TRAINED_PRESET_NAMES if n not in shipped]
    text = "\n".join(lines)
    if missing:
        text += ("\n\nNot shipped yet: "
                 + ", ".join(f"`{n}`" for n in missing) + ".")
    return text


def committed(path):
    """Whether ``path`` (relative to the repository) can be a committed file: not under
    ``runs/``, which git ignores, so that a block reads the same on every checkout."""
    return os.path.normpath(path).split(os.sep)[0] != "runs"


def parent_lines(root, parent, shown=()):
    """Where a continued preset started (``metadata.training.parent``): the parent preset
    at the commit its name meant, its weights' SHA-256 and the parent's own training (its
    hours from its committed ``results.json``; only named when its weights are among
    ``shown``, already shown above); nothing for a preset trained from scratch."""
    if not parent:
        return []
    if parent["weights_sha256"] in shown:
        return [f"Continued from `{parent['preset']}` as it was at "
                f"`{str(parent.get('at_commit'))[:7]}` (weights SHA-256 "
                f"`{parent['weights_sha256'][:12]}…`, trained as shown above) by:", ""]
    hours, results = ",", parent.get("results_json")
    if results and committed(results) and os.path.isfile(os.path.join(root, results)):
        hours = f" {_load(root, results)['train_seconds'] / 3600:.1f} h,"
    return [f"Continued from `{parent['preset']}` as it was at "
            f"`{str(parent.get('at_commit'))[:7]}` (weights SHA-256 "
            f"`{parent['weights_sha256'][:12]}…`), itself trained{hours} code at "
            f"`{str(parent.get('commit'))[:7]}`, by:", "",
            "```bash", portable_command(parent["command"]), "```", "", "then:", ""]


def preset_block(name):
    """A generator of one preset's section: what it is, how it was trained, its table."""
    def block(root):
        path = os.path.join(root, "tpr_keras", "presets", name, "metadata.json")
        if not os.path.isfile(path):
            return (f"`{name}` is not shipped yet: `python -m experiments.train_presets "
                    f"--presets {name}` trains its run(s), `--make` writes it.")
        meta = _load(os.path.dirname(path), "metadata.json")
        training = meta["training"]
        table = meta["evaluation"]["table"]
        lines = [f"`{name}` ({meta['class_name']}): {meta['description']}.", ""]
        lines += training_lines(root, training)
        if "accuracy_percent" in table:
            splits = list(table["accuracy_percent"])
            lines += ["| " + " | ".join(splits) + " |", "|" + "---:|" * len(splits),
                      "| " + " | ".join(f"{table['accuracy_percent'][k]:.1f}"
                                        for k in splits) + " |"]
        elif "test_error_percent" in table:
            lines.append(f"Test error: {meta['headline']} (per task in the Table 1 block "
                         "above, from the same run).")
        else:
            for regime in ("interpolate", "extrapolate"):
                scores = table[f"{regime}_accuracy_percent"]
                lines += ["", f"| {regime} | " + " | ".join(scores) + " |",
                          "|---|" + "---:|" * len(scores),
                          "| exact match % | " + " | ".join(f"{v:.1f}" for v in
                                                          scores.values()) + " |"]
        if meta.get("task") == "math":
            lines += [""] + math_validation_lines(root, name, training)
        lines += ["", f"Re-check: `python -m train.evaluate --preset {name} --data_dir DIR`."]
        return "\n".join(lines)
    return block


def validation_source(root, training):
    """Which questions chose a math run's kept epoch: its ``results.json``'s
    ``validation.source``; a run recorded before ``train.math --validation_source`` existed
    has none and validated on the interpolate test files."""
    path = training.get("results_json")
    if not path or not os.path.isfile(os.path.join(root, path)):
        return None
    return _load(root, path).get("validation", {}).get("source", "test_interpolate")


def math_validation_lines(root, name, training):
    """Where a math preset's kept epoch (each part's, for a routed one) was chosen, and its
    exact match on the committed fresh generator sample (``results/math/heldout/``), whose
    questions chose no epoch."""
    parts = {route: part["training"] for route, part in training.get("parts", {}).items()}
    sources = {route: validation_source(root, t) for route, t in
               (parts or {"": training}).items()}
    test_chosen = [route for route, source in sources.items() if source == "test_interpolate"]
    lines = []
    if test_chosen:
        who = ("its run" if not parts else f"the run of its `{test_chosen[0]}` decoder"
               if len(test_chosen) == 1 else "the runs of its decoders ("
               + ", ".join(f"`{r}`" for r in test_chosen) + ")")
        lines.append(f"Kept epoch: {who} kept the epoch of the lowest validation error on the "
                     "`interpolate/` test files, which the interpolate table above scores "
                     "(`train.math --validation_source test_interpolate`, the only validation "
                     "of runs recorded before that flag), so those numbers are not held out "
                     "of the choice.")
    heldout = sorted(glob.glob(os.path.join(root, HELDOUT, f"{name}.json"))
                     + glob.glob(os.path.join(root, HELDOUT, f"{name}-at-*.json")))
    if heldout:
        scores = _load(os.path.dirname(heldout[0]), os.path.basename(heldout[0]))
        row = os.path.splitext(os.path.basename(heldout[0]))[0]
        counts = sorted({r["questions"] for r in scores["modules"].values()})
        values = ", ".join(f"`{m}` {r['accuracy_percent']:.2f}"
                           for m, r in sorted(scores["modules"].items()))
        lines.append(f"On a fresh sample of DeepMind's generator that no run trained on and "
                     f"no kept epoch was chosen on ({'/'.join(f'{c:,}' for c in counts)} "
                     "interpolate questions per module; it chose between continued runs "
                     f"instead, row `{row}` of the `math-heldout` table below) its exact "
                     f"match % is: {values}.")
    return lines


def preset_modules_block(name):
    """A generator of a math preset's modules with their exact match (the README's list of
    what it answers), from its metadata.json: interpolate, then the module's extrapolation
    file (``_big``) where it has one; best first."""
    def block(root):
        meta = _load(os.path.join(root, "tpr_keras", "presets", name), "metadata.json")
        table = meta["evaluation"]["table"]
        interpolate = table["interpolate_accuracy_percent"]
        extrapolate = table["extrapolate_accuracy_percent"]
        lines = ["| module it answers | interpolate | extrapolate (`_big`) |",
                 "|---|---:|---:|"]
        for module, score in sorted(interpolate.items(), key=lambda kv: (-kv[1], kv[0])):
            big = extrapolate.get(f"{module}_big")
            lines.append(f"| `{module}` | {score:.1f} % | "
                         + ("–" if big is None else f"{big:.1f} %") + " |")
        return "\n".join(lines)
    return block


def preset_claims_block(root):
    """Every shipped math preset's ``claims`` (its metadata.json): the modules it claims, with
    their exact match on the fresh generator sample, and those it was trained on but does
    not claim."""
    folder = os.path.join(root, "tpr_keras", "presets")
    lines = ["| preset | module | fresh-sample exact match | claimed |", "|---|---|---:|---|"]
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name, "metadata.json")
        claims = _load(os.path.dirname(path), "metadata.json").get("claims") if (
            os.path.isfile(path)) else None
        if claims is None:
            continue
        threshold = claims["threshold_percent"]
        rows = [(m, s, "yes") for m, s in claims["modules"].items()] + [
            (m, s, f"no (< {threshold:g} %)") for m, s in claims["not_claimed"].items()]
        for module, score, claimed in sorted(rows, key=lambda row: (-row[1], row[0])):
            lines.append(f"| `{name}` | `{module}` | {score:.2f} % | {claimed} |")
    return "\n".join(lines)


def presets_served_block(root):
    """Every committed ``tools.preset_serving_check --json`` run: the presets' test sets
    answered over gRPC, against the accuracy each preset records."""
    folder = os.path.join(root, "results", "presets")
    names = sorted(f for f in os.listdir(folder) if f.endswith("-served.json")) if (
        os.path.isdir(folder)) else []
    if not names:
        return ("No served check is committed yet (`python -m tools.preset_serving_check "
                "--preset NAME --data_dir DIR --json results/presets/NAME-served.json`).")
    lines = ["| preset | rows (tasks, splits, modules) | questions over gRPC | served accuracy "
             "equal to the recorded (±0.05) | lowest served % | seconds |",
             "|---|---:|---:|---:|---:|---:|"]
    for name in names:
        run = _load(folder, name)
        rows = run["rows"]
        equal = sum(r["matches"] for r in rows)
        lines.append(f"| `{run['preset']}` | {len(rows)} | "
                     f"{sum(r['questions'] for r in rows):,} | {equal} of {len(rows)} | "
                     f"{min(r['served_accuracy_percent'] for r in rows):.1f} | "
                     f"{run['seconds']:.0f} |")
    return "\n".join(lines)
