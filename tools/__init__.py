"""Report and table generators and the checks of exported or served models, run from the
repository root as ``python -m tools.<name>``; ``python -m tools.report`` regenerates the
tables of ``results/*.md``, the README and ``docs/``, and ``python -m tools.readme_outputs``
runs the README's commands and writes what they print into it. Not installed (like ``bench/`` and
``experiments/``)."""

#: Scripts that were ``bench/NAME.py`` before bench/ kept only the benchmarks: NAME -> the
#: package that has it now (commands recorded in results/ JSON name the old place).
MOVED_FROM_BENCH = {name: package for package, names in (
    ("tools", "report report_blocks babi_table babi_table1 babi_serving_check "
              "entailment_serving_check math_serving_check preset_serving_check "
              "math_savedmodel_accuracy"),
    ("experiments", "babi_paper_runs entailment_table1 train_presets "
                    "entailment_bidaf_diagnosis math_heldout_sample"),
    ("tests.serving", "fuzz serving_fuzz")) for name in names.split()}
