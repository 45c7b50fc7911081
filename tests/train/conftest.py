"""Fixtures shared by the entry-point tests."""

import numpy as np
import pytest


@pytest.fixture(scope="module")
def tiny_babi(tmp_path_factory, babi_task1_writer):
    """A bAbI folder with a 100-story task-1 training file and a 20-story test file."""
    root = tmp_path_factory.mktemp("babi") / "en-10k"
    root.mkdir()
    babi_task1_writer(root / "qa1_single-supporting-fact_train.txt", 100, 0)
    babi_task1_writer(root / "qa1_single-supporting-fact_test.txt", 20, 1)
    return root.parent


def write_module(path, n, seed, digits):
    """A Mathematics module file of ``n`` units-digit questions on ``digits``-digit numbers."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(n):
        number = int(rng.integers(10 ** (digits - 1), 10**digits))
        lines += [f"What is the units digit of {number}?", str(number % 10)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def tiny_math(tmp_path_factory):
    """A Mathematics Dataset folder with one module (120 training questions)."""
    root = tmp_path_factory.mktemp("mathematics")
    for i, folder in enumerate(["train-easy", "train-medium", "train-hard"]):
        write_module(root / folder / "numbers__place_value.txt", 40, i, 3)
    write_module(root / "interpolate" / "numbers__place_value.txt", 16, 7, 3)
    write_module(root / "extrapolate" / "numbers__place_value_big.txt", 8, 8, 6)
    return root


PAIRS = [("(a&b)", "a", 1), ("a", "(a&b)", 0), ("(a|b)", "(b|a)", 1), ("a", "~a", 0),
         ("(a>b)", "(~b>~a)", 1), ("(c&d)", "(c|d)", 1), ("(c|d)", "(c&d)", 0), ("~~a", "a", 1)]


@pytest.fixture(scope="module")
def tiny_entailment(tmp_path_factory):
    """An entailment folder: 32 training pairs, 8 in each evaluation split."""
    root = tmp_path_factory.mktemp("entailment")
    lines = [f"{a},{b},{label},0,0,0" for a, b, label in PAIRS]
    for name in ("train", "validate", "test_easy", "test_hard", "test_big", "test_massive",
                 "test_exam"):
        (root / f"{name}.txt").write_text("\n".join(lines * (4 if name == "train" else 1)) + "\n")
    return root
