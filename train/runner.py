"""The one runner of the ``train.*`` commands: recipe, backend, data, trainer, evaluation,
then the finish (``model.keras``, the SavedModel, ``results.json`` last: :mod:`train.finish`),
for any :class:`TrainTask`.

A command (``train/babi.py``, ``train/entailment.py``, ``train/math.py``) defines its flags
and hands a task object (:mod:`train.tasks`) to :func:`run`; the task supplies
what differs between the families: the recipe, the data, the model, the loss, the metrics
and the exporter. Everything else, the same for every family and both backends, is here.

This module imports Keras: a command imports it after :func:`train.backend.start` (so
``--help`` starts no TensorFlow, and TensorFlow starts quietly).
"""

import time

import keras

from tpr_keras.provenance import run_command, run_source
from tpr_keras.training import make_trainer
from train import backend, finish, sittings
from train import flags as train_flags
from train.machine import machine_record


class TrainTask:
    """One family's part of a train command. ``flags`` holds the command's flag values
    (what its :class:`~train.cli.TrainCommand` parsed, or any object with the same
    attributes; ``given``: the names the command line set); a task may fill in the
    recipe's values on it (``--batch_size`` when not given), as the shared flags read them.

    Subclasses implement every method below but :meth:`callbacks` and
    :meth:`export_options`.
    """

    def __init__(self, flags):
        self.flags = flags

    def resolve_recipe(self):
        """Picks and prints the training recipe; returns the global batch size."""
        raise NotImplementedError

    def train_config(self, trainer_kwargs):
        """The :class:`~tpr_keras.training.config.TrainConfig` of the recipe, with the
        shared flags' ``trainer_kwargs``."""
        raise NotImplementedError

    def finished_summary(self, results):
        """A finished run's results in a few words (``test error 0.00 %``)."""
        raise NotImplementedError

    def load_data(self):
        """Loads (and prints) the data."""
        raise NotImplementedError

    def model_fn(self):
        """A new model (the trainer calls it again to re-initialise)."""
        raise NotImplementedError

    def optimizer_fn(self):
        """A new optimizer."""
        raise NotImplementedError

    def compute_fn(self, on_jax):
        """The loss and metrics (:mod:`tpr_keras.training.losses`)."""
        raise NotImplementedError

    def describe_model(self, trainer):
        """Prints the model line (and sets what the trainer needs before ``fit``)."""
        raise NotImplementedError

    def training_data(self, trainer, on_jax):
        """``(train_fn, valid_dataset, steps_per_epoch)``: ``tf.data`` on TensorFlow, numpy
        batches of a few fixed shapes on JAX (which compiles once per shape)."""
        raise NotImplementedError

    def callbacks(self):
        """The family's :class:`~tpr_keras.training.callbacks.Callback` objects, run after
        every run's (learning-rate halving, early stopping, time budget)."""
        return []

    def evaluate(self, trainer, on_jax, train_fn):
        """The family's metrics (printed as its table) as results.json entries."""
        raise NotImplementedError

    def config_record(self, trainer):
        """The run's settings for results.json's ``config``."""
        raise NotImplementedError

    def save_vocabulary(self, path):
        """Writes the vocabulary next to the saved model."""
        raise NotImplementedError

    def export(self, model, export_dir):
        """The SavedModel of ``model`` (TensorFlow backend) in TF Serving's layout under
        ``export_dir/<model_name>``; returns its version folder."""
        raise NotImplementedError

    def data_files(self):
        """The files the run trains on (after :meth:`load_data`), whose digests a run
        carried across machines (``--sitting_dir``) checks; None: not checked."""
        return None

    def export_options(self):
        """Keyword arguments of ``train.export`` for the same SavedModel from a TensorFlow
        process (JAX runs)."""
        return {}


def run(task, process_start):
    """Trains ``task`` as its command's flags say; writes the ``.keras`` model, the
    SavedModel (unless ``--nosaved_model``) and ``results.json``
    (:func:`train.finish.finish_run`); on a finished run, makes only what it lacks
    (:func:`train.finish.finish_again`). ``process_start``: ``time.time()`` when the
    command started (for the wall time it reports)."""
    flags = task.flags
    on_jax = backend.start(flags)  # the command has started it already: returns at once
    source = run_source()  # the commit this run trains from: taken at its start
    batch_size = task.resolve_recipe()
    strategy, replicas = backend.setup_backend(flags, global_batch=batch_size)
    config = task.train_config(train_flags.trainer_kwargs(flags))
    sitting_dir = getattr(flags, "sitting_dir", None)
    if sitting_dir:
        _resume_sitting(sitting_dir, flags.model_dir)
    if finish.finish_again(task, config, strategy, on_jax):  # makes what it lacks
        return None
    keras.utils.set_random_seed(flags.seed)
    task.load_data()
    data = sittings.data_fingerprint(task.data_files() or []) if sitting_dir else None
    if sitting_dir:
        sittings.check_data(sitting_dir, data)
    trainer = make_trainer(task.model_fn, task.optimizer_fn, task.compute_fn(on_jax), config,
                           flags.model_dir, strategy=strategy)
    task.describe_model(trainer)
    train_fn, valid, steps_per_epoch = task.training_data(trainer, on_jax)

    started = time.time()
    start_step = sittings.checkpoint_step(flags.model_dir)  # 0, or where a resume starts
    history = trainer.fit(train_fn, valid, steps_per_epoch=steps_per_epoch,
                          callbacks=task.callbacks())
    process_train_seconds = time.time() - started
    run_sittings = None
    if sitting_dir and trainer.chief:  # before the evaluation: the sitting is saved first
        run_sittings = _pack_sitting(sitting_dir, flags.model_dir, trainer, source,
                                     start_step, data, process_start, process_train_seconds)
    results = task.evaluate(trainer, on_jax, train_fn)
    results.update(_run_record(task, trainer, history, process_start, process_train_seconds,
                               run_sittings, strategy, replicas))
    if trainer.chief:  # model.keras, the SavedModel, then results.json (train/finish.py)
        finish.finish_run(task, trainer.model, results, on_jax)
    _print_loop_rate(trainer, results)
    print(training_time_line(trainer.train_seconds, process_train_seconds,
                             time.time() - process_start))
    return results


def _resume_sitting(sitting_dir, model_dir):
    """Unpacks the earlier sittings of a run carried across machines into ``model_dir``."""
    earlier = sittings.unpack(sitting_dir, model_dir)
    if earlier:
        print(f"Sitting {len(earlier) + 1} of the run in {sitting_dir}: resuming at step "
              f"{earlier[-1]['end_step']:,} (earlier sittings: {len(earlier)}).")


def _pack_sitting(sitting_dir, model_dir, trainer, source, start_step, data, process_start,
                  process_train_seconds):
    """Packs this sitting into ``sitting_dir``; returns the run's sittings."""
    record = sittings.sitting_record(
        source, machine_record(), run_command(), start_step,
        trainer.state.value("global_step"), time.time() - process_start,
        process_train_seconds)
    run_sittings = sittings.pack(sitting_dir, model_dir, record, data)
    print(f"Sitting {len(run_sittings)} packed into {sitting_dir} (steps "
          f"{record['start_step']:,}-{record['end_step']:,}); commit it to continue "
          f"the run on another machine with the same command.")
    return run_sittings


def _run_record(task, trainer, history, process_start, process_train_seconds, run_sittings,
                strategy, replicas):
    """results.json's entries about the run itself: times, steps, machine, history, config."""
    return {
        "train_seconds": trainer.train_seconds,  # every process of the run (resumes included)
        "process_train_seconds": process_train_seconds,
        "wall_seconds": time.time() - process_start,
        "epochs": len(history),
        "stopped": trainer.stop_reason,
        "train_examples_per_second": trainer.train_examples_per_second,
        "steps": trainer.state.value("global_step"),
        "machine": machine_record(),
        "history": history,
        **({"sittings": run_sittings} if run_sittings is not None else {}),
        "config": task.config_record(trainer) | {
            "backend": keras.backend.backend(),
            "strategy": type(strategy).__name__ if strategy else None,
            "replicas": replicas},
    }


def _print_loop_rate(trainer, results):
    """The steady-state examples/s of the loop (and of the step alone, when measured)."""
    loop_rate = trainer.train_examples_per_second  # epochs 2+, validation excluded
    if loop_rate is None:
        return
    line = (f"Training loop: {loop_rate:.0f} examples/s (steady state: epochs after the "
            f"first; validation and end-of-epoch checkpoints excluded)")
    step_rate = results.get("step_examples_per_second")
    if step_rate is not None:
        line += (f"; compiled step alone on cached batches: {step_rate:.0f} examples/s; "
                 f"loop/step = {loop_rate / step_rate:.2f}")
    print(line + ".")


def training_time_line(total_seconds: float, process_seconds: float,
                       process_wall_seconds: float) -> str:
    """The closing line of a training entry point.

    ``total_seconds`` is :attr:`Trainer.train_seconds` (every process of the run),
    ``process_seconds`` the time this process spent in ``fit``; a resumed run shows both.

    Example:
    >>> training_time_line(3600.0, 600.0, 650.0)
    "Training took 3600 s over the run's processes (600 s in this one); process wall time 650 s."
    """
    line = f"Training took {total_seconds:.0f} s"
    if total_seconds - process_seconds >= 1:
        line += f" over the run's processes ({process_seconds:.0f} s in this one)"
    return line + f"; process wall time {process_wall_seconds:.0f} s."
