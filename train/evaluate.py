"""Re-check a trained preset: score it again on the official test files and compare with
its recorded table: ``python -m train.evaluate --preset tpr_rnn_babi_all_tasks``.

Loads the preset (its checksums verified), recomputes its evaluation table on the official
test files (bAbI: test error per task; entailment: accuracy per test set; math: greedy
exact match per module), prints it beside the table recorded in the preset's
metadata.json, and exits 1 if any number differs by more than ``--tolerance`` points.
``--sample`` checks the first questions of every test file against the sample table
the preset also records (what CI runs).
"""

import json
import sys
import time

from train import cli

EXAMPLE = "python -m train.evaluate --preset tpr_rnn_babi_all_tasks --sample"


def format_comparison(rows, tolerance):
    """The side-by-side table ``train.evaluate`` prints."""
    width = max([len(r[0]) for r in rows] + [3])
    out = [f"{'':{width}s} | measured | recorded |  diff", "-" * (width + 32)]

    def number(value):
        return f"{value:8.2f}" if value is not None else "       –"

    for row, measured, recorded, ok in rows:
        diff = (f"{measured - recorded:+6.2f}" if measured is not None and recorded is not None
                else "     –")
        out.append(f"{row:{width}s} | {number(measured)} | {number(recorded)} | {diff}"
                   + ("" if ok else f"   <- differs by more than {tolerance:g}"))
    return "\n".join(out)


def command():
    """``python -m train.evaluate``'s flags (a fresh :class:`~train.cli.TrainCommand`)."""
    command = cli.TrainCommand("python -m train.evaluate", __doc__, EXAMPLE)
    command.group("Preset and comparison")
    cli.define_preset_flag(command)
    command.boolean("sample", False, "Evaluate only the recorded sample (the first N "
                    "questions of every test file) and compare with its recorded table.")
    command.float("tolerance", 0.05, "Largest difference, in points, that still agrees.")
    command.group("Data")
    command.string("data_dir", None, "Where the task's official files are (default: the "
                   "task's environment variable, the Keras cache, then download).")
    command.boolean("download", True, "Download the official archive if no local copy is "
                    "found (bAbI, math).")
    command.group("Outputs")
    command.string("json", None, "Also write the measured and recorded tables here.")
    cli.define_output_flags(command)
    return command


def main(args):
    preset = cli.load_flagged_preset(args)
    from tpr_keras.models.task_models import backbone_class
    from tpr_keras import evaluation

    meta = preset.metadata
    key = "evaluation_sample" if args.sample else "evaluation"
    if key not in meta:
        raise ValueError(f"{preset.path}/metadata.json has no {key!r} table to check against.")
    recorded = meta[key]
    limit = recorded.get("limit") if args.sample else None
    started = time.time()
    model = preset.build_model(backbone_class(preset))
    table = evaluation.evaluate_model(meta["task"], model, evaluation.preset_vocabulary(preset),
                                      args.data_dir, meta.get("evaluation_options", {}),
                                      limit=limit, download=args.download,
                                      templates=evaluation.preset_templates(preset))
    seconds = time.time() - started
    rows = evaluation.compare_tables(table, recorded["table"], args.tolerance)
    try:
        root, _ = evaluation.data_files(meta["task"], args.data_dir,
                                        meta.get("evaluation_options", {}))
        changed = evaluation.changed_data_files(meta["data"]["files_sha256"], root)
    except (FileNotFoundError, KeyError):  # no training files here, or no data recorded
        changed = []
    if changed:
        print(f"warning: {len(changed)} data file(s) under {root} differ from the ones the "
              f"preset was evaluated on ({', '.join(changed[:3])}"
              + (", ..." if len(changed) > 3 else "") + "): a difference below may be the "
              "data's, not the model's.")
    what = f"the first {limit} questions of every test file" if limit else "the full test sets"
    print(f"Preset {preset.name} ({preset.class_name}, {meta['task']}): {what}, "
          f"evaluated in {seconds:.1f} s.")
    print(format_comparison(rows, args.tolerance))
    bad = [r for r in rows if not r[3]]
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"preset": preset.name, "sample": args.sample, "limit": limit,
                       "seconds": seconds, "measured": table, "recorded": recorded["table"],
                       "differences": [r[0] for r in bad]}, f, indent=1)
    if bad:
        print(f"\n{len(bad)} of {len(rows)} numbers differ from the recorded table by more "
              f"than {args.tolerance:g} points.")
        sys.exit(1)
    print(f"\nAll {len(rows)} numbers agree with the recorded table within "
          f"{args.tolerance:g} points.")


if __name__ == "__main__":
    cli.run(command, main)
