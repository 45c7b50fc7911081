"""What a trained model scores on its task: the papers' evaluation tables and what checks
them.

* :func:`evaluate_model`: the table of a task (:func:`babi_table`: test error % per task,
  the mean, failed tasks (> 5 %); :func:`entailment_table`: accuracy % per split;
  :func:`math_table`: greedy exact match % per module, interpolate and extrapolate), with
  the rules the ``train.*`` commands apply at the end of a run, so that a preset's
  recorded table and ``python -m train.evaluate`` agree; :func:`evaluate_tables`: the
  same for several ``limit``\ s (a preset's full and sample tables) in one pass of tracing;
* :func:`compare_tables`: two tables row by row, within a tolerance;
* :func:`data_files`, :func:`files_sha256`, :func:`changed_data_files`: the data a preset
  was evaluated on and whether it still has the same bytes;
* :func:`preset_vocabulary`, :func:`preset_templates`: what a preset's model reads;
* :mod:`~tpr_keras.evaluation.sample_requests`: a preset's test questions as the raw-text
  requests a served model answers.

``limit`` keeps the first N examples of every file (a sample: what CI checks). The names
are imported on first use: the tables import TensorFlow, the sample requests do not.
"""

from tpr_keras.lazy import lazy_getattr

_EXPORTS = {
    "evaluate_model": "tables", "evaluate_tables": "tables", "babi_table": "babi",
    "FAILED_ABOVE": "babi", "SERVED_MAX_STORY_SENTENCES": "babi",
    "entailment_table": "entailment", "ENTAILMENT_SPLITS": "entailment",
    "math_table": "mathematics", "math_tables": "mathematics",
    "greedy_scorer": "mathematics", "greedy_accuracy": "mathematics",
    "routed_accuracy": "mathematics", "table_numbers": "table_comparison",
    "compare_tables": "table_comparison", "data_files": "data_checksums",
    "changed_data_files": "data_checksums", "files_sha256": "data_checksums",
    "TASK_OF_CLASS": "preset_assets", "preset_vocabulary": "preset_assets",
    "preset_templates": "preset_assets",
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
