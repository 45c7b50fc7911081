"""The device types of the backend Keras runs on, for the presets' and recipes' ``"auto"``."""


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
