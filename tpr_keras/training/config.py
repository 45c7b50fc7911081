"""The hyper-parameters of a training run (every backend's trainer takes them)."""

import dataclasses

from tpr_keras.training.lr_policy import check_cooldown


@dataclasses.dataclass
class TrainConfig:
    """Hyper-parameters of :class:`Trainer` (defaults: TPR-RNN Appendix A).

    Attributes:
        learning_rate: base learning rate.
        epochs: maximum number of epochs.
        max_steps: optional cap on optimizer steps (overrides ``epochs``).
        max_train_seconds: optional time budget of one ``fit`` call: training
            stops at the first step past it (mid-epoch: that partial epoch is
            validated and checkpointed like one cut by ``max_steps``), and
            ``fit`` returns with the best weights. A later ``fit`` (the same
            command again) resumes with a fresh budget.
        clip_norm: global-norm gradient clipping; ``None`` disables it.
        loss_reduction: ``"mean"``: the step follows the gradient of the batch's mean
            loss; ``"sum"``: of its summed loss (MemN2N §4.2: "cost is not averaged
            over a batch"). The logged loss is the mean either way.
        clip_per_matrix: divide each weight matrix's gradient by a scalar so that its
            norm is at most this (MemN2N §4.2: 40; after ``loss_reduction``, before the
            optimizer). A model's ``weight_matrices()``, where it has one, says which
            variables form one matrix; ``None`` disables it.
        matrix_norm: the norm of ``clip_per_matrix``: ``"frobenius"`` or
            ``"spectral"`` (the MemN2N authors' MATLAB ``norm``), see
            :func:`~tpr_keras.training.clipping.matrix_norm`.
        warmup_steps: steps trained at ``learning_rate * warmup_factor``.
        warmup_factor: learning-rate factor during warm-up.
        reinit_on_nan: re-initialise everything when warm-up hits a NaN.
        max_reinits: give up after this many re-initialisations.
        halve_lr_below: halve the learning rate once when the validation loss
            falls below this value; ``None`` disables it.
        decay_every_epochs: multiply the learning rate by ``decay_factor``
            every this many epochs (MemN2N: halve every 25; TPRU: /10 every
            30); ``None`` disables it.
        decay_factor: the factor of that step decay.
        decay_offset_epochs: epochs added to the count of that decay: 1 halves at the
            start of epochs N, 2N, ... (1-based), as the MemN2N authors' MATLAB loop
            does; 0 after N, 2N, ... whole epochs.
        schedule_start_epoch: epochs trained at the base rate before the decay starts
            counting; the step decay restarts there (MemN2N's fixed-length linear start,
            see :class:`~tpr_keras.training.lr_policy.LearningRatePolicy`).
        cooldown_steps: over the last this many of ``max_steps`` steps the rate falls
            linearly to zero (a cool-down after a constant rate, see
            :class:`~tpr_keras.training.lr_policy.LearningRatePolicy`); it changes at
            the start of every compiled call (``steps_per_execution``). ``None``
            disables it.
        patience: early stopping after this many validations without
            improvement; ``None`` trains for all epochs.
        min_delta_loss: at an equal validation error, the validation loss must
            fall by more than this (absolute, in nats per example) to count as
            an improvement; a lower error always counts. With 0 errors the
            error cannot improve, and loss changes of 1e-4 are noise that used
            to reset the patience counter for dozens of epochs.
        patience_at_zero: once the best validation error is 0 %, stop after
            this many validations without improvement (``None``: ``patience``
            applies throughout).
        target_error: also stop once the validation error (%) is at or
            below this value.
        keep_best: at the end, restore the weights of the best validation; False
            keeps the last weights (the MemN2N authors test their final model).
        checkpoint_every_steps: also checkpoint inside an epoch this often.
        log_every_steps: TensorBoard logging interval.
        verbose: 0 silent, 1 progress bar, 2 plain lines (log files): one per
            epoch, and one every ``progress_seconds`` inside an epoch.
        progress_seconds: with ``verbose=2``, the interval of in-epoch lines.
        loss_scale: dynamic loss scaling (for ``mixed_float16``): the summed loss is
            multiplied by a scale before differentiation and the gradients divided by
            it, inside the compiled step, which also updates the scale (in the
            checkpointed state, so a resumed run goes on with it): a step whose scaled
            gradient overflows is skipped and halves the scale
            (it is not a NaN: no re-initialisation), and every
            ``loss_scale_period`` applied steps double it; a scale halved below 1
            raises ``FloatingPointError`` (the model diverged). None (default): on exactly
            when Keras' global dtype policy is ``mixed_float16`` when the trainer is
            built.
        loss_scale_period: applied steps between doublings of the loss scale.
        steps_per_execution: training steps per compiled call (Keras' option of that
            name): the call reads its batches itself, so the loop's Python work and
            host transfers happen once per call. Callbacks' ``on_train_batch_end`` runs
            once per call, with the index of its last batch (as in ``model.fit``); a
            call ends early at the end of the warm-up, at ``max_steps`` and at every
            ``checkpoint_every_steps`` multiple, and the warm-up runs one step per call
            when ``reinit_on_nan`` is on, so those stay exact, while the time budget and
            other callbacks' stops act at the end of the call. The steps and their
            numbers are those of one step per call.
        jit_compile: compile the training step with XLA, which fuses its many
            small ops. Small recurrent models on a CPU, whose steps are
            dominated by per-op overhead, gain the most (measured in
            ``results/entailment.md``); each new batch shape is compiled once,
            so it pays off for long runs with few distinct shapes.
    """

    learning_rate: float = 0.008
    epochs: int = 100
    max_steps: int | None = None
    max_train_seconds: float | None = None
    clip_norm: float | None = 5.0
    loss_reduction: str = "mean"
    clip_per_matrix: float | None = None
    matrix_norm: str = "frobenius"
    warmup_steps: int = 50
    warmup_factor: float = 0.1
    reinit_on_nan: bool = True
    max_reinits: int = 10
    halve_lr_below: float | None = 0.1
    decay_every_epochs: int | None = None
    decay_factor: float = 0.5
    decay_offset_epochs: int = 0
    schedule_start_epoch: int = 0
    cooldown_steps: int | None = None
    patience: int | None = 20
    min_delta_loss: float = 1e-3
    patience_at_zero: int | None = None
    target_error: float | None = None
    keep_best: bool = True
    checkpoint_every_steps: int | None = None
    log_every_steps: int = 10
    verbose: int = 1
    progress_seconds: float = 60.0
    jit_compile: bool = False
    loss_scale: bool | None = None
    loss_scale_period: int = 2000
    steps_per_execution: int = 1

    def __post_init__(self):
        if self.loss_reduction not in ("mean", "sum"):
            raise ValueError(f"loss_reduction must be 'mean' or 'sum'; got "
                             f"{self.loss_reduction!r}.")
        check_cooldown(self.cooldown_steps, self.max_steps)
