"""Choosing a ``tf.distribute`` strategy from a flag."""

import json
import os

import tensorflow as tf

STRATEGIES = ("auto", "mirrored", "multi_worker", "one_device")


def make_strategy(name="auto"):
    """Builds the strategy for ``--strategy``.

    * ``auto``: ``MirroredStrategy`` over the visible GPUs when there are any,
      else ``OneDeviceStrategy`` on the CPU.
    * ``mirrored``: ``MirroredStrategy`` over all local GPUs (or all logical
      CPUs when there are no GPUs).
    * ``multi_worker``: ``MultiWorkerMirroredStrategy``; reads ``TF_CONFIG``.
    * ``one_device``: ``OneDeviceStrategy`` on the first GPU, else the CPU.
    """
    gpus = tf.config.list_logical_devices("GPU")
    if name == "auto":
        name = "mirrored" if gpus else "one_device"
    if name == "mirrored":
        devices = [d.name for d in gpus] or [
            d.name for d in tf.config.list_logical_devices("CPU")
        ]
        return tf.distribute.MirroredStrategy(devices)
    if name == "multi_worker":
        if "TF_CONFIG" not in os.environ:
            raise ValueError(
                "--strategy=multi_worker needs the TF_CONFIG environment variable "
                "(cluster spec and this worker's task); see README 'Training on "
                "several machines'."
            )
        json.loads(os.environ["TF_CONFIG"])  # fail early on malformed JSON
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    raise ValueError(f"Unknown strategy {name!r}; choose from {STRATEGIES}.")
