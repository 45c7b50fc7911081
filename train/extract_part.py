"""Write one decoder of a routed math preset as a preset of its own:
``python -m train.extract_part``.

    python -m train.extract_part --preset tp_transformer_math_everyday \
        --part arithmetic__mul_div_multiple --output runs/presets/mdm-served

A routed preset (``train.route_presets``) keeps its default and expert decoders in one
weights file, some stored as float16 or int8; the presets it was routed from are not shipped.
This command writes one of its parts (named in its ``metadata.json``'s ``training.parts``:
``default`` or an expert) as a plain ``TPTransformer`` preset, so that a checkout alone can
continue it (``train.math --init_from``) or route it again (``train.route_presets --default``
or ``--expert``). Its weights are stored in float32 and hold exactly the values the routed
preset computes with (every float16 number, and every int8 ``q * scale`` computed in float32,
is a float32 number). Its vocabulary is the part's own, its templates the routed preset's,
its modules those the part answers there (every module for the default), and its
``training`` the part's own record (command, commit, results file) with ``part_of`` naming
the routed preset, its weights' SHA-256, the SHA-256 its record gives the part's weights
before they were routed, and this command. It records no evaluation table:
the routed preset's tables are the whole model's.

``main`` imports Keras and the models after TensorFlow has started quietly
(:func:`train.backend.import_tensorflow`), so that ``--help`` starts no TensorFlow.
"""

import os

from tpr_keras.data.mathematics import CharVocabulary
from tpr_keras.data.mathematics.templates import TEMPLATES_ASSET
from tpr_keras.presets.preset_files import sha256_file
from tpr_keras.provenance import run_command, run_source, shareable_command
from train import backend, cli

EXAMPLE = ("python -m train.extract_part --preset tp_transformer_math_everyday "
           "--part arithmetic__mul_div_multiple --output runs/presets/mdm-served")


def command():
    """``python -m train.extract_part``'s flags (a fresh :class:`~train.cli.TrainCommand`)."""
    command = cli.TrainCommand("python -m train.extract_part", __doc__, EXAMPLE)
    command.group("Presets")
    command.string("preset", None, "The routed math preset (a shipped name or a folder).")
    command.string("part", None, "The decoder to write: 'default' or an expert's name (its "
                   "metadata.json's training.parts).")
    command.string("output", None, "The preset folder to write.")
    command.boolean("overwrite", False, "Replace an existing preset folder.")
    cli.define_output_flags(command, list_presets=False)
    return command


def part_modules(model, route, modules):
    """The modules of ``modules`` (the routed preset's, in order) that ``route`` answers;
    every one for the default (route 0)."""
    if route == 0:
        return list(modules)
    return [m for m in modules if model.module_routes.get(m) == route]


def main(args):
    if not args.preset or not args.part or not args.output:
        raise cli.UsageError("--preset, --part and --output are required")
    if os.path.exists(args.output) and not args.overwrite:
        raise FileExistsError(f"{args.output} already exists; pass --overwrite to replace it")
    backend.import_tensorflow(args)
    from tpr_keras import evaluation
    from tpr_keras.models import TPTransformer
    from tpr_keras.models.task_models import trained_preset
    from tpr_keras.models.tp_transformer.tp_transformer_answerer import is_routed
    from tpr_keras.models.tp_transformer.vocabulary_mapped_decoder import (
        VocabularyMappedDecoder,
    )
    from tpr_keras.presets.preset_writer import write_preset

    routed = trained_preset(args.preset, "math")
    model = routed.build_model()
    if not is_routed(model):
        raise cli.UsageError(f"--preset {args.preset}: a {routed.class_name} preset, not a "
                             "routed one; it is already a preset of its own")
    names = ("default", *model.expert_names)
    if args.part not in names:
        raise cli.UsageError(f"--part {args.part}: not a part of {routed.name} (its parts: "
                             f"{', '.join(names)})")
    route = names.index(args.part)
    decoder = model.decoders()[route]
    if isinstance(decoder, VocabularyMappedDecoder):
        decoder = decoder.decoder
    part = TPTransformer.from_config(dict(decoder.get_config(), name="tp_transformer"))
    part.set_weights(decoder.get_weights())
    options = dict(routed.metadata["evaluation_options"])
    options["modules"] = part_modules(model, route, options["modules"])
    training = routed.metadata.get("training", {})
    record = training.get("parts", {}).get(args.part, {})
    part_of = {"preset": routed.name, "part": args.part,
               "weights_sha256": sha256_file(routed.weights_path),
               "part_weights_sha256": record.get("weights_sha256"),
               "weights_dtype": routed.metadata.get("weights_dtype", "float32"),
               "command": shareable_command(run_command()), "source": run_source()}
    templates = evaluation.preset_templates(routed)
    assets = {"vocab.txt": CharVocabulary(part.vocabulary).save}
    if templates is not None:
        assets[TEMPLATES_ASSET] = templates.save
    path = write_preset(
        part, args.output, task="math", model_name=routed.metadata.get("model_name", "math"),
        description=f"The {args.part} decoder of {routed.name}: "
                    f"{routed.metadata.get('description', '')}",
        headline=f"part {args.part} of {routed.name}, not evaluated alone (answers "
                 f"{', '.join(options['modules'])})",
        assets=assets, overwrite=args.overwrite,
        training={**record.get("training", {}), "part_of": part_of},
        evaluation_options=options)
    print(f"Preset: {path}: the {args.part} decoder of {routed.name} "
          f"({part.count_params():,} weights), answering {len(options['modules'])} module(s)")


if __name__ == "__main__":
    cli.run(command, main)
