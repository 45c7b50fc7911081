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

#: The authors' joint protocol (MemN2N-babi-matlab ``config_babi_joint.m``,
#: ``train_linear_start.m``, ``train.m``) on §4.2's 10k joint schedule: a linear start of a
#: fixed 30 epochs at 0.005 without decay, then the schedule again from its epoch 1 at
#: 0.005 (their config overwrites the main phase's 0.01), halved at the start of every
#: 5th epoch (MATLAB: ``mod(ep, 5) == 0``) for 20 epochs (§4.2, 10k joint; their 1k config:
#: 60, every 15). Loss summed over the batch of 32 (``size_average = false``), each weight
#: matrix's gradient clipped at norm 40 with MATLAB's ``norm`` (spectral), only full
#: batches, no bucketing (uniform batches), stories cut to the 50 sentences the memory
#: holds, no early stopping: the final weights are tested. ``train_error``: the run also
#: reports its error on the training split, by which §4.2 picks the best of 10 runs.
JOINT_PAPER_RECIPE = dict(
    RECIPE, protocol="authors_joint", learning_rate=0.005, clip_norm=40.0,
    loss_reduction="sum", matrix_norm="spectral", linear_start_epochs=30,
    linear_start_lr_factor=1.0, decay_every_epochs=5, decay_offset_epochs=1, epochs=50,
    bucket_width=0, drop_remainder=True, max_story_sentences=50, keep_best=False,
    train_error=True)

# §4.4: "joint training used an embedding dimension of d=50, while independent
# training used d=20". Everything else is the §4.1/§4.2 default.
PRESETS = {
    "single_task": Preset({"embedding_dim": 20}, RECIPE, "§4.4, independent training: d = 20."),
    "all_tasks": Preset({"embedding_dim": 50}, JOINT_RECIPE,
                        "§4.4, joint training: d = 50; §4.2's 10k joint schedule."),
    # The authors' code as it ran: their coded PE, empty memory slots in the softmax.
    "joint_paper": Preset({"embedding_dim": 50, "sentence_encoding": "position_code",
                           "mask_empty_memories": False}, JOINT_PAPER_RECIPE,
                          "§4.4 joint, d = 50, with the authors' MATLAB joint protocol "
                          "(fixed 30-epoch linear start, schedule restart, summed loss, "
                          "per-matrix clipping at 40)."),
}
