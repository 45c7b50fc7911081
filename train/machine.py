"""The machine a run trains on, as ``results.json`` and a preset's metadata record it: one
line (processor, cores, memory, accelerators, system) and the CPU threads, so that a run's
CPU-hours are its training hours times its threads.

Nothing runs at import: the accelerators are counted when asked for, through the Keras
backend already running (TensorFlow is not started on JAX).
"""

from __future__ import annotations

import os
import platform
from typing import Any

import keras

from tpr_keras.runtime import cpu_vector_extension


def _accelerators() -> int:
    """GPUs (or TPUs) the running Keras backend sees; TensorFlow is not started on JAX."""
    if keras.backend.backend() == "jax":
        import jax

        return sum(d.platform != "cpu" for d in jax.devices())
    import tensorflow as tf

    return len(tf.config.list_physical_devices("GPU"))


def machine_description(accelerators: int | None = None) -> str:
    """One line: processor (with its widest vector extension), cores, memory,
    accelerators, system (best effort off Linux)."""
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
    vector = cpu_vector_extension()
    cpu = f"{cpu} ({vector})" if vector else cpu
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
