"""The device types of the backend Keras runs on, for the training recipes' ``"auto"``."""


def has_gpu(devices):
    """Whether any of ``devices`` is a GPU: what a recipe's ``"auto"`` decides on.

    Args:
        devices: ``tf.config.list_physical_devices()`` or device-type strings
            (``"CPU"``, ``"GPU"``).

    Example:
    >>> has_gpu(["CPU", "GPU"]), has_gpu(["CPU"])
    (True, False)
    """
    return "GPU" in {str(getattr(d, "device_type", d)).upper() for d in devices}


def device_types():
    """``["CPU", "GPU", ...]``: one entry per device of the running backend.

    On TensorFlow its physical devices (listing them does not start the runtime, so a
    later logical-device split or distribution strategy is still possible); on JAX
    ``jax.devices()``. No TensorFlow import on JAX.

    Example:
    >>> device_types()  # on a CPU-only machine
    ['CPU']
    """
    import keras

    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return [device.device_type for device in tf.config.list_physical_devices()]
    if keras.backend.backend() == "jax":
        import jax

        return [device.platform.upper() for device in jax.devices()]
    return [device.split(":")[0].upper() for device in keras.distribution.list_devices()]
