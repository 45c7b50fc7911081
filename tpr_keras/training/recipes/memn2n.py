"""MemN2N training recipes: Sukhbaatar et al. (2015), §4.2, for each size of
:mod:`tpr_keras.models.memn2n.memn2n_sizes`."""

from types import MappingProxyType

#: §4.2: SGD at 0.01 halved every 25 epochs until 100 epochs, batch 32, gradient norm
#: clipped at 40. The authors sum the loss over the batch; the training loop averages
#: it, so the equivalent step is lr * 32 and clip 40 / 32 (exact for batch 32).
SINGLE_TASK_RECIPE = MappingProxyType({
    "optimizer": "sgd", "learning_rate": 0.01 * 32, "beta_1": 0.9, "beta_2": 0.999,
    "batch_size": 32, "clip_norm": 40.0 / 32, "warmup_steps": 0, "halve_lr_below": None,
    "decay_every_epochs": 25, "epochs": 100,
})
#: §4.2, all tasks trained jointly on 10k examples each (the data here): 20 epochs,
#: the rate halved every 5 (on 1k examples the paper uses 60 epochs, halved every 15).
JOINT_RECIPE = MappingProxyType(dict(SINGLE_TASK_RECIPE, decay_every_epochs=5, epochs=20))
#: ``{size: recipe}``.
RECIPES = MappingProxyType({"single_task": SINGLE_TASK_RECIPE, "all_tasks": JOINT_RECIPE})
