"""The training recipes of each paper size (:mod:`tpr_keras.training.recipes`): the papers'
optimisers, and how ``"auto"`` and the command-line flags resolve them."""

import pytest

from tpr_keras.backend.devices import device_types, has_gpu
from tpr_keras.training.recipes import recipe
from tpr_keras.training.recipes.entailment import resolve_recipe
from tpr_keras.training.recipes.tp_transformer import RECIPES, auto_size, resolve_size


def test_tpr_rnn_recipes_are_appendix_a():
    single = recipe("tpr_rnn", "single_task")
    assert (single["optimizer"], single["learning_rate"], single["beta_1"], single["beta_2"],
            single["batch_size"]) == ("nadam", 0.008, 0.6, 0.4, 128)
    assert (single["clip_norm"], single["warmup_steps"], single["halve_lr_below"]) == (
        5.0, 50, 0.1)
    joint = recipe("tpr_rnn", "all_tasks")
    assert (joint["learning_rate"], joint["beta_1"], joint["beta_2"], joint["batch_size"]) == (
        0.001, 0.9, 0.999, 32)
    assert recipe("tpr_rnn", "all_tasks_code") == recipe("tpr_rnn", "all_tasks_authors") == joint


def test_memn2n_recipe_is_section_4_2_on_a_mean_loss():
    single = recipe("memn2n", "single_task")
    assert single["optimizer"] == "sgd" and (single["decay_every_epochs"], single["epochs"]) == (
        25, 100)
    joint = recipe("memn2n", "all_tasks")  # 10k examples per task: 20 epochs, halved every 5
    assert (joint["decay_every_epochs"], joint["epochs"]) == (5, 20)
    assert {k: v for k, v in joint.items() if k not in ("decay_every_epochs", "epochs")} == {
        k: v for k, v in single.items() if k not in ("decay_every_epochs", "epochs")}
    # the paper's lr 0.01 and clip 40 on a batch-summed loss, for batch 32
    assert single["learning_rate"] == pytest.approx(0.01 * single["batch_size"])
    assert single["clip_norm"] * single["batch_size"] == pytest.approx(40.0)


def test_memn2n_joint_paper_recipe_is_the_authors_joint_protocol():
    joint = recipe("memn2n", "joint_paper")
    # config_babi_joint.m: LS 30 epochs at 0.01/2, whose rate the main phase keeps; batch 32,
    # max_grad_norm 40 on a summed loss (size_average = false); §4.2's 10k schedule: 20
    # epochs halved every 5 (MATLAB: at the start of epoch 5, 10, ...).
    assert {k: joint[k] for k in (
        "optimizer", "learning_rate", "batch_size", "clip_norm", "loss_reduction",
        "matrix_norm", "linear_start_epochs", "linear_start_lr_factor",
        "decay_every_epochs", "decay_offset_epochs", "epochs", "keep_best",
        "early_stopping")} == {
        "optimizer": "sgd", "learning_rate": 0.005, "batch_size": 32, "clip_norm": 40.0,
        "loss_reduction": "sum", "matrix_norm": "spectral", "linear_start_epochs": 30,
        "linear_start_lr_factor": 1.0, "decay_every_epochs": 5, "decay_offset_epochs": 1,
        "epochs": 30 + 20, "keep_best": False, "early_stopping": False}


def test_entailment_sizes_all_train_with_section_5_1():
    for name in ("plain_tpru", "plain_lstm", "plain_gru", "bidaf_tpru", "bidaf_lstm",
                 "bidaf_gru"):
        assert recipe("entailment", name) == {
            "optimizer": "adam", "learning_rate": 0.001, "decay_every_epochs": 30,
            "decay_factor": 0.1, "epochs": 90, "batch_size": 64, "clip_norm": 5.0,
            "augment": True}


def test_entailment_auto_is_the_paper_on_a_gpu_and_a_time_budget_on_a_cpu():
    assert resolve_recipe("auto", devices=["CPU", "GPU"]) == (
        "paper", {"max_train_minutes": None, "jit_compile": False})
    assert resolve_recipe("auto", devices=["CPU"]) == (
        "cpu", {"max_train_minutes": 15.0, "jit_compile": True})
    # --epochs/--steps lift the CPU time budget; explicit values win over both recipes.
    assert resolve_recipe("cpu", budget_given=True)[1]["max_train_minutes"] is None
    assert resolve_recipe("cpu", budget_given=True, max_train_minutes=5)[1] == {
        "max_train_minutes": 5, "jit_compile": True}
    assert resolve_recipe("cpu", max_train_minutes=0, jit_compile=False)[1] == {
        "max_train_minutes": None, "jit_compile": False}
    assert resolve_recipe("paper", max_train_minutes=140, jit_compile=True)[1] == {
        "max_train_minutes": 140, "jit_compile": True}
    assert resolve_recipe("auto")[0] == ("paper" if has_gpu(device_types()) else "cpu")
    with pytest.raises(ValueError, match="Unknown recipe 'gpu'"):
        resolve_recipe("gpu")


class _Device:  # what tf.config.list_physical_devices() returns, minus the name
    def __init__(self, device_type):
        self.device_type = device_type


def test_tp_transformer_auto_is_the_paper_size_on_a_gpu_tiny_on_a_cpu():
    assert auto_size([_Device("CPU")]) == "tiny"
    assert auto_size([_Device("CPU"), _Device("GPU")]) == "tp_transformer"
    assert auto_size(["CPU", "GPU", "GPU"], use_role=False) == "transformer"
    assert auto_size(["CPU"], use_role=False) == "tiny"
    assert auto_size([]) == "tiny"
    name, tiny = resolve_size("auto", devices=[_Device("CPU")])
    assert name == "tiny" and tiny == RECIPES["tiny"]
    assert (tiny["learning_rate"], tiny["batch_size"], tiny["steps"]) == (1e-3, 128, 2000)
    assert tiny["max_train_minutes"] > 0  # a wall-clock guard on CPUs
    name, paper = resolve_size("auto", devices=["CPU", "GPU"])
    assert name == "tp_transformer"
    # §4.1 and Table 1: Adam 1e-4, β 0.9/0.995, clip 0.1, batch 1024, 1,000k steps.
    assert paper == dict(learning_rate=1e-4, beta_1=0.9, beta_2=0.995, clip_norm=0.1,
                         batch_size=1024, steps=1_000_000, epochs=1_000_000,
                         max_train_minutes=None)
    assert all(RECIPES[n]["batch_size"] == 1024 for n in
               ("tp_transformer", "tp_transformer_b", "tp_transformer_c", "transformer"))


def test_tp_transformer_recipe_flags_override_and_explicit_sizes():
    name, resolved = resolve_size("auto", devices=["CPU"], learning_rate=3e-4,
                                  batch_size=None, steps=50)
    assert name == "tiny" and resolved["learning_rate"] == 3e-4 and resolved["steps"] == 50
    assert resolved["batch_size"] == 128  # None keeps the recipe's value
    # A budget of one's own drops the recipe's time guard, unless that is given too.
    assert resolved["max_train_minutes"] is None
    assert resolve_size("tiny")[1]["max_train_minutes"] == 14.0
    assert resolve_size("tiny", steps=9, max_train_minutes=3.0)[1]["max_train_minutes"] == 3.0
    assert resolve_size("tiny", epochs=2)[1]["max_train_minutes"] is None
    # An explicit size wins over the devices.
    assert resolve_size("tp_transformer", devices=["CPU"])[0] == "tp_transformer"
    assert resolve_size("small", devices=["GPU"])[0] == "small"
    # --epochs without --steps: the epoch count decides, not the recipe's step budget.
    _, resolved = resolve_size("tiny", epochs=3)
    assert resolved["epochs"] == 3 and resolved["steps"] is None
    _, resolved = resolve_size("tiny", epochs=3, steps=10)
    assert (resolved["epochs"], resolved["steps"]) == (3, 10)
    assert resolve_size("tiny", clip_norm=0.0)[1]["clip_norm"] == 0.0
    with pytest.raises(ValueError, match="Unknown size 'huge'"):
        resolve_size("huge")
    with pytest.raises(ValueError, match="Unknown recipe fields"):
        resolve_size("tiny", momentum=0.9)
