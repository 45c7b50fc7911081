"""The shared train flags' defaults that depend on the machine."""

from tpr_keras.training.flags import xla_default


def test_xla_is_on_by_default_on_a_gpu_and_as_given_otherwise():
    gpu = ["PhysicalDevice(name='/physical_device:GPU:0', device_type='GPU')"]
    assert xla_default(False, given=False, gpus=gpu) is True
    assert xla_default(False, given=False, gpus=[]) is False
    assert xla_default(False, given=True, gpus=gpu) is False  # --nojit_compile wins
    assert xla_default(True, given=False, gpus=[]) is True  # a recipe's choice stays
