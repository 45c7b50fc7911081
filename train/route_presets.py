"""Combine math presets into one routed preset (a default model and per-module
experts): ``python -m train.route_presets``.

    python -m train.route_presets --default tp_transformer_math_focus \
        --expert comparison__pair=runs/presets/cmp-expert --data_dir ../shared/data/mathematics \
        --output my_presets/math_routed

The default preset answers every question; each ``--expert MODULE[,MODULE...]=PRESET``
answers the questions whose wording is one of those modules' (the default preset's module
templates, the served ``module`` output; a wide module kept with no templates is
recognised by its expression pattern where it has one,
:mod:`tpr_keras.data.mathematics.expression_patterns`), with one decoder for all of them. A
routed PRESET lends, for each module, the decoder that answers that module in it (its expert of the
module, else its default). The experts must share the default's special symbols and answer
length and know no symbol it lacks (an expert continued from the default with
``train.math --init_from`` shares its vocabulary; one trained on fewer modules reads and
writes the default's ids through a ``VocabularyMappedDecoder``). The routed model
(``RoutedTPTransformer``) is evaluated as ``train.save_preset`` evaluates a run, on the
default preset's modules (full table and the sample table CI re-checks), and written as one
preset (``--weights_dtype float16`` stores the weights in half the bytes, evaluated as
stored; ``--int8_modules`` stores those modules' experts' weight matrices as 8-bit
integers, about half again): both models' weights, the default's vocabulary and templates,
and metadata.json recording this command and commit and each part's own training record.

``main`` imports Keras and the models after TensorFlow has started quietly
(:func:`train.cli.import_tensorflow`), so that ``--help`` starts no TensorFlow.
"""

import os

from tpr_keras.presets.weight_storage import round_weights
from train import backend, cli

EXAMPLE = ("python -m train.route_presets --default tp_transformer_math_focus "
           "--expert comparison__pair=DIR --output presets/routed")


def parse_experts(entries):
    """``["module[,module...]=preset", ...]`` -> ``{module: preset}``.

    Raises:
        cli.UsageError: an entry without ``=`` or a module named twice.
    """
    experts = {}
    for entry in entries:
        modules, equals, preset = entry.partition("=")
        modules = [m.strip() for m in modules.split(",")]
        if not equals or not all(modules) or not preset.strip():
            raise cli.UsageError(f"--expert {entry!r}: expected MODULE[,MODULE...]=PRESET")
        for module in modules:
            if module in experts:
                raise cli.UsageError(f"--expert names {module} twice")
            experts[module] = preset.strip()
    if not experts:
        raise cli.UsageError("give at least one --expert MODULE=PRESET")
    return experts


def part_record(preset, decoder=None):
    """What metadata.json keeps of a part: its name, weights' SHA-256 and training; lent by
    a routed preset, that preset's record of the decoder (its own training, not the routed
    preset's sum), with the routed preset's name and the decoder's."""
    from tpr_keras.presets.preset_files import sha256_file

    training = dict(preset.metadata.get("training", {}))
    if decoder is not None and decoder in training.get("parts", {}):
        return {**training["parts"][decoder], "lent_by": preset.name, "decoder": decoder}
    return {"preset": preset.name, "weights_sha256": sha256_file(preset.weights_path),
            **({} if decoder is None else {"decoder": decoder}), "training": training}


def with_patterns(templates):
    """``templates`` (the default preset's) with the expression patterns of its wide
    modules (``ModuleTemplates.with_patterns``), each added one printed: the routed preset
    recognises their questions, so an expert can answer them."""
    patterned = templates.with_patterns()
    for module in sorted(set(patterned.patterns) - set(templates.patterns)):
        print(f"{module}: recognised by its expression pattern "
              f"({patterned.patterns[module]})")
    return patterned


def expert_parts(experts, default, templates):
    """``(decoders {name: TPTransformer}, routes {module: name}, records {name: record})``
    of ``{module: preset}``: modules answered by the same decoder of the same preset share
    one expert, named after its module when it answers one, else after its preset.

    Raises:
        ValueError: a module ``templates`` (the default preset's, with their patterns) do
            not recognise, or one its preset was not trained on.
    """
    from tpr_keras.models.task_models import trained_preset
    from tpr_keras.models.tp_transformer.tp_transformer_answerer import is_routed
    from tpr_keras.models.tp_transformer.vocabulary_mapped_decoder import (
        VocabularyMappedDecoder,
    )

    known = [m for m in templates.modules if m not in templates.wide]
    presets, models, groups = {}, {}, {}
    for module, path in experts.items():
        if module not in known:
            raise ValueError(f"--expert {module}: not a module of {default.name} that its "
                             f"templates recognise ({', '.join(known)})")
        if path not in presets:
            presets[path] = trained_preset(path, "math")
            models[path] = presets[path].build_model()
        trained = presets[path].metadata.get("evaluation_options", {}).get("modules", [])
        if module not in trained:
            raise ValueError(f"--expert {module}={presets[path].name}: that preset was not "
                             f"trained on {module} (its modules: {trained})")
        route = int(models[path].routes([module])[0]) if is_routed(models[path]) else -1
        groups.setdefault((path, route), []).append(module)
    decoders, routes, records = {}, {}, {}
    for (path, route), modules in groups.items():
        model, preset = models[path], presets[path]
        lent = None if route < 0 else ("default", *model.expert_names)[route]
        name = modules[0] if len(modules) == 1 else "_".join(filter(None, [preset.name, lent]))
        decoder = model if route < 0 else model.decoders()[route]
        decoders[name] = (decoder.decoder if isinstance(decoder, VocabularyMappedDecoder)
                          else decoder)
        routes.update({m: name for m in modules})
        records[name] = part_record(preset, lent)
    return decoders, routes, records


def int8_experts(modules, routes, weights_dtype):
    """The experts (names of ``routes``' values) that answer the comma-separated
    ``modules``, sorted.

    Raises:
        cli.UsageError: a module no ``--expert`` names, or no ``--weights_dtype float16``.
    """
    names = [m.strip() for m in modules.split(",") if m.strip()]
    if names and weights_dtype != "float16":
        raise cli.UsageError("--int8_modules needs --weights_dtype float16 (the other "
                             "decoders' storage)")
    unknown = [m for m in names if m not in routes]
    if unknown:
        raise cli.UsageError(f"--int8_modules {','.join(unknown)}: no --expert answers "
                             "them; only an expert's decoder is stored as int8")
    return sorted({routes[m] for m in names})


def command():
    """``python -m train.route_presets``'s flags (a fresh :class:`~train.cli.TrainCommand`)."""
    command = cli.TrainCommand("python -m train.route_presets", __doc__, EXAMPLE)
    command.group("Presets")
    command.string("default", None, "The math preset (a shipped name or a folder) that "
                   "answers every question no expert takes.")
    command.multi("expert", "MODULE[,MODULE...]=PRESET: the preset that answers these "
                  "modules' questions, one decoder for all (repeat for more).")
    command.string("output", None, "The preset folder to write.")
    command.boolean("overwrite", False, "Replace an existing preset folder.")
    command.string("description", "", "One line: what the model is and how it was trained.")
    command.string("model_name", None, "Served model name (default: the default preset's).")
    command.enum("weights_dtype", "float32", ["float32", "float16"], "How the preset "
                 "stores its weights: float16 halves the file; the model's weights are "
                 "rounded to float16 before it is evaluated, so the recorded scores are the "
                 "stored weights'.")
    command.string("int8_modules", "", "MODULE[,MODULE...]: the experts answering these "
                   "modules store their weight matrices as 8-bit integers with a scale per "
                   "output channel (about half float16's bytes), quantised before the model "
                   "is evaluated; needs --weights_dtype float16.")
    command.boolean("allow_dirty", False, "Write from a tree with uncommitted changes "
                    "(tests); a shipped preset never is.")
    command.group("Evaluation")
    command.string("data_dir", None, "Where the Mathematics Dataset's files are.")
    command.integer("sample", 50, "Questions per test file in the sample table.")
    cli.define_output_flags(command, list_presets=False)
    return command


def main(args):
    if not args.default or not args.output:
        raise cli.UsageError("--default, --expert and --output are required")
    experts = parse_experts(args.expert)
    if os.path.exists(args.output) and not args.overwrite:
        raise FileExistsError(f"{args.output} already exists; pass --overwrite to replace it")
    backend.import_tensorflow(args)
    import keras

    from tpr_keras.models.task_models import trained_preset
    from tpr_keras.models.tp_transformer.routed_tp_transformer import RoutedTPTransformer
    from tpr_keras import evaluation
    from tpr_keras.provenance import run_command, run_source, shareable_command
    from train.machine import machine_description
    from train.preset_writing import headline, write_preset

    source = run_source()
    if source is None or (source["dirty"] and not args.allow_dirty):
        raise cli.UsageError("the tree has uncommitted changes (or is no checkout): a preset "
                             "is written from a clean commit, so that its code can be "
                             "checked out again")
    default = trained_preset(args.default, "math")
    options = dict(default.metadata["evaluation_options"])
    templates = evaluation.preset_templates(default)
    if templates is None:
        raise ValueError(f"{default.path}: no module templates (assets/modules.json.gz); a "
                         "routed model chooses its decoder by them")
    templates = with_patterns(templates)
    decoders, routes, records = expert_parts(experts, default, templates)
    model = RoutedTPTransformer(default.build_model(), decoders, routes)
    quantised = int8_experts(args.int8_modules, routes, args.weights_dtype)
    if args.weights_dtype != "float32":
        round_weights(model, args.weights_dtype)
    for name in quantised:  # after the float16 rounding: its matrices become int8
        round_weights(model.expert_decoders[model.expert_names.index(name)], "int8")
    vocab = evaluation.preset_vocabulary(default)
    table, sample_table = evaluation.evaluate_tables(
        "math", model, vocab, args.data_dir, options, [None, args.sample], templates=templates)
    records = {"default": part_record(default)} | records
    trainings = [r["training"] for r in records.values()]
    from tpr_keras.data.mathematics.templates import TEMPLATES_ASSET

    # the default's templates, written compressed whichever way its preset holds them
    assets = {"vocab.txt": default.asset_path("vocab.txt"), TEMPLATES_ASSET: templates.save}
    write_preset(
        model, args.output, assets, task="math",
        model_name=args.model_name or default.metadata.get("model_name", "math"),
        description=args.description, headline=headline("math", table),
        overwrite=args.overwrite, weights_dtype="int8" if quantised else args.weights_dtype,
        training={
            "command": shareable_command(run_command()),
            "source": source,
            "seed": {name: t.get("seed") for name, t in zip(records, trainings)},
            "train_seconds": sum(t.get("train_seconds") or 0 for t in trainings),
            "wall_seconds": sum(t.get("wall_seconds") or 0 for t in trainings),
            "parameters": model.count_params(),
            "machine": trainings[0].get("machine") or machine_description(),
            "parts": records,
        },
        data={"files_sha256": evaluation.files_sha256(
            *reversed(evaluation.data_files("math", args.data_dir, options)))},
        evaluation_options=options,
        evaluation={"table": table},
        evaluation_sample={"limit": args.sample, "table": sample_table},
        versions={"keras": keras.__version__,
                  "tensorflow": __import__("tensorflow").__version__})


if __name__ == "__main__":
    cli.run(command, main)
