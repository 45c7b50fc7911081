"""The strategy-agnostic training loop and optimizers."""

from tpr_keras.training.loop import (  # noqa: F401
    Trainer,
    TrainConfig,
    binary_classification,
    is_chief,
    sparse_classification,
)
from tpr_keras.training.outputs import save_run  # noqa: F401
from tpr_keras.training.optimizers import NesterovAdam, get_optimizer  # noqa: F401
from tpr_keras.training.distribute import STRATEGIES, make_strategy  # noqa: F401
