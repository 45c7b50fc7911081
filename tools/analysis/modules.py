"""``python -m tools.analysis.modules``: per-module accuracy of finished ``train.math`` runs
(TP-Transformer Figures 4/5 and Table 1), as tables and figures.

Figures mode, one run per model, side by side (Schlag et al. 2019, Appendix B)::

    python -m tools.analysis.modules --runs TP-Transformer=runs/math-all \\
        --runs Transformer=runs/math-all-transformer --out results/figures/modules

Seeds mode, several seeds per model (mean ± std and the verdict)::

    python -m tools.analysis.modules \\
        --seeds tp_transformer=runs/focus/tp_transformer-seed0,...-seed1,...-seed2 \\
        --seeds transformer=runs/focus/transformer-seed0,...-seed1,...-seed2 \\
        --out results/figures/seeds

What each mode computes and draws: :mod:`tpr_keras.analysis.modules`. This command lays
the tables out as Markdown (:mod:`tools.report.modules`) into ``modules.md`` or ``seeds.md``
and prints it, writes the numbers to ``modules.json`` or ``seeds.json``, and with ``--json
FILE`` also to FILE.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from serving.command_flags import Command
from tools.report.modules import compare_markdown, seeds_markdown
from tpr_keras.analysis import modules


def main(argv: Sequence[str] | None = None) -> int:
    command = Command("python -m tools.analysis.modules", __doc__.split("\n\n")[0])
    command.multi("runs", "LABEL=DIR: one train.math run per model, side by side (Figures "
                  "4/5); once per model")
    command.multi("seeds", "MODEL=DIR,DIR,...: two models, >= 2 seeds each: mean ± std and "
                  "the verdict; once per model")
    command.string("out", None, "folder for the tables and PNGs", required=True)
    command.string("json", None, "also write the numbers to this file")
    args = command.parse(argv)
    if bool(args.runs) == bool(args.seeds):
        command.error("give --runs or --seeds (one of them)")
    try:
        if args.runs:
            labels, tables, result = modules.run_figures(args.runs, args.out)
            table = compare_markdown(tables, labels)
        else:
            seeds, tables, result = modules.run_seeds(args.seeds, args.out)
            table = seeds_markdown(tables, seeds)
    except (ValueError, OSError) as error:
        command.error(str(error))
    name = "modules.json" if args.runs else "seeds.json"
    with open(os.path.join(args.out, name.replace(".json", ".md")), "w",
              encoding="utf-8") as f:
        f.write(table)
    for path in filter(None, (os.path.join(args.out, name), args.json)):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
