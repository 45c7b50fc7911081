"""TPR-RNN training recipes: Schlag & Schmidhuber (2018), Appendix A, for each size of
:mod:`tpr_keras.models.tpr_rnn.tpr_rnn_sizes`."""

from types import MappingProxyType

#: Appendix A, single task: Nadam (Dozat) with lr 0.008, β1 0.6, β2 0.4, batch 128;
#: gradients clipped to global norm 5; warm-up at a tenth of the rate for 50 steps;
#: the rate halved once when the validation loss falls below 0.1. The paper gives no
#: epoch count: training runs until early stopping, capped at 200 epochs.
SINGLE_TASK_RECIPE = MappingProxyType({
    "optimizer": "nadam", "learning_rate": 0.008, "beta_1": 0.6, "beta_2": 0.4,
    "batch_size": 128, "clip_norm": 5.0, "warmup_steps": 50, "halve_lr_below": 0.1,
    "decay_every_epochs": None, "epochs": 200,
})
#: Appendix A, all tasks jointly: lr 0.001 with the default betas and batch 32.
ALL_TASKS_RECIPE = MappingProxyType(dict(SINGLE_TASK_RECIPE, learning_rate=0.001,
                                         beta_1=0.9, beta_2=0.999, batch_size=32))
#: ``{size: recipe}``: the one-task size trains with the one-task recipe, every
#: all-tasks size with the all-tasks one.
RECIPES = MappingProxyType({
    "single_task": SINGLE_TASK_RECIPE, "all_tasks": ALL_TASKS_RECIPE,
    "all_tasks_code": ALL_TASKS_RECIPE, "all_tasks_authors": ALL_TASKS_RECIPE,
})
