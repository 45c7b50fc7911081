"""Full models of tpr-keras, one package per family, and the task models that pair a
trained one with its NumPy preprocessor, strings in and answers out
(:mod:`tpr_keras.models.task_models`): ``BabiAnswerer``, ``EntailmentClassifier``,
``MathAnswerer``. Nothing here imports TensorFlow.

The names below are loaded on first use (PEP 562): ``from tpr_keras.models import TPRRNN``
imports the TPR-RNN family only. To register every model class for
``keras.saving.load_model``, import :mod:`tpr_keras.models.all_families`.

Example:
>>> from tpr_keras.models import TPRRNN
>>> model = TPRRNN.from_paper_size("single_task", vocabulary_size=40)  # doctest: +SKIP
"""

from tpr_keras.lazy import lazy_getattr

_EXPORTS = {
    # The task models' base: TaskModel.from_preset builds the one of a preset's task.
    "TaskModel": "task_models",
    # bAbI: TPR-RNN, MemN2N and what they share.
    "BabiAnswerer": "babi",
    "BabiPreprocessor": "babi",
    "TPRRNN": "tpr_rnn",
    "TPR_RNN_PAPER_SIZES": "tpr_rnn:PAPER_SIZES",
    "MemN2N": "memn2n",
    "MEMN2N_PAPER_SIZES": "memn2n:PAPER_SIZES",
    # Entailment.
    "BiDAFEntailmentModel": "entailment",
    "PlainEntailmentModel": "entailment",
    "EntailmentClassifier": "entailment",
    "EntailmentPreprocessor": "entailment",
    # Mathematics: the TP-Transformer.
    "TPTransformer": "tp_transformer",
    "RoutedTPTransformer": "tp_transformer",
    "VocabularyMappedDecoder": "tp_transformer",
    "MathAnswerer": "tp_transformer",
    "MathPreprocessor": "tp_transformer",
    "TP_TRANSFORMER_PAPER_SIZES": "tp_transformer:PAPER_SIZES",
    "sequence_compute_fn": "tp_transformer",
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
