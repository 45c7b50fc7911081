"""The trainer of the Keras backend this process runs."""


def make_trainer(model_fn, optimizer_fn, compute_fn, config, model_dir, strategy=None):
    """A :class:`~tpr_keras.training.jax_trainer.JaxTrainer` on JAX, else a
    :class:`~tpr_keras.training.tensorflow_trainer.Trainer` under ``strategy`` (which JAX has no use
    for: it must be None there). The arguments are the trainers' own."""
    import keras

    if keras.backend.backend() == "jax":
        if strategy is not None:
            raise ValueError("A tf.distribute strategy was given to a JAX run: JAX trains "
                             "data parallel through keras.distribution instead.")
        from tpr_keras.training.jax_trainer import JaxTrainer

        return JaxTrainer(model_fn, optimizer_fn, compute_fn, config, model_dir)
    from tpr_keras.training.tensorflow_trainer import Trainer

    return Trainer(model_fn, optimizer_fn, compute_fn, config, model_dir, strategy=strategy)
