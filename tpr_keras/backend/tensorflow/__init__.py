"""TensorFlow's part of the library: the layers' recurrence loop
(:mod:`~tpr_keras.backend.tensorflow.tensorflow_loops`, below the layers), one trace for
several models of one architecture (:mod:`~tpr_keras.backend.tensorflow.shared_traces`,
for the math export and tables) and the
:class:`~tpr_keras.backend.tensorflow.trainer.TensorFlowTrainer` (above the training
loop). Imports nothing: each module is imported where it is used, on TensorFlow only."""
