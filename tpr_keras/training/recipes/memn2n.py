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
#: The authors' joint protocol (MemN2N-babi-matlab ``config_babi_joint.m``,
#: ``train_linear_start.m``, ``train.m``) on §4.2's 10k joint schedule: a linear start of a
#: fixed 30 epochs at 0.005 without decay, then the schedule again from its epoch 1 at
#: 0.005 (their config overwrites the main phase's 0.01), halved at the start of every
#: 5th epoch (MATLAB: ``mod(ep, 5) == 0``) for 20 epochs (§4.2, 10k joint; their 1k config:
#: 60, every 15). Loss summed over the batch of 32 (``size_average = false``), each weight
#: matrix's gradient clipped at norm 40 with MATLAB's ``norm`` (spectral), only full
#: batches, no bucketing (uniform batches), stories cut to the 50 sentences the memory
#: holds, ``. ? !`` dropped from the text as their parser (``parseBabiTask.m``) strips
#: each word's final ``.`` or ``?`` (``keep_sentence_ends``: False), no early stopping
#: (``early_stopping``: False, whatever ``--patience`` says): the final weights are tested. ``train_error``: the run also reports its error on the
#: training split, by which §4.2 picks the best of 10 runs.
JOINT_PAPER_RECIPE = MappingProxyType(dict(
    SINGLE_TASK_RECIPE, protocol="authors_joint", learning_rate=0.005, clip_norm=40.0,
    loss_reduction="sum", matrix_norm="spectral", linear_start_epochs=30,
    linear_start_lr_factor=1.0, decay_every_epochs=5, decay_offset_epochs=1, epochs=50,
    bucket_width=0, drop_remainder=True, max_story_sentences=50, keep_sentence_ends=False,
    keep_best=False, early_stopping=False, train_error=True))
#: The training step of the authors' released code (MemN2N-babi-matlab: ``train.m``,
#: ``train_linear_start.m``, ``nn/Weight.m``, ``build_model.m``), for any size: the
#: ``joint_paper`` protocol (their SGD on the batch-summed loss, each lookup table's
#: gradient clipped at spectral norm 40, linear start at 0.005 for a fixed 30 epochs, full
#: uniform batches of 32, their parser's text) with the model built as their code builds
#: it: their coded position encoding (``sentence_encoding="position_code"``), empty slots
#: in the softmax (``mask_empty_memories=False``), the nil word's gradient in the
#: clipping norm (``pad_gradient=True``) and an answer softmax over the words and the
#: time words (``answer_time_words=True``). What it still leaves different (their
#: sampling with replacement, their ``min(50, longest story)`` memory slots, ...):
#: docs/authors_code.md.
AUTHORS_CODE_RECIPE = MappingProxyType(dict(
    JOINT_PAPER_RECIPE, sentence_encoding="position_code", mask_empty_memories=False,
    pad_gradient=True, answer_time_words=True))
#: ``{size: recipe}``.
RECIPES = MappingProxyType({"single_task": SINGLE_TASK_RECIPE, "all_tasks": JOINT_RECIPE,
                            "joint_paper": JOINT_PAPER_RECIPE})
