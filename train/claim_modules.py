"""Record which modules a math preset claims: ``python -m train.claim_modules``.

    python -m train.claim_modules --preset tpr_keras/presets/tp_transformer_math_routed \\
        --heldout results/math/heldout/tp_transformer_math_routed.json --threshold 90

``--heldout`` is the JSON ``python -m tools.math_savedmodel_accuracy EXPORT SAMPLE/interpolate
--json FILE`` writes for the preset's export on a fresh sample of DeepMind's generator that
chose nothing (exact match % per module). The modules scoring at least ``--threshold`` are
the preset's claims: the preset's ``metadata.json`` gets a ``claims`` section
(:mod:`tpr_keras.presets.module_claims`), the listing (``--list_presets``) shows it, and
its export (``python -m train.export``) serves them: per answer a ``claimed`` flag, and a
``coverage`` signature whose outputs are the claimed modules' scores
(``python -m serving.client --coverage``). The model's files are not touched.
"""

import json
import os

from tpr_keras.data.mathematics.templates import (
    TEMPLATES_ASSET,
    ModuleTemplates,
    templates_asset,
)
from tpr_keras.presets.module_claims import describe_claims, module_claims
from tpr_keras.presets.preset_files import load_preset
from tpr_keras.presets.preset_writer import add_sections
from train import cli
from train.errors import UsageError

EXAMPLE = ("python -m train.claim_modules --preset tpr_keras/presets/tp_transformer_math_routed "
           "--heldout results/math/heldout/tp_transformer_math_routed.json")


def command():
    """``python -m train.claim_modules``'s flags (a fresh :class:`~train.cli.TrainCommand`)."""
    command = cli.TrainCommand("python -m train.claim_modules", __doc__, EXAMPLE)
    command.group("What to claim")
    cli.define_preset_flag(command)
    command.string("heldout", None, "tools.math_savedmodel_accuracy's JSON of the preset's "
                   "export on a fresh generator sample (exact match % per module).",
                   required=True)
    command.float("threshold", 90.0, "Exact match % a module needs to be claimed.")
    cli.define_output_flags(command)
    return command


def main(args):
    if not args.preset:
        raise UsageError("--preset is required (--list_presets names them)")
    preset = load_preset(args.preset)
    if preset.metadata.get("task") != "math":
        raise UsageError(f"{args.preset}: a {preset.metadata.get('task')} preset; only "
                             "math presets claim modules")
    asset = templates_asset(preset.metadata.get("assets", []))
    if asset is None:
        raise UsageError(f"{args.preset}: no assets/{TEMPLATES_ASSET}: a preset that "
                             "cannot tell its modules' questions apart claims none")
    trained = ModuleTemplates.load(preset.asset_path(asset)).modules
    try:
        with open(args.heldout, encoding="utf-8") as f:
            heldout = json.load(f)
    except (OSError, ValueError) as error:
        raise UsageError(f"--heldout {args.heldout}: {error}") from None
    try:
        claims = module_claims(heldout, args.threshold, os.path.relpath(args.heldout),
                               trained)
    except ValueError as error:
        raise UsageError(f"--heldout {args.heldout}: {error}") from None
    record = add_sections(preset.path, claims=claims)
    print(f"{preset.path}: {describe_claims(record)}")


if __name__ == "__main__":
    cli.run(command, main)
