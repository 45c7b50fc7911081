"""What differs between Keras backends, laid out as Keras lays out ``keras.src.backend``:

* below the layers: the device types a recipe's ``"auto"`` decides on
  (:mod:`~tpr_keras.backend.devices`) and TensorFlow's own loop for the layers'
  recurrences (:mod:`~tpr_keras.backend.tensorflow.tensorflow_loops`), imported only when
  Keras runs on TensorFlow; the layers, ops and models import none of it at module level;
* above the backend-neutral training loop (:class:`tpr_keras.training.trainer.Trainer`):
  each backend's trainer, :class:`~tpr_keras.backend.tensorflow.trainer.TensorFlowTrainer`
  and :class:`~tpr_keras.backend.jax.trainer.JAXTrainer`, and
  :func:`~tpr_keras.backend.backend_trainer.make_trainer`, which makes the running
  backend's.

The two halves sit on different floors of the library (docs/architecture.md,
tests/test_layering.py).
"""
