"""The strategy-agnostic training loop and optimizers."""

from tpr_keras.training.loop import Trainer, TrainConfig, is_chief, sparse_classification  # noqa: F401
from tpr_keras.training.optimizers import NesterovAdam, get_optimizer  # noqa: F401
from tpr_keras.training.distribute import STRATEGIES, make_strategy  # noqa: F401
