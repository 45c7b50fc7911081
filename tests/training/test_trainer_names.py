"""The trainers under Keras' names (the base ``Trainer`` in ``tpr_keras.training.trainer``,
``TensorFlowTrainer`` and ``JAXTrainer`` in ``tpr_keras.backend.<name>.trainer``), and the
names ``tpr_keras.training`` has always exported, which user code and recorded commands
import: they are the same objects."""

import keras

from tpr_keras import training
from tpr_keras.backend.backend_trainer import make_trainer
from tpr_keras.backend.jax.trainer import JAXTrainer
from tpr_keras.training.trainer import Trainer


def test_the_kept_names_are_the_trainers_under_their_keras_names():
    assert training.EpochLoop is Trainer
    assert training.JaxTrainer is JAXTrainer and issubclass(JAXTrainer, Trainer)
    assert training.make_trainer is make_trainer
    if keras.backend.backend() == "tensorflow":
        from tpr_keras.backend.tensorflow.trainer import TensorFlowTrainer, is_chief

        assert training.Trainer is TensorFlowTrainer and issubclass(TensorFlowTrainer, Trainer)
        assert training.is_chief is is_chief


def test_make_trainer_makes_the_running_backends_trainer(tmp_path):
    def model_fn():
        return keras.Sequential([keras.Input((2,)), keras.layers.Dense(2)])

    trainer = make_trainer(model_fn, lambda: keras.optimizers.SGD(0.1),
                           training.sparse_classification("y"), training.TrainConfig(epochs=1),
                           str(tmp_path))
    expected = JAXTrainer if keras.backend.backend() == "jax" else training.Trainer
    assert type(trainer) is expected
    assert isinstance(trainer, Trainer) and trainer.history == []
