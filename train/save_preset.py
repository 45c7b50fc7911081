"""Turn a finished training run into a trained preset: ``python -m train.save_preset``.

    python -m train.save_preset --model_dir runs/babi-all --output my_presets/babi_all \
        --data_dir ../shared/data/babi

Reads the run's ``results.json`` and ``export/{model.keras,vocab.txt}``, recomputes the
evaluation table on the official test files with the functions ``train.evaluate`` uses
(and checks it against the run's own numbers), records a sample table (the first N
questions of every test file, what CI re-checks), and writes the preset folder with
``save_to_preset``: config, weights, vocabulary (and for math the templates of its modules'
training questions, ``modules.json``) and metadata.json (the training command,
commit, seed, data files' SHA-256, wall time, machine and both tables).
"""

import datetime
import json
import os

from train import cli
from train.outputs import headline, machine_description, write_preset

EXAMPLE = ("python -m train.save_preset --model_dir runs/babi/all --output presets/mine "
           "--description 'TPR-RNN, all bAbI tasks'")

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


def command():
    """``python -m train.save_preset``'s flags (a fresh :class:`~train.cli.TrainCommand`)."""
    command = cli.TrainCommand("python -m train.save_preset", __doc__, EXAMPLE)
    command.group("Run and preset")
    command.string("model_dir", None, "The finished run's folder (results.json, export/).")
    command.string("output", None, "The preset folder to write.")
    command.boolean("overwrite", False, "Replace an existing preset folder.")
    command.string("description", "", "One line: what the model is and how it was trained.")
    command.string("model_name", None, "Served model name for train.export (default: the "
                   "task: babi, entailment, math).")
    command.string("command", None, "The training command, when results.json predates "
                   "recording it.")
    command.string("results_json", None, "Where the run's results.json is committed "
                   "(recorded in metadata.json).")
    command.boolean("allow_dirty", False, "Save a run trained from a tree with uncommitted "
                    "changes (tests, experiments); a shipped preset never is.")
    command.group("Evaluation")
    command.string("data_dir", None, "Where the task's official files are.")
    command.integer("sample", None, "Questions per test file in the sample table (default "
                    "50 for bAbI and math, 200 for entailment).")
    cli.define_output_flags(command, list_presets=False)
    return command


def main(args):
    if not args.model_dir or not args.output:
        raise cli.UsageError("--model_dir and --output are required")
    if os.path.exists(args.output) and not args.overwrite:
        raise FileExistsError(f"{args.output} already exists; pass --overwrite to replace it")
    cli.import_tensorflow(args)
    import keras

    import tpr_keras.models.all_families  # noqa: F401  (registers the model classes for load_model)
    from tpr_keras import evaluation
    from tpr_keras.provenance import shareable_command

    with open(os.path.join(args.model_dir, "results.json")) as f:
        results = json.load(f)
    source = results.get("source") or {}
    if source.get("dirty") and not args.allow_dirty:
        raise cli.UsageError(
            f"{args.model_dir}/results.json: the run trained from a tree with uncommitted "
            f"changes (commit {str(source.get('commit'))[:7]}, dirty); a preset is trained "
            "from a clean commit, so that its code can be checked out again. Train it anew.")
    export = os.path.join(args.model_dir, "export")
    model = keras.models.load_model(os.path.join(export, "model.keras"))
    task = evaluation.TASK_OF_CLASS[type(model).__name__]
    vocab_path = os.path.join(export, "vocab.txt")
    vocab = None
    if task == "babi":
        from tpr_keras.data.babi import Vocabulary

        vocab = Vocabulary.load(vocab_path)
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
    elif task == "math":
        from tpr_keras.data.mathematics import CharVocabulary

        vocab = CharVocabulary.load(vocab_path)
        options = {"modules": config_modules(results)}
    else:
        options = {}
    if task != "babi":
        run_options = options
    sample = args.sample or DEFAULT_SAMPLE[task]
    table = evaluation.evaluate_model(task, model, vocab, args.data_dir, options,
                                      download=False)
    sample_table = evaluation.evaluate_model(task, model, vocab, args.data_dir, options,
                                             limit=sample, download=False)
    # The recomputed table must be the run's: same model, same files, same rule (a math
    # run with --limit_per_file evaluated on fewer questions than the official files hold).
    config = results.get("config", {})
    if task == "math" and config.get("limit_per_file"):
        print(f"The run read {config['limit_per_file']} questions per file: its own table "
              "is not comparable with the official test files'.")
    else:
        run_view = table if run_options == options else evaluation.evaluate_model(
            task, model, vocab, args.data_dir, run_options, download=False)
        rows = [r for r in evaluation.compare_tables(run_view, run_table(task, results))
                if r[1] is not None and r[2] is not None]
        differ = [r for r in rows if not r[3]]
        if differ:
            raise ValueError(f"the recomputed table differs from {args.model_dir}/"
                             f"results.json: {differ[:5]}")
        print(f"Recomputed the run's table ({len(rows)} number(s)): all within 0.05 points.")
    metadata = {
        "task": task,
        "model_name": args.model_name or task,
        "description": args.description,
        "headline": headline(task, table),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "training": {
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
        },
        "data": {"files_sha256": evaluation.files_sha256(
            *reversed(evaluation.data_files(task, args.data_dir, options)))},
        "evaluation_options": options,
        "evaluation": {"table": table},
        "evaluation_sample": {"limit": sample, "table": sample_table},
        "versions": {"keras": keras.__version__,
                     "tensorflow": __import__("tensorflow").__version__},
    }
    if config.get("init_from_preset"):
        # A run that continued a preset (train.math --init_from): the parent's weights
        # (SHA-256) and its own training command. A shipped name means the preset as it
        # was at this run's commit, so checking that commit out reproduces the chain.
        metadata["training"]["parent"] = dict(config["init_from_preset"],
                                              at_commit=source.get("commit"))
    if task == "babi":
        metadata["serving_options"] = {
            "max_story_sentences": evaluation.SERVED_MAX_STORY_SENTENCES,
            "keep_sentence_ends": options["keep_sentence_ends"]}
    assets = {"vocab.txt": vocab_path}
    if task == "math":  # the wording of its modules' questions: module_of, the served module
        from tpr_keras.data import mathematics

        root = mathematics.find_mathematics_dir(args.data_dir, download=False)
        trained = mathematics.select_modules(options["modules"],
                                             mathematics.list_modules(root))["train"]
        templates = mathematics.module_templates(root, trained)
        module, count = templates.largest
        if count <= mathematics.MAX_TEMPLATES_PER_MODULE:
            assets[mathematics.TEMPLATES_ASSET] = templates.save
        else:  # wording that varies per question: the rule would call new questions outside
            print(f"No {mathematics.TEMPLATES_ASSET}: {module} has {count} question "
                  f"templates (> {mathematics.MAX_TEMPLATES_PER_MODULE}); the preset "
                  "reports no module.")
    write_preset(model, args.output, assets, metadata, overwrite=args.overwrite)


if __name__ == "__main__":
    cli.run(command, main)
