"""MemN2N presets: the sizes and training recipe of Sukhbaatar et al. (2015), §4."""

from tpr_keras.models.presets import Preset

#: §4.2: SGD at 0.01 halved every 25 epochs until 100 epochs, batch 32, gradient norm
#: clipped at 40. The authors sum the loss over the batch; the training loop averages
#: it, so the equivalent step is lr * 32 and clip 40 / 32 (exact for batch 32).
RECIPE = {
    "optimizer": "sgd", "learning_rate": 0.01 * 32, "beta_1": 0.9, "beta_2": 0.999,
    "batch_size": 32, "clip_norm": 40.0 / 32, "warmup_steps": 0, "halve_lr_below": None,
    "decay_every_epochs": 25, "epochs": 100,
}
#: §4.2, all tasks trained jointly on 10k examples each (the data here): 20 epochs,
#: the rate halved every 5 (on 1k examples the paper uses 60 epochs, halved every 15).
JOINT_RECIPE = dict(RECIPE, decay_every_epochs=5, epochs=20)

# §4.4: "joint training used an embedding dimension of d=50, while independent
# training used d=20". Everything else is the §4.1/§4.2 default.
PRESETS = {
    "single_task": Preset({"embedding_dim": 20}, RECIPE, "§4.4, independent training: d = 20."),
    "all_tasks": Preset({"embedding_dim": 50}, JOINT_RECIPE,
                        "§4.4, joint training: d = 50; §4.2's 10k joint schedule."),
}
