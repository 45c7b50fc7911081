"""Choosing a ``tf.distribute`` strategy from a flag."""

import json
import os

STRATEGIES = ("auto", "mirrored", "multi_worker", "one_device")


def make_strategy(name="auto"):
    """Builds the strategy for ``--strategy``.

    * ``auto``: ``multi_worker`` when ``TF_CONFIG`` describes a cluster of
      more than one task, else ``MirroredStrategy`` over the visible GPUs when
      there are any, else ``OneDeviceStrategy`` on the CPU.
    * ``mirrored``: ``MirroredStrategy`` over all local GPUs (or all logical
      CPUs when there are no GPUs).
    * ``multi_worker``: ``MultiWorkerMirroredStrategy``; reads ``TF_CONFIG``.
    * ``one_device``: ``OneDeviceStrategy`` on the first GPU, else the CPU.

    ``multi_worker`` is created before anything else touches the TensorFlow
    runtime: collective ops can only be configured at program start-up.
    """
    import tensorflow as tf

    if name == "auto" and _cluster_tasks() > 1:
        name = "multi_worker"
    if name == "multi_worker":
        if "TF_CONFIG" not in os.environ:
            raise ValueError(
                "--strategy=multi_worker needs the TF_CONFIG environment variable "
                "(cluster spec and this worker's task); see docs/distributed.md, "
                "'K machines'."
            )
        _cluster_tasks()  # fail early on malformed JSON
        return tf.distribute.MultiWorkerMirroredStrategy()
    gpus = tf.config.list_logical_devices("GPU")
    if name == "auto":
        name = "mirrored" if gpus else "one_device"
    if name == "mirrored":
        devices = [d.name for d in gpus] or [
            d.name for d in tf.config.list_logical_devices("CPU")
        ]
        return tf.distribute.MirroredStrategy(devices)
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    raise ValueError(f"Unknown strategy {name!r}; choose from {STRATEGIES}.")


def _cluster_tasks():
    """Number of tasks ``TF_CONFIG`` names (0 without it)."""
    if not os.environ.get("TF_CONFIG"):
        return 0
    try:
        cluster = json.loads(os.environ["TF_CONFIG"]).get("cluster", {})
    except json.JSONDecodeError as error:
        raise ValueError(f"TF_CONFIG is not valid JSON: {error}") from None
    return sum(len(tasks) for tasks in cluster.values())
