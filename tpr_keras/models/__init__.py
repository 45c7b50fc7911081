"""Full models of tpr-keras."""

from tpr_keras.models.tpr_rnn import PRESETS as TPR_RNN_PRESETS  # noqa: F401
from tpr_keras.models.tpr_rnn import TPRRNN  # noqa: F401
from tpr_keras.models.entailment import BiDAFEntailmentModel, PlainEntailmentModel  # noqa: F401
