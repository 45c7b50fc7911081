"""JAX's part of the library: the :class:`~tpr_keras.backend.jax.trainer.JAXTrainer`.
Imports nothing: the trainer is imported on JAX only."""
