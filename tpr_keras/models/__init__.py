"""Full models of tpr-keras (importing this module registers them for load_model), and the
task models that pair a trained one with its NumPy preprocessor, strings in and answers
out (:mod:`tpr_keras.models.task_models`): ``BabiAnswerer``, ``EntailmentClassifier``,
``MathAnswerer``. Nothing here imports TensorFlow."""

from tpr_keras.models.babi import BabiAnswerer, BabiPreprocessor  # noqa: F401
from tpr_keras.models.entailment import BiDAFEntailmentModel, PlainEntailmentModel  # noqa: F401
from tpr_keras.models.entailment import EntailmentClassifier, EntailmentPreprocessor  # noqa: F401
from tpr_keras.models.memn2n import PRESETS as MEMN2N_PRESETS  # noqa: F401
from tpr_keras.models.memn2n import MemN2N  # noqa: F401
from tpr_keras.models.tp_transformer import PRESETS as TP_TRANSFORMER_PRESETS  # noqa: F401
from tpr_keras.models.tp_transformer import MathAnswerer, MathPreprocessor  # noqa: F401
from tpr_keras.models.tp_transformer import RECIPES as TP_TRANSFORMER_RECIPES  # noqa: F401
from tpr_keras.models.tp_transformer import TPTransformer, sequence_compute_fn  # noqa: F401
from tpr_keras.models.tp_transformer import resolve_preset  # noqa: F401
from tpr_keras.models.tpr_rnn import PRESETS as TPR_RNN_PRESETS  # noqa: F401
from tpr_keras.models.tpr_rnn import TPRRNN  # noqa: F401
