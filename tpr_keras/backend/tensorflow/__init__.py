"""TensorFlow's part of the library: the layers' recurrence loop
(:mod:`~tpr_keras.backend.tensorflow.tensorflow_loops`, below the layers) and the
:class:`~tpr_keras.backend.tensorflow.trainer.TensorFlowTrainer` (above the training
loop). Imports nothing: each module is imported where it is used, on TensorFlow only."""
