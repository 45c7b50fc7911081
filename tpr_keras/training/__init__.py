"""The backend-neutral training loop and what it is made of: the base
:class:`~tpr_keras.training.trainer.Trainer` (the epochs), its configuration, callbacks,
checkpoints, learning-rate policy, optimizers and the task recipes.

The names are imported on first use, so that importing this package (what every
``train.*`` command does at start-up) does not import TensorFlow: ``--help`` answers
without it. The command-line side (flags, the runner, the task recipes) is the ``train``
package; nothing here parses flags or imports absl.

Kept names, from the modules that now hold them: ``Trainer`` is the TensorFlow trainer
(:class:`~tpr_keras.backend.tensorflow.trainer.TensorFlowTrainer`), ``JaxTrainer`` the JAX
one (:class:`~tpr_keras.backend.jax.trainer.JAXTrainer`), ``EpochLoop`` the base
``Trainer``, ``make_trainer`` and ``is_chief`` come from :mod:`tpr_keras.backend`, and
``save_run``, ``save_model``, ``write_results`` from :mod:`tpr_keras.run_outputs`.
"""

from tpr_keras.lazy import lazy_getattr

_EXPORTS = {
    "TrainConfig": "config", "EpochLoop": "trainer:Trainer",
    "Trainer": "tpr_keras.backend.tensorflow.trainer:TensorFlowTrainer",
    "JaxTrainer": "tpr_keras.backend.jax.trainer:JAXTrainer",
    "is_chief": "tpr_keras.backend.tensorflow.trainer",
    "make_trainer": "tpr_keras.backend.backend_trainer",
    "binary_classification": "losses", "sparse_classification": "losses",
    "sequence_cross_entropy": "losses",
    "TrainerState": "trainer_state", "LearningRatePolicy": "lr_policy",
    "EarlyStopping": "early_stopping", "STOP_REASONS": "stop_reasons",
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
