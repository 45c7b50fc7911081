"""What :class:`~tpr_keras.training.trainer.Trainer` keeps and asks between steps:
the per-step counters (mirrored in Python during an epoch), the time counters, the learning
rate's state, evaluation, re-initialisation, checkpoints and the step benchmark. Backend-free;
a trainer supplies the hooks named in :class:`~tpr_keras.training.trainer.Trainer`."""

import time

import keras
import numpy as np

from tpr_keras.training.early_stopping import EarlyStopping
from tpr_keras.training.lr_policy import LearningRatePolicy


class LoopState:
    """The state half of :class:`~tpr_keras.training.trainer.Trainer` (a mixin)."""

    def reinitialize(self):
        """Fresh weights for the model and a zeroed optimizer state."""
        fresh = self.model_fn()
        for variable, value in zip(self.model.weights, fresh.weights):
            variable.assign(value)
        for variable in self.optimizer.variables:
            if "learning_rate" not in variable.path:
                variable.assign(keras.ops.zeros(variable.shape, variable.dtype))
        self.state.global_step.assign(0)
        if self._counters is not None:
            self._counters["global_step"] = 0
        self.reinits += 1

    def benchmark_train_step(self, dataset, seconds=10.0, batches=40, warmup=3):
        """Examples/s of the compiled training step alone, on cached batches.

        Takes up to ``batches`` batches of ``dataset`` into memory, runs
        ``warmup`` steps (tracing, if the step is new), then cycles through
        them for ``seconds``: the rate :meth:`fit` would reach with a free
        input pipeline and no loop overhead. Model, optimizer and learning
        rate, and the loss scale the step updates, are restored afterwards, so it can
        run before, during or after training.
        """
        cached = self._cache_batches(dataset, batches)
        if not cached:
            raise ValueError("benchmark_train_step needs a non-empty dataset")
        variables = self.model.variables + self.optimizer.variables
        saved = [keras.ops.convert_to_numpy(v) for v in variables]
        scaling = [(getattr(self.state, name), self.state.value(name))
                   for name in ("loss_scale", "loss_scale_good_steps")]
        try:
            for batch in cached[:warmup]:
                self._run_step(batch)
            examples, i = 0, 0
            start = time.perf_counter()
            while time.perf_counter() - start < seconds:
                examples += int(self._run_step(cached[i % len(cached)])[4])
                i += 1
            return examples / (time.perf_counter() - start)
        finally:
            self._after_benchmark()
            for variable, value in zip(variables, saved):
                variable.assign(value)
            for variable, value in scaling:
                variable.assign(value)

    def _after_benchmark(self):
        """Called before :meth:`benchmark_train_step` puts the saved values back."""

    def matrix_clipping(self):
        """``grads -> grads`` clipped per weight matrix as ``config`` asks
        (``clip_per_matrix``, ``matrix_norm``; the model's ``weight_matrices()`` group
        variables into matrices), or None."""
        from tpr_keras.training.clipping import clip_per_matrix, variable_groups

        cfg = self.config
        if not cfg.clip_per_matrix:
            return None
        matrices = getattr(self.model, "weight_matrices", None)
        groups = variable_groups(self.model.trainable_variables,
                                 matrices() if matrices else [])

        def clip(grads):
            return clip_per_matrix(grads, cfg.clip_per_matrix, cfg.matrix_norm, groups)

        return clip

    @property
    def lr_policy(self):
        """The :class:`LearningRatePolicy` of ``config``."""
        return LearningRatePolicy.from_config(self.config)

    @property
    def early_stopping(self):
        """The :class:`EarlyStopping` of ``config``."""
        return EarlyStopping.from_config(self.config)

    @property
    def train_seconds(self):
        """Seconds spent in :meth:`fit` over every process of this run, up to now.

        Training steps and validations, continued from the checkpoint's count when
        the run resumed (so a schedule spread over several sittings reports its whole
        cost, without the work redone after an interruption counted twice).
        """
        self._sync_state()
        return self.state.value("train_seconds")

    def current_learning_rate(self):
        """The learning rate of the next step, from the checkpointed state."""
        self._sync_state()
        step = self.state.value("global_step")
        warmup_done = self.state.value("warmup_done") or self.lr_policy.warmup_done(step)
        return self.lr_policy.rate(warmup_done, self._epoch_lr_factor(), step)

    def set_lr_factor(self, factor):
        """Sets the caller's phase factor of the learning rate (MemN2N linear start).

        It is a state variable, so it is checkpointed and a resumed run keeps it;
        the loop reads it at the start of every epoch.
        """
        self.state.lr_factor.assign(float(factor))

    def _epoch_lr_factor(self):
        """The lr factors that change at most once per epoch (read from variables)."""
        return self.lr_policy.epoch_factor(self.state.value("epoch"),
                                           self.state.value("lr_halved"),
                                           self.state.value("lr_factor"))

    # During fit() the per-step counters live in self._counters (Python ints and
    # floats) and are written to their variables by _sync_state() before every
    # checkpoint and whenever the loop hands control to other code.
    # (The loss scale and its good steps are the step's own: it updates them in-graph.)
    _STEP_COUNTERS = ("global_step", "step_in_epoch", "skipped_steps", "warmup_done",
                      "epoch_loss_sum", "epoch_accuracy_sum", "epoch_steps")

    def step_counter(self, name):
        """A per-step counter (``global_step``, ...) as it is now: during an epoch the
        loop keeps these ahead of :attr:`state`."""
        if self._counters is not None and name in self._counters:
            return self._counters[name]
        return self.state.value(name)

    def _load_counters(self):
        self._counters = {
            name: self.state.value(name) for name in self._STEP_COUNTERS
        }
        # The warm-up ends after its last step; one of 0 steps is over before the first.
        if self.lr_policy.warmup_done(self._counters["global_step"]):
            self._counters["warmup_done"] = True

    def _sync_state(self):
        clock = self._clock
        if clock is not None:  # inside fit(): the time counters run
            now = time.perf_counter()
            self.state.train_seconds.assign(clock["train_base"] + now - clock["fit_start"])
            if clock["epoch_start"] is not None:
                self.state.epoch_seconds.assign(
                    clock["epoch_base"] + now - clock["epoch_start"])
        if self._counters is None:
            return
        for name, value in self._counters.items():
            if self.state.value(name) != value:
                getattr(self.state, name).assign(value)

    def evaluate(self, dataset, group_key=None):
        """Loss and accuracy of the current weights on ``dataset``.

        Runs on the current device in cross-replica context (every worker
        computes the same numbers; no collectives). With ``group_key`` the
        result also holds accuracy per value of ``labels[group_key]``.
        """
        losses, corrects, groups = [], [], []
        for loss, correct, group in self._eval_batches(dataset, group_key):
            losses.append(loss)
            corrects.append(correct)
            groups.append(group)
        loss = np.concatenate(losses)
        correct = np.concatenate(corrects)
        result = {
            "loss": float(loss.mean()),
            "accuracy": float(correct.mean()),
            "error_percent": float(100.0 * (1.0 - correct.mean())),
            "count": int(correct.size),
        }
        if group_key is not None:
            group = np.concatenate(groups)
            result["error_percent_by_group"] = {
                int(g): float(100.0 * (1.0 - correct[group == g].mean()))
                for g in np.unique(group)
            }
        return result

    def restore_best(self):
        """Loads the best validation weights, if any were saved."""
        return self.checkpoints.restore_best()

    def save_checkpoint(self):
        """Writes the counters back to the state and checkpoints everything."""
        self._sync_state()
        return self.checkpoints.save(self.state.value("global_step"))
