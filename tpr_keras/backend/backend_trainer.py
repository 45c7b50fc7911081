"""The trainer of the Keras backend this process runs: what a command that trains on either
backend constructs (``train.*``)."""

import keras


def make_trainer(model_fn, optimizer_fn, compute_fn, config, model_dir, strategy=None):
    """A :class:`~tpr_keras.backend.jax.trainer.JAXTrainer` on JAX, else a
    :class:`~tpr_keras.backend.tensorflow.trainer.TensorFlowTrainer` under ``strategy``
    (which JAX has no use for: it must be None there). The arguments are the trainers' own.

    Each trainer is imported only on its backend: the TensorFlow one imports TensorFlow.
    """
    if keras.backend.backend() == "jax":
        if strategy is not None:
            raise ValueError("A tf.distribute strategy was given to a JAX run: JAX trains "
                             "data parallel through keras.distribution instead.")
        from tpr_keras.backend.jax.trainer import JAXTrainer

        return JAXTrainer(model_fn, optimizer_fn, compute_fn, config, model_dir)
    from tpr_keras.backend.tensorflow.trainer import TensorFlowTrainer

    return TensorFlowTrainer(model_fn, optimizer_fn, compute_fn, config, model_dir,
                             strategy=strategy)
