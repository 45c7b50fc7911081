"""The shared preset mechanism: one from_preset, sizes and the paper's recipe per preset."""

import pytest

from tpr_keras.models import MemN2N, TPRRNN
from tpr_keras.models.presets import Preset, preset_config


def test_preset_config_applies_overrides_that_are_not_none():
    presets = {"a": Preset({"x": 1, "y": 2}), "plain": {"x": 5}}
    assert preset_config(presets, "a", {"y": None, "z": 3}) == {"x": 1, "y": 2, "z": 3}
    assert preset_config(presets, "plain", {}) == {"x": 5}  # a dict works as a preset
    with pytest.raises(ValueError, match=r"Unknown preset 'b'; choose from \['a', 'plain'\]"):
        preset_config(presets, "b", {})


def test_presets_are_read_only():
    preset = Preset({"x": 1}, {"lr": 0.1})
    with pytest.raises(TypeError):
        preset.config["x"] = 2
    with pytest.raises(TypeError):
        preset.recipe["lr"] = 0.2


def test_tpr_rnn_recipes_are_appendix_a():
    single = TPRRNN.preset_recipe("single_task")
    assert (single["optimizer"], single["learning_rate"], single["beta_1"], single["beta_2"],
            single["batch_size"]) == ("nadam", 0.008, 0.6, 0.4, 128)
    assert (single["clip_norm"], single["warmup_steps"], single["halve_lr_below"]) == (
        5.0, 50, 0.1)
    joint = TPRRNN.preset_recipe("all_tasks")
    assert (joint["learning_rate"], joint["beta_1"], joint["beta_2"], joint["batch_size"]) == (
        0.001, 0.9, 0.999, 32)
    assert TPRRNN.preset_recipe("all_tasks_code") == joint
    single["learning_rate"] = 1.0  # a copy: the preset is unchanged
    assert TPRRNN.preset_recipe("single_task")["learning_rate"] == 0.008


def test_memn2n_recipe_is_section_4_2_on_a_mean_loss():
    recipe = MemN2N.preset_recipe("single_task")
    assert recipe["optimizer"] == "sgd" and (recipe["decay_every_epochs"], recipe["epochs"]) == (
        25, 100)
    joint = MemN2N.preset_recipe("all_tasks")  # 10k examples per task: 20 epochs, halved every 5
    assert (joint["decay_every_epochs"], joint["epochs"]) == (5, 20)
    assert {k: v for k, v in joint.items() if k not in ("decay_every_epochs", "epochs")} == {
        k: v for k, v in recipe.items() if k not in ("decay_every_epochs", "epochs")}
    # the paper's lr 0.01 and clip 40 on a batch-summed loss, for batch 32
    assert recipe["learning_rate"] == pytest.approx(0.01 * recipe["batch_size"])
    assert recipe["clip_norm"] * recipe["batch_size"] == pytest.approx(40.0)
    with pytest.raises(ValueError, match="Unknown preset"):
        MemN2N.preset_recipe("all_tasks_code")


def test_memn2n_joint_paper_recipe_is_the_authors_joint_protocol():
    recipe = MemN2N.preset_recipe("joint_paper")
    # config_babi_joint.m: LS 30 epochs at 0.01/2, whose rate the main phase keeps; batch 32,
    # max_grad_norm 40 on a summed loss (size_average = false); §4.2's 10k schedule: 20
    # epochs halved every 5 (MATLAB: at the start of epoch 5, 10, ...).
    assert {k: recipe[k] for k in (
        "optimizer", "learning_rate", "batch_size", "clip_norm", "loss_reduction",
        "matrix_norm", "linear_start_epochs", "linear_start_lr_factor",
        "decay_every_epochs", "decay_offset_epochs", "epochs", "keep_best")} == {
        "optimizer": "sgd", "learning_rate": 0.005, "batch_size": 32, "clip_norm": 40.0,
        "loss_reduction": "sum", "matrix_norm": "spectral", "linear_start_epochs": 30,
        "linear_start_lr_factor": 1.0, "decay_every_epochs": 5, "decay_offset_epochs": 1,
        "epochs": 30 + 20, "keep_best": False}


def test_from_preset_takes_positional_sizes_and_overrides():
    model = TPRRNN.from_preset("all_tasks_code", 30, 6, entity_dim=None, relation_dim=7)
    assert (model.vocabulary_size, model.max_words) == (30, 6)
    assert (model.entity_dim, model.relation_dim, model.hidden_dim) == (90, 7, 40)
    assert MemN2N.from_preset("single_task", vocabulary_size=30, max_words=6,
                              embedding_dim=None).embedding_dim == 20


def test_has_gpu_reads_device_objects_and_strings():
    from tpr_keras.models.presets import has_gpu

    class Device:  # the attribute tf.config.PhysicalDevice has
        def __init__(self, kind):
            self.device_type = kind

    assert has_gpu([Device("CPU"), Device("GPU")]) and has_gpu(["cpu", "gpu"])
    assert not has_gpu([Device("CPU")]) and not has_gpu([])
