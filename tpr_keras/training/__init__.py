"""The strategy-agnostic training loop and optimizers.

The names are imported on first use, so that importing this package (what every
``train.*`` command does at start-up) does not import TensorFlow: ``--help`` answers
without it. The command-line side (flags, the runner, the task recipes) is the ``train``
package; nothing here parses flags or imports absl.
"""

from tpr_keras.lazy import lazy_getattr

_EXPORTS = {
    "Trainer": "tensorflow_trainer", "TrainConfig": "config", "EpochLoop": "trainer",
    "JaxTrainer": "jax_trainer", "make_trainer": "trainers", "binary_classification": "losses",
    "is_chief": "tensorflow_trainer", "sparse_classification": "losses",
    "sequence_cross_entropy": "losses",
    "TrainerState": "trainer_state", "LearningRatePolicy": "lr_policy",
    "EarlyStopping": "early_stopping", "STOP_REASONS": "early_stopping",
    "Callback": "callback_base", "TimeBudget": "callbacks", "LinearStart": "callbacks",
    "NanReinit": "callbacks", "StepCheckpoints": "callbacks", "EpochMetric": "epoch_metrics",
    "CheckpointIO": "checkpoints", "finished_run": "checkpoints",
    "save_run": "tpr_keras.run_outputs", "save_model": "tpr_keras.run_outputs",
    "write_results": "tpr_keras.run_outputs",
    "NesterovAdam": "optimizers", "get_optimizer": "optimizers",
    "STRATEGIES": "distribute", "make_strategy": "distribute",
    "recipe": "recipes",
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
