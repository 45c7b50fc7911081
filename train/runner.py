"""The one runner of the ``train.*`` commands: recipe, backend, data, trainer, evaluation,
then the finish (``model.keras``, the SavedModel, ``results.json`` last: :mod:`train.finish`),
for any :class:`TrainTask`.

A command (``train/babi.py``, ``train/entailment.py``, ``train/math.py``) defines its flags
and hands a task object (:mod:`train.tasks`) to :func:`run`; the task supplies
what differs between the families: the recipe, the data, the model, the loss, the metrics
and the exporter. Everything else, the same for every family and both backends, is here.
"""

import time


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
    SavedModel and ``results.json`` (:func:`train.finish.finish_run`); on a finished run,
    makes only what it lacks (:func:`train.finish.finish_again`). ``process_start``:
    ``time.time()`` when the command started (for the wall time it reports)."""
    from absl import logging

    from train import cli
    from train import flags as train_flags

    flags = task.flags
    if logging.get_verbosity() <= 0:  # keep TF's per-checkpoint INFO lines out of the output
        logging.set_verbosity(logging.WARNING)
    on_jax = train_flags.keras_backend() == "jax"
    if not on_jax:
        cli.import_tensorflow(flags)
    import keras

    from tpr_keras.training import make_trainer
    from tpr_keras.provenance import run_command, run_source
    from train import finish, sittings
    from train.outputs import machine_record, training_time_line

    source = run_source()  # the commit this run trains from: taken at its start
    batch_size = task.resolve_recipe()
    strategy, replicas = train_flags.setup_backend(flags, global_batch=batch_size)
    config = task.train_config(train_flags.trainer_kwargs(flags))
    sitting_dir = getattr(flags, "sitting_dir", None)
    if sitting_dir:
        earlier = sittings.unpack(sitting_dir, flags.model_dir)
        if earlier:
            print(f"Sitting {len(earlier) + 1} of the run in {sitting_dir}: resuming at step "
                  f"{earlier[-1]['end_step']:,} (earlier sittings: {len(earlier)}).")
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
    if sitting_dir and trainer.chief:  # before the evaluation: the sitting is saved first
        record = sittings.sitting_record(
            source, machine_record(), run_command(), start_step,
            trainer.state.value("global_step"), time.time() - process_start,
            process_train_seconds)
        run_sittings = sittings.pack(sitting_dir, flags.model_dir, record, data)
        print(f"Sitting {len(run_sittings)} packed into {sitting_dir} (steps "
              f"{record['start_step']:,}-{record['end_step']:,}); commit it to continue "
              f"the run on another machine with the same command.")
    train_seconds = trainer.train_seconds  # every process of the run (resumes included)
    results = task.evaluate(trainer, on_jax, train_fn)
    results.update({
        "train_seconds": train_seconds,
        "process_train_seconds": process_train_seconds,
        "wall_seconds": time.time() - process_start,
        "epochs": len(history),
        "stopped": trainer.stop_reason,
        "train_examples_per_second": trainer.train_examples_per_second,
        "steps": trainer.state.value("global_step"),
        "machine": machine_record(),
        "history": history,
        **({"sittings": run_sittings} if sitting_dir and trainer.chief else {}),
        "config": task.config_record(trainer) | {
            "backend": keras.backend.backend(),
            "strategy": type(strategy).__name__ if strategy else None,
            "replicas": replicas},
    })
    if trainer.chief:  # model.keras, the SavedModel, then results.json (train/finish.py)
        finish.finish_run(task, trainer.model, results, on_jax)
    loop_rate = trainer.train_examples_per_second  # epochs 2+, validation excluded
    if loop_rate is not None:
        line = (f"Training loop: {loop_rate:.0f} examples/s (steady state: epochs after the "
                f"first; validation and end-of-epoch checkpoints excluded)")
        step_rate = results.get("step_examples_per_second")
        if step_rate is not None:
            line += (f"; compiled step alone on cached batches: {step_rate:.0f} examples/s; "
                     f"loop/step = {loop_rate / step_rate:.2f}")
        print(line + ".")
    print(training_time_line(train_seconds, process_train_seconds, time.time() - process_start))
    return results
