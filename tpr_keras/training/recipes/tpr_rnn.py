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
#: The training step of the authors' released code (github.com/ischlag/TPR-RNN,
#: ``tpr_rnn_graph.py``) where the port can take it: their ``NadamOptimizer`` (TF1 Adam
#: with ``use_nesterov=True``: ``optimizer="nesterov_adam"``, ε 1e-8) at lr 0.001, β
#: 0.9/0.999, with its power accumulators started from the random values the β
#: variables hold before they are assigned (``beta_power_start="glorot_uniform"``:
#: ``U(±√3)``, see :func:`~tpr_keras.training.optimizers.authors_nadam`); batch 32
#: (their ``train.py`` calls ``train(bs=32)``; the function's own default, 128, is unused);
#: global-norm clip 5; 51 steps at a tenth of the rate (their loop lowers the rate for
#: steps 0-49 and restores it from step 51); no halving (their loop halves the rate
#: once and restores it on the next step); trained jointly, every story truncated to its
#: last 70 statements, task 3's too (``joint_max_story_sentences``: their all-tasks
#: training file is read as one task; one task alone keeps the default 70, 130 for task
#: 3, as their code); batches not grouped by story
#: length (``bucket_width=0``); the pad word a trained embedding row that enters every
#: sentence and question sum (``pad_row="trained"``, the model's option). What it still
#: leaves different (their batch order, output classes, NaN updates): docs/authors_code.md.
AUTHORS_CODE_RECIPE = MappingProxyType(dict(
    ALL_TASKS_RECIPE, optimizer="nesterov_adam", epsilon=1e-8, batch_size=32,
    warmup_steps=51, halve_lr_below=None, beta_power_start="glorot_uniform",
    joint_max_story_sentences=70, bucket_width=0, pad_row="trained"))
