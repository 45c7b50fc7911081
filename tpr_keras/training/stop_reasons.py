"""Why a training run stopped: the reasons :attr:`Trainer.stop_reason` and ``results.json``
give, in words and in a few words.

Plain data in a module of its own (no Keras, no TensorFlow): the report and experiment
scripts that label results tables read it without importing a backend (through
:mod:`~tpr_keras.training.early_stopping`'s Keras callback base, ``python -m tools.report
--check results/entailment.md`` imported TensorFlow and took 12.6 s; 0.3 s without).
"""

#: Why a run stopped, as :attr:`Trainer.stop_reason` and ``results.json`` give it.
STOP_REASONS = {
    "epochs": "--epochs reached",
    "steps": "--steps reached",
    "target_error": "the target validation error reached",
    "early_stopping": "early stopping (no validation improvement within the patience)",
    "time_budget": "the time budget ran out (the same command resumes)",
    "callback": "a callback set model.stop_training",
}

#: The same reasons in a few words, for the cells of a results table.
STOP_LABELS = {
    "epochs": "epoch cap",
    "steps": "step cap",
    "target_error": "target error",
    "early_stopping": "patience",
    "time_budget": "time budget",
    "callback": "stopped by a callback",
}
