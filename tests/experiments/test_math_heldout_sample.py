"""experiments/math_heldout_sample.py: seeded, non-overwriting samples in the v1.0 layout.

DeepMind's generator is not installed with tpr-keras (it needs numpy < 1.24), so these tests
drive the script's functions with small generator-like modules that draw from Python's
``random`` and numpy's global generator, as the real modules do.
"""

import os
import random
from types import SimpleNamespace

import numpy as np
import pytest


@pytest.fixture(scope="module")
def script(load_script):
    return load_script("math_heldout_sample")


def add_module():
    a, b = random.randint(0, 999), int(np.random.randint(0, 999))
    return SimpleNamespace(question=f"What is {a} + {b}?", answer=a + b)


def long_then_short():
    """A module whose first draw is too long: the sampler must redraw, not truncate."""
    long_then_short.calls += 1
    if long_then_short.calls == 1:
        return SimpleNamespace(question="x" * 161, answer=1)
    return SimpleNamespace(question="Is 2 > 1?", answer=True)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def test_flatten_names_modules_like_the_dataset(script):
    tree = {"numbers": {"place_value": 1, "round_number": 2}, "comparison": {"pair": 3}}
    assert script.flatten(tree) == {"comparison__pair": 3, "numbers__place_value": 1,
                                    "numbers__round_number": 2}
    assert list(script.flatten(tree)) == sorted(script.flatten(tree))


def test_extrapolate_modules_map_to_their_training_modules(script):
    names = {"algebra__polynomial_roots_big": "algebra__polynomial_roots",
             "arithmetic__mixed_longer": "arithmetic__mixed",
             "comparison__sort_more": "comparison__sort",
             "probability__swr_p_level_set_more_samples": "probability__swr_p_level_set",
             "measurement__conversion": "measurement__conversion",
             "numbers__place_value": "numbers__place_value"}
    assert {name: script.training_module(name) for name in names} == names


def test_same_seed_same_files_other_seed_other_files(script, tmp_path):
    modules = {"interpolate": {"arithmetic__add": add_module}}
    for name, seed in (("a", 7), ("b", 7), ("c", 8)):
        summary = script.generate(modules, str(tmp_path / name), 50, seed, log=lambda *_: None)
        assert summary == {"interpolate/arithmetic__add": {"questions": 50,
                                                           "seconds": pytest.approx(0, abs=1)}}
    a = read(tmp_path / "a/interpolate/arithmetic__add.txt")
    lines = a.rstrip("\n").split("\n")
    assert len(lines) == 100
    for question, answer in zip(lines[0::2], lines[1::2]):
        x, y = question.removeprefix("What is ").removesuffix("?").split(" + ")
        assert int(answer) == int(x) + int(y)
    assert a == read(tmp_path / "b/interpolate/arithmetic__add.txt")
    assert a != read(tmp_path / "c/interpolate/arithmetic__add.txt")


def test_too_long_questions_are_redrawn(script, tmp_path):
    long_then_short.calls = 0
    script.generate({"interpolate": {"comparison__pair": long_then_short}}, str(tmp_path / "o"),
                    2, 0, log=lambda *_: None)
    assert read(tmp_path / "o/interpolate/comparison__pair.txt") == "Is 2 > 1?\nTrue\n" * 2
    assert long_then_short.calls == 3


def failing_then_short():
    """A module whose first draw fails the generator's own assertion (as its
    ``sample.arithmetic`` does on rare entropy leftovers): the sampler must draw again."""
    failing_then_short.calls += 1
    assert failing_then_short.calls != 2, "entropy left over"
    return SimpleNamespace(question=f"Is {failing_then_short.calls} > 1?", answer=True)


def test_a_draw_that_fails_the_generators_assertion_is_redrawn(script, tmp_path):
    failing_then_short.calls = 0
    script.generate({"interpolate": {"comparison__pair": failing_then_short}},
                    str(tmp_path / "o"), 2, 0, log=lambda *_: None)
    assert read(tmp_path / "o/interpolate/comparison__pair.txt") == (
        "Is 1 > 1?\nTrue\nIs 3 > 1?\nTrue\n")
    assert failing_then_short.calls == 3


def test_a_module_that_always_fails_the_assertion_ends_with_its_error(script):
    def always_failing():
        raise AssertionError("entropy left over")

    with pytest.raises(AssertionError, match="entropy left over"):
        script.sample(always_failing, max_failures=5)


def test_never_overwrites(script, tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(SystemExit, match="already exists"):
        script.generate({"interpolate": {"a": add_module}}, str(out), 1, 0)
    assert read(out / "keep.txt") == "mine"
    assert os.listdir(out) == ["keep.txt"]


def test_time_limit_and_training_overlap(script, tmp_path):
    ticks = iter(range(100))
    path = tmp_path / "m.txt"
    questions = script.write_module(str(path), add_module, 10, max_seconds=2.5,
                                    clock=lambda: next(ticks))
    assert len(questions) == 2  # the clock reads 0 at the start, then 1, 2 and 3 > 2.5: stop
    assert read(path).split("\n")[0::2] == questions + [""]
    train = tmp_path / "data"
    (train / "train-easy").mkdir(parents=True)
    (train / "train-hard").mkdir()
    (train / "train-easy/arithmetic__add.txt").write_text(f"{questions[0]}\n1\n")
    (train / "train-hard/arithmetic__add.txt").write_text("What is 1 + 1?\n2\n")
    seen = script.train_questions(str(train), "arithmetic__add")
    assert seen == {questions[0], "What is 1 + 1?"}
    assert script.train_questions(str(train), "comparison__pair") == set()



def test_the_command_runs_itself_again_as_a_module_with_a_fixed_string_hash(
        script, monkeypatch, tmp_path):
    """Started without PYTHONHASHSEED=0, it executes itself again with it, as ``python -m``
    (run as a file, the new process would not find the repository's packages)."""
    calls = []

    def execve(path, argv, env):
        calls.append((path, argv, env["PYTHONHASHSEED"]))
        raise SystemExit(0)

    monkeypatch.setattr(script.os, "execve", execve)
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    argv = ["--out", str(tmp_path / "out"), "--seed", "1"]
    monkeypatch.setattr(script.sys, "argv", ["/repo/experiments/math_heldout_sample.py", *argv])
    with pytest.raises(SystemExit):
        script.main()
    executable = script.sys.executable
    assert calls == [(executable, [executable, "-m", "experiments.math_heldout_sample", *argv],
                      "0")]
    assert not (tmp_path / "out").exists()


def test_modules_picks_names_across_regimes_and_refuses_unknown_ones(script):
    trees = {"interpolate": {"a__x": 1, "a__x_composed": 2, "b__y": 3},
             "extrapolate": {"a__x_big": 4}}
    assert script.select(trees, "a__x") == {"interpolate": {"a__x": 1, "a__x_composed": 2},
                                            "extrapolate": {"a__x_big": 4}}
    assert script.select(trees, "", "a__x,a__x_big") == {"interpolate": {"a__x": 1},
                                                         "extrapolate": {"a__x_big": 4}}
    with pytest.raises(ValueError, match=r"unknown \['a__z'\]; choose from \['a__x', "):
        script.select(trees, "", "a__x,a__z")


def test_training_difficulties_split_the_entropy_range_in_thirds(script):
    """As DeepMind's generate.py makes train-easy/medium/hard: the level-th third."""
    thirds = [script.entropy_range(level)((3.0, 9.0)) for level in range(3)]
    assert thirds == [(3.0, 5.0), (5.0, 7.0), (7.0, 9.0)]
    assert set(script.DIFFICULTIES) <= set(script.REGIMES)


def test_a_training_regime_is_written_in_its_own_folder(script, tmp_path):
    modules = {"train-hard": {"arithmetic__add": add_module}}
    summary = script.generate(modules, str(tmp_path / "out"), 5, 3, log=lambda *_: None)
    assert list(summary) == ["train-hard/arithmetic__add"]
    assert len(read(tmp_path / "out" / "train-hard" / "arithmetic__add.txt").split("\n")) == 11
