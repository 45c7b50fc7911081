"""``python -m tools.analysis.systematic_data``: the systematic-generalisation data of TPR-RNN
§7 (Figure 5), built from bAbI files.

    python -m tools.analysis.systematic_data --data_dir ../shared/data/babi --out runs/sg-data

writes ``OUT/en-10k/`` (the training files with the new names' stories inserted),
``OUT/systematic/<name>/`` (one test set per new name and task) and ``OUT/manifest.json``;
what is generated and how: :mod:`tpr_keras.data.babi.systematic`.
"""

from __future__ import annotations

from collections.abc import Sequence

from serving.command_flags import Command
from tpr_keras.data.babi import find_babi_dir, systematic


def main(argv: Sequence[str] | None = None) -> int:
    command = Command("python -m tools.analysis.systematic_data", __doc__.split("\n\n")[0])
    command.string("data_dir", None, "where bAbI's en-10k is (default: as train.babi finds it)")
    command.string("out", None, "output folder", required=True)
    command.integer("seed", 0)
    command.integer("pairs", systematic.PAIRS, "generated pairs per new name and task")
    args = command.parse(argv)
    manifest = systematic.build(find_babi_dir(args.data_dir), args.out, args.seed,
                                pairs=args.pairs)
    for name, tasks in manifest["trained_on"].items():
        print(f"{name:7s} trains on tasks {tasks}")
    print(f"Wrote {args.out}/en-10k, {args.out}/systematic/<name>/ and manifest.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
