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

from absl import flags

from train import cli

FLAGS = flags.FLAGS
cli.define_preset_flags()
flags.DEFINE_string("data_dir", None, "Where the task's official files are (default: the "
                    "task's environment variable, the Keras cache, then download).")
flags.DEFINE_bool("download", True, "Download the official archive if no local copy is "
                  "found (bAbI, math).")
flags.DEFINE_bool("sample", False, "Evaluate only the recorded sample (the first N "
                  "questions of every test file) and compare with its recorded table.")
flags.DEFINE_float("tolerance", 0.05, "Largest difference, in points, that still agrees.")
flags.DEFINE_string("json", None, "Also write the measured and recorded tables here.")

HELP_GROUPS = [("Preset", ["preset", "sample", "tolerance"]),
               ("Data", ["data_dir", "download"]),
               ("Output", ["json", "list_presets", "debug", "tf_logs"])]


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


def main(argv):
    del argv
    preset = cli.load_flagged_preset()
    from tpr_keras.training import evaluation

    meta = preset.metadata
    key = "evaluation_sample" if FLAGS.sample else "evaluation"
    if key not in meta:
        raise ValueError(f"{preset.path}/metadata.json has no {key!r} table to check against.")
    recorded = meta[key]
    limit = recorded.get("limit") if FLAGS.sample else None
    started = time.time()
    model = preset.build_model()
    table = evaluation.evaluate_model(meta["task"], model, evaluation.preset_vocabulary(preset),
                                      FLAGS.data_dir, meta.get("evaluation_options", {}),
                                      limit=limit, download=FLAGS.download,
                                      templates=evaluation.preset_templates(preset))
    seconds = time.time() - started
    rows = evaluation.compare_tables(table, recorded["table"], FLAGS.tolerance)
    try:
        root, _ = evaluation.data_files(meta["task"], FLAGS.data_dir,
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
    print(format_comparison(rows, FLAGS.tolerance))
    bad = [r for r in rows if not r[3]]
    if FLAGS.json:
        with open(FLAGS.json, "w") as f:
            json.dump({"preset": preset.name, "sample": FLAGS.sample, "limit": limit,
                       "seconds": seconds, "measured": table, "recorded": recorded["table"],
                       "differences": [r[0] for r in bad]}, f, indent=1)
    if bad:
        print(f"\n{len(bad)} of {len(rows)} numbers differ from the recorded table by more "
              f"than {FLAGS.tolerance:g} points.")
        sys.exit(1)
    print(f"\nAll {len(rows)} numbers agree with the recorded table within "
          f"{FLAGS.tolerance:g} points.")


if __name__ == "__main__":
    cli.run(main, "python -m train.evaluate", __doc__, HELP_GROUPS)
