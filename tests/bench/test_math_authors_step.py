"""bench.math_authors_step: the port's step timed beside the authors' on the same batches,
their FLOPs counted, the authors' half skipped without a checkout or PyTorch and run on a
stand-in checkout where PyTorch is installed. The bench's coordinator runs in the test
process, its one-threaded workers in processes of their own."""

import json
import pathlib
import sys

import numpy as np
import pytest

from bench import math_authors_step, math_step_profile, math_steps
from tests.file_trees import write_files

REPO = pathlib.Path(__file__).resolve().parents[2]
TINY = dict(model_dim=2, feed_forward_dim=4, num_heads=1, num_encoder_layers=1,
            num_decoder_layers=1, use_role=True, multiplicative_embedding=True)

#: A stand-in for the authors' ``models/tp-transformer.py`` and ``utils/lib.py``: the
#: functions the benchmark calls, with the same signatures, on a small PyTorch model.
FAKE_MODEL = """
import torch
from utils.lib import HyperParams


class Seq2Seq(torch.nn.Module):
    def __init__(self, vocabulary, hidden, pad_idx):
        super().__init__()
        self.embedding = torch.nn.Embedding(vocabulary, hidden, padding_idx=pad_idx)
        self.out = torch.nn.Linear(hidden, vocabulary)

    def forward(self, src, trg):
        context = self.embedding(src).mean(1, keepdim=True)
        return self.out(self.embedding(trg) + context)


def build_transformer(params, pad_idx):
    HyperParams()
    return Seq2Seq(params.input_dim, params.hidden, pad_idx)
"""
FAKE_LIB = """
import torch


class HyperParams:
    pass


def compute_accuracy(logits, targets, pad_value):
    trg = targets[:, 1:]
    match = (torch.argmax(logits, -1) == trg) | (trg == pad_value)
    return match.all(1).sum().item() / len(logits)
"""


def write_data(root):
    """Two modules of questions of varied lengths, 48 training pairs each."""
    rng = np.random.default_rng(0)
    for regime, count in (("train-easy", 48), ("interpolate", 4)):
        (root / regime).mkdir(parents=True)
        for module in ("arithmetic__add_or_sub", "numbers__place_value"):
            lines = []
            for _ in range(count):
                a, b = (int(x) for x in rng.integers(1, 10 ** rng.integers(1, 12), 2))
                lines += [f"What is {a} plus {b}?", str(a + b)]
            (root / regime / f"{module}.txt").write_text("\n".join(lines) + "\n")
    return root


def run(args, tmp_path, monkeypatch, capsys):
    """bench.math_authors_step's coordinator in this process (its ``main``, on its command
    line), its workers in processes of their own: ``(the JSON it wrote, its stdout)``."""
    out = tmp_path / "step.json"
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the workers' bench is this checkout's
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "3")
    monkeypatch.setattr(sys, "argv", [
        "bench/math_authors_step.py", "--data_dir", str(write_data(tmp_path / "mathematics")),
        "--modules", "all", "--batch_size", "8", "--batches", "2", "--limit_per_file", "48",
        "--seconds", "0.2", "--repeats", "2", "--matmul_seconds", "0.02", "--json", str(out),
        *args])
    code = math_authors_step.main()
    stdout = capsys.readouterr().out
    assert code == 0, stdout[-2000:]
    return json.loads(out.read_text()), stdout


def test_matmul_flops_counts_every_product_of_a_step():
    # d 2, f 4, V 3, one layer each, S 3 source and T 2 target positions:
    # embedding d x d on 5 positions: 2*5*4 = 40; encoder: 5 projections 2*5*3*4 = 120,
    # scores and weighted sum 4*9*2 = 72, feed-forward 3*4*2*4 = 96; decoder: self
    # 2*5*2*4 = 80 + 4*4*2 = 32, cross from the target (Q, R, output) 2*3*2*4 = 48, keys
    # and values 4*3*4 = 48, scores and sum 4*2*3*2 = 48, feed-forward 2*4*2*4 = 64;
    # logits 2*2*2*3 = 24.
    assert math_steps.matmul_flops(TINY, 3, 3, 2) == 672
    baseline = dict(TINY, use_role=False, multiplicative_embedding=False)
    # no embedding map (-40), one projection fewer per attention (-24 -16 -16 from the
    # target in the cross-attention's Q/R/output)
    assert math_steps.matmul_flops(baseline, 3, 3, 2) == 672 - 40 - 24 - 16 - 16


def test_authors_batches_use_their_pad_and_unk_and_one_target_row():
    features = {"source": np.array([[2, 1, 9, 3, 0]]), "target_in": np.array([[2, 7, 0]])}
    labels = {"target_out": np.array([[7, 3, 0]])}
    (src, trg), = math_steps.authors_batches([(features, labels)])
    np.testing.assert_array_equal(src, [[2, 0, 9, 3, 1]])
    np.testing.assert_array_equal(trg, [[2, 7, 3, 1]])  # <s> answer </s> <pad>
    assert src.dtype == np.int64


def test_profile_parts_and_self_times():
    assert math_step_profile.part_of(
        "gradient_tape/tp_transformer_1/encoder_1_1/self_attention_1/MatMul_1/MatMul"
    ) == "backward: encoder_1/self_attention"
    assert math_step_profile.part_of("tp_transformer_1/embedding_5/MatMul") == "embedding"
    assert math_step_profile.part_of("cond/then/_5/cond/torch_adam/Mul") == "torch_adam"
    # b and c run inside a; d after it
    assert sorted(math_step_profile.self_times(
        [("a", 0, 10), ("b", 2, 3), ("c", 6, 2), ("d", 12, 1)])) == [
        ("a", 5), ("b", 3), ("c", 2), ("d", 1)]


def test_grouped_configurations_name_their_group_count():
    # the two named configurations keep the equal cut they were measured with
    assert math_steps.config_entry("tensorflow_grouped") == (
        "tensorflow", "same", "matmul", 3, "equal")
    assert math_steps.config_entry("tensorflow_grouped6") == (
        "tensorflow", "same", "matmul", 6, "padding", 1, 1)
    assert math_steps.config_entry("tensorflow_buckets_grouped4_equal") == (
        "tensorflow", "buckets", "matmul", 4, "equal", 1, 1)
    assert math_steps.config_entry("tensorflow_buckets_grouped2x3") == (
        "tensorflow", "buckets", "matmul", 2, "padding", 3, 1)
    assert math_steps.config_entry("tensorflow_buckets_grouped2x2_m8") == (
        "tensorflow", "buckets", "matmul", 2, "padding", 2, 8)
    for name in ("tensorflow_grouped0", "torch_grouped2", "tensorflow_groupedx", "jaxx",
                 "tensorflow_grouped2x0", "tensorflow_grouped2x", "tensorflow_grouped2_m0",
                 "tensorflow_grouped2_m"):
        assert math_steps.config_entry(name) is None


def test_skip_reasons(tmp_path, monkeypatch):
    assert math_authors_step.skip_reason("authors", None) == "no --authors_checkout given"
    assert "holds no models/tp-transformer.py" in math_authors_step.skip_reason(
        "authors", str(tmp_path))
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "tp-transformer.py").write_text("")
    real = math_authors_step.importlib.util.find_spec
    monkeypatch.setattr(math_authors_step.importlib.util, "find_spec",
                        lambda name: None if name == "torch" else real(name))
    assert math_authors_step.skip_reason("authors", str(tmp_path)) == "torch is not installed"
    assert math_authors_step.skip_reason("tensorflow", None) is None


@pytest.mark.slow
def test_port_half_side_by_side_without_a_checkout(tmp_path, monkeypatch, capsys):
    bench, stdout = run(["--configs", "authors,tensorflow,tensorflow_buckets",
                         "--authors_checkout", str(tmp_path / "absent"),
                         "--profile_steps", "1"], tmp_path, monkeypatch, capsys)
    assert bench["skipped"] == {"authors": f"{tmp_path / 'absent'} holds no "
                                           "models/tp-transformer.py"}
    assert "authors: skipped" in stdout
    assert bench["baseline"] == "tensorflow" and set(bench["configs"]) == {
        "tensorflow", "tensorflow_buckets"}
    same, buckets = bench["batch_sets"]["same"], bench["batch_sets"]["buckets"]
    assert same["flops_per_example"] >= same["useful_flops_per_example"] > 0
    assert buckets["flops_per_example"] >= buckets["useful_flops_per_example"] > 0
    peaks = bench["matmul_peak"]
    for clock in ("wall", "cpu"):
        assert set(peaks[clock]["by_library"]) == {"tensorflow"}
        assert peaks[clock]["flops_per_second"] > 0
    for name, row in bench["configs"].items():
        assert row["batches"] == ("buckets" if name.endswith("buckets") else "same")
        assert row["flops_per_example"] == bench["batch_sets"][row["batches"]][
            "flops_per_example"]
        for clock in ("wall", "cpu"):
            rates = row[clock]
            assert len(rates["ratio_to_baseline_rounds"]) == 2
            assert rates["examples_per_second"] > 0
            assert rates["flops_per_second"] == pytest.approx(
                rates["examples_per_second"] * row["flops_per_example"])
            assert rates["fraction_of_matmul_peak"] == pytest.approx(
                rates["flops_per_second"] / peaks[clock]["flops_per_second"])
        profile = row["profile"]
        assert profile["ops_ms"] > 0 and profile["by_type"] and profile["by_part"]
    assert bench["configs"]["tensorflow"]["cpu"]["ratio_to_baseline_rounds"] == [1.0, 1.0]
    assert len(bench["windows"]) == 4 and "profile" not in bench["windows"][0]


@pytest.mark.slow
def test_authors_half_on_a_stand_in_checkout(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")
    checkout = write_files(tmp_path / "checkout", {
        "models/tp-transformer.py": FAKE_MODEL, "utils/lib.py": FAKE_LIB, "utils/__init__.py": ""})
    bench, _ = run(["--configs", "authors", "--authors_checkout", str(checkout),
                    "--profile_steps", "1"], tmp_path, monkeypatch, capsys)
    row = bench["configs"]["authors"]
    assert bench["baseline"] == "authors" and row["library"] == "torch"
    assert row["wall"]["ratio_to_baseline_rounds"] == [1.0, 1.0] and row["parameters"] > 0
    assert row["counted_flops_per_example"] > 0  # the stand-in's output layer
    assert row["formula_flops_per_example"] > row["counted_flops_per_example"]
    assert row["profile"]["by_type"] and not row["profile"]["by_part"]
    assert set(bench["matmul_peak"]["cpu"]["by_library"]) == {"torch"}


def test_workers_run_on_one_thread_with_the_onednn_cache_train_math_gives(monkeypatch):
    from bench.windows import one_thread_environment
    from tpr_keras import runtime

    monkeypatch.delenv(runtime.ONEDNN_CACHE_ENV, raising=False)
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    env = one_thread_environment("tensorflow")
    assert env["TF_NUM_INTRAOP_THREADS"] == "1" and env["KERAS_BACKEND"] == "tensorflow"
    assert runtime.ONEDNN_CACHE_ENV not in env
    sized = one_thread_environment("tensorflow", size_onednn_cache=True)
    assert sized[runtime.ONEDNN_CACHE_ENV] == str(runtime.ONEDNN_CACHE_CAPACITY)
    assert "KERAS_BACKEND" not in one_thread_environment("torch")
    assert "intra_op_parallelism_threads=1" in one_thread_environment("jax")["XLA_FLAGS"]
    monkeypatch.setenv(runtime.ONEDNN_CACHE_ENV, "1024")  # the user's value wins
    assert one_thread_environment("tensorflow", True)[runtime.ONEDNN_CACHE_ENV] == "1024"
