"""What the ``train.*`` commands print and hand on at the end of a run: the closing time
line, the machine the run trained on, a preset's headline, and the SavedModel of a JAX run written by a
TensorFlow ``train.export`` process. (The run's files themselves:
:func:`tpr_keras.training.outputs.save_run`.)"""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
from typing import Any


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


SAVED_MODEL_LINE = "SavedModel for TF Serving: "


def _accelerators() -> int:
    """GPUs (or TPUs) the running Keras backend sees; TensorFlow is not started on JAX."""
    import keras

    if keras.backend.backend() == "jax":
        import jax

        return sum(d.platform != "cpu" for d in jax.devices())
    import tensorflow as tf

    return len(tf.config.list_physical_devices("GPU"))


def machine_description(accelerators: int | None = None) -> str:
    """One line: processor, cores, memory, accelerators, system (best effort off Linux)."""
    cpu = platform.processor() or platform.machine()
    memory = ""
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        cpu = names[0] if names else cpu
        with open("/proc/meminfo") as f:
            kib = int(next(line for line in f if line.startswith("MemTotal")).split()[1])
        memory = f", {kib / 2**20:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    gpus = _accelerators() if accelerators is None else accelerators
    return (f"{cpu}, {os.cpu_count()} cores{memory}, "
            + (f"{gpus} GPU(s)" if gpus else "no GPU") + f", {platform.system()}")


def machine_record() -> dict[str, Any]:
    """The machine a run trains on, for its results.json: ``description`` (one line),
    ``cpus`` and ``intra_op_threads`` (``TF_NUM_INTRAOP_THREADS`` where set, e.g. by
    the grid drivers' ``--jobs``; None: the framework's default, every core), so that a
    run's CPU-hours are its training hours times its threads."""
    threads = os.environ.get("TF_NUM_INTRAOP_THREADS", "")
    return {"description": machine_description(), "cpus": os.cpu_count(),
            "intra_op_threads": int(threads) if threads.isdigit() else None}


def export_in_tensorflow(keras_path: str, export_dir: str, model_name: str,
                         **options: Any) -> str | None:
    """Writes the SavedModel of a run trained on another backend, in a TensorFlow process.

    Runs ``python -m train.export --keras_model <keras_path>`` with
    ``KERAS_BACKEND=tensorflow`` (the SavedModel and its in-graph tokenizer are
    TensorFlow's) and returns the version folder it wrote. Where TensorFlow is not
    installed it prints the command to run elsewhere and returns None.

    Args:
        keras_path: the run's ``model.keras`` (its ``vocab.txt`` beside it).
        export_dir: base folder; the model goes to ``<export_dir>/<model_name>/<version>``.
        model_name: the served model name.
        **options: more ``train.export`` flags (bAbI: ``max_story_sentences``, 0 for
            no limit).
    """
    import importlib.util

    command = [sys.executable, "-m", "train.export", "--keras_model", keras_path,
               "--export_dir", export_dir, "--model_name", model_name]
    command += [f"--{name}={value}" for name, value in options.items()]
    if importlib.util.find_spec("tensorflow") is None:
        print("TensorFlow is not installed here, so no SavedModel was written; where it "
              f"is: KERAS_BACKEND=tensorflow python {shlex.join(command[1:])}")
        return None
    done = subprocess.run(command, env=dict(os.environ, KERAS_BACKEND="tensorflow"),
                          capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith(SAVED_MODEL_LINE)]
    if done.returncode or not lines:
        raise RuntimeError(f"Export in TensorFlow failed ({shlex.join(command)}):\n"
                           f"{done.stdout[-2000:]}{done.stderr[-4000:]}")
    return lines[-1][len(SAVED_MODEL_LINE):].strip()


def headline(task, table):
    """One line of what the preset scores."""
    if task == "babi":
        n = len(table["test_error_percent"])
        return (f"mean test error {table['test_error_percent_mean']:.2f} % over {n} tasks, "
                f"{table['failed_tasks']} failed (> 5 %)")
    if task == "entailment":
        acc = table["accuracy_percent"]
        return "accuracy % " + ", ".join(f"{k.replace('test_', '')} {v:.1f}"
                                         for k, v in acc.items())
    summary = table["summary"]
    return ", ".join(f"{regime} mean exact match {s['mean']:.1f} % over {s['modules']} modules"
                     for regime, s in summary.items())


def write_preset(model, output, assets, metadata, overwrite=False):
    """``model.save_to_preset`` at ``output``, then one line of its size and headline."""
    path = model.save_to_preset(output, assets=assets, metadata=metadata, overwrite=overwrite)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
    print(f"Preset: {path} ({size / 1e6:.2f} MB)\n{metadata['headline']}")
    return path
