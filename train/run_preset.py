"""A finished training run read back and written as a trained preset: what
``python -m train.save_preset`` does once TensorFlow has started.

The run's ``results.json`` and ``export/{model.keras,vocab.txt}`` are read, the evaluation
table is recomputed on the official test files with the functions ``train.evaluate`` uses
(and checked against the run's own numbers), a sample table (the first N questions of every
test file, what CI re-checks) is recorded, and the preset folder is written by the one
preset writer (:func:`train.preset_writing.write_preset`).

This module imports TensorFlow and Keras: ``train.save_preset`` imports it only after
its command line is parsed and TensorFlow started quietly (``--help`` stays fast).
"""

import json
import os

import keras
import tensorflow as tf

import tpr_keras.models.all_families  # noqa: F401  (registers the model classes for load_model)
from tpr_keras.data import mathematics
from tpr_keras.data.babi import Vocabulary
from tpr_keras.provenance import shareable_command
from tpr_keras import evaluation
from train import cli
from train.machine import machine_description
from train.preset_writing import headline, write_preset

#: Questions per test file in the sample table, by task (``--sample``'s default).
DEFAULT_SAMPLE = {"babi": 50, "math": 50, "entailment": 200}


def config_modules(results):
    """The math modules a run trained on (``--modules``), as a list."""
    modules = results["config"]["modules"]
    return modules.split(",") if isinstance(modules, str) else list(modules)


def run_table(task, results):
    """The run's own numbers in the evaluation table's form."""
    # bAbI: per task only (the run's mean pools the questions, the table's averages tasks).
    keys = {"babi": ("test_error_percent",),
            "entailment": ("accuracy_percent",),
            "math": ("interpolate_accuracy_percent", "extrapolate_accuracy_percent")}[task]
    return {k: results[k] for k in keys if k in results}


def save_run_preset(args):
    """Reads the run in ``args.model_dir``, checks its table and writes the preset
    ``args.output`` (``python -m train.save_preset``'s flags)."""
    results = read_results(args.model_dir, args.allow_dirty)
    export = os.path.join(args.model_dir, "export")
    model = keras.models.load_model(os.path.join(export, "model.keras"))
    task = evaluation.TASK_OF_CLASS[type(model).__name__]
    vocab_path = os.path.join(export, "vocab.txt")
    vocab = load_vocabulary(task, vocab_path)
    options, run_options = evaluation_options(task, results)
    sample = args.sample or DEFAULT_SAMPLE[task]
    table, sample_table = evaluation.evaluate_tables(task, model, vocab, args.data_dir,
                                                     options, [None, sample])
    check_run_table(args, task, model, vocab, results, table, options, run_options)
    sections = {
        "training": training_record(args, results, model),
        "data": {"files_sha256": evaluation.files_sha256(
            *reversed(evaluation.data_files(task, args.data_dir, options)))},
        "evaluation_options": options,
        "evaluation": {"table": table},
        "evaluation_sample": {"limit": sample, "table": sample_table},
        "versions": {"keras": keras.__version__,
                     "tensorflow": tf.__version__},
    }
    if task == "babi":
        sections["serving_options"] = {
            "max_story_sentences": evaluation.SERVED_MAX_STORY_SENTENCES,
            "keep_sentence_ends": options["keep_sentence_ends"]}
    write_preset(model, args.output, preset_assets(task, vocab_path, args.data_dir, options),
                 task=task, model_name=args.model_name or task,
                 description=args.description, headline=headline(task, table),
                 overwrite=args.overwrite, **sections)


def read_results(model_dir, allow_dirty):
    """The run's ``results.json``; a run from a dirty tree is a usage error unless allowed."""
    with open(os.path.join(model_dir, "results.json")) as f:
        results = json.load(f)
    source = results.get("source") or {}
    if source.get("dirty") and not allow_dirty:
        raise cli.UsageError(
            f"{model_dir}/results.json: the run trained from a tree with uncommitted "
            f"changes (commit {str(source.get('commit'))[:7]}, dirty); a preset is trained "
            "from a clean commit, so that its code can be checked out again. Train it anew.")
    return results


def load_vocabulary(task, vocab_path):
    """The run's vocabulary (bAbI's words, math's characters; None for entailment, whose
    model holds its own)."""
    if task == "babi":
        return Vocabulary.load(vocab_path)
    if task == "math":
        return mathematics.CharVocabulary.load(vocab_path)
    return None


def evaluation_options(task, results):
    """``(options, run_options)``: how the recorded table reads the test files, and how the
    run itself read them (the same but for bAbI's story length)."""
    if task == "babi":
        tasks = sorted(int(t) for t in results["test_error_percent"])
        # The recorded table reads stories as the served model does; the check against the
        # run's own numbers reads them as the run did (70 sentences, 130 for task 3, unless
        # the run said otherwise).
        keep_ends = results.get("config", {}).get("keep_sentence_ends", True)
        options = {"tasks": tasks,
                   "max_story_sentences": evaluation.SERVED_MAX_STORY_SENTENCES,
                   "keep_sentence_ends": keep_ends}
        run_options = {"tasks": tasks, "max_story_sentences":
                       results.get("config", {}).get("max_story_sentences"),
                       "keep_sentence_ends": keep_ends}
        return options, run_options
    options = {"modules": config_modules(results)} if task == "math" else {}
    return options, options


def check_run_table(args, task, model, vocab, results, table, options, run_options):
    """Raises ValueError when the recomputed table is not the run's own (same model, same
    files, same rule); a math run with ``--limit_per_file`` evaluated on fewer questions
    than the official files hold, so it is not compared."""
    config = results.get("config", {})
    if task == "math" and config.get("limit_per_file"):
        print(f"The run read {config['limit_per_file']} questions per file: its own table "
              "is not comparable with the official test files'.")
        return
    run_view = table if run_options == options else evaluation.evaluate_model(
        task, model, vocab, args.data_dir, run_options, download=False)
    rows = [r for r in evaluation.compare_tables(run_view, run_table(task, results))
            if r[1] is not None and r[2] is not None]
    differ = [r for r in rows if not r[3]]
    if differ:
        raise ValueError(f"the recomputed table differs from {args.model_dir}/"
                         f"results.json: {differ[:5]}")
    print(f"Recomputed the run's table ({len(rows)} number(s)): all within 0.05 points.")


def training_record(args, results, model):
    """metadata.json's ``training``: the command, commit, seed, times, size and machine of
    the run (and the preset it continued, if any)."""
    config = results.get("config", {})
    source = results.get("source") or {}
    record = {
        "command": shareable_command(results.get("command") or args.command or ""),
        "source": results.get("source"),
        "seed": config.get("seed"),
        "train_seconds": results.get("train_seconds"),
        "wall_seconds": results.get("wall_seconds"),
        "epochs": results.get("epochs"),
        "steps": results.get("steps"),
        "stopped": results.get("stopped"),
        "parameters": model.count_params(),
        # The machine the run trained on (a results.json without one: this machine).
        "machine": (results.get("machine") or {}).get("description")
                   or machine_description(),
        "results_json": args.results_json,
    }
    if config.get("init_from_preset"):
        # A run that continued a preset (train.math --init_from): the parent's weights
        # (SHA-256) and its own training command. A shipped name means the preset as it
        # was at this run's commit, so checking that commit out reproduces the chain.
        record["parent"] = dict(config["init_from_preset"], at_commit=source.get("commit"))
    return record


def preset_assets(task, vocab_path, data_dir, options):
    """``{asset name: source}``: the vocabulary, and for math the wording of its modules'
    questions (``modules.json``: ``module_of``, the served module), a module with too many
    templates kept with none (``ModuleTemplates.capped``) but recognised by its expression
    pattern where it has one (``ModuleTemplates.with_patterns``)."""
    assets = {"vocab.txt": vocab_path}
    if task != "math":
        return assets
    root = mathematics.find_mathematics_dir(data_dir, download=False)
    trained = mathematics.select_modules(options["modules"],
                                         mathematics.list_modules(root))["train"]
    templates = mathematics.module_templates(root, trained)
    capped = templates.capped().with_patterns()
    assets[mathematics.TEMPLATES_ASSET] = capped.save
    for module in capped.modules:  # wording that varies per question: new ones look outside
        if not capped.templates[module]:
            print(f"{mathematics.TEMPLATES_ASSET}: {module} has "
                  f"{len(templates.templates[module])} question templates "
                  f"(> {mathematics.MAX_TEMPLATES_PER_MODULE}); kept with none, so its "
                  + ("questions are recognised by its expression pattern."
                     if module in capped.patterns else "questions report no module."))
    return assets
