"""bench.math_bench: a training configuration of the TP-Transformer step timed in rounds on
a tiny Mathematics folder, written as JSON (examples/s, peak memory, ratio to the baseline).
The bench runs in the test process (its ``main``, on its command line)."""

import json
import sys

from bench import math_bench


def write_module(path, count):
    """A module file of ``count`` units-digit questions (question line, answer line)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    numbers = [1000 + 37 * i for i in range(count)]
    path.write_text("".join(f"What is the units digit of {n}?\n{n % 10}\n" for n in numbers))


def test_the_trainer_step_with_a_compiled_loss_runs_and_is_written(tmp_path, monkeypatch):
    """One configuration (the one whose compiled loss had stopped working) is its own
    baseline: the side-by-side rounds, their ratios and the JSON, at one model's cost."""
    for folder in ("train-easy", "train-medium", "train-hard", "interpolate"):
        write_module(tmp_path / folder / "numbers__place_value.txt", 40)
    out = tmp_path / "bench.json"
    monkeypatch.setattr(sys, "argv", [
        "bench/math_bench.py", "--data_dir", str(tmp_path), "--configs", "trainer_jit",
        "--batch_size", "8", "--batches", "2", "--seconds", "0.2", "--repeats", "2",
        "--json", str(out)])
    math_bench.main()  # (a failure raises)
    rows = json.loads(out.read_text())["configs"]
    assert set(rows) == {"trainer_jit"}
    row = rows["trainer_jit"]
    assert (row["jit_compile"], row["trainer_step"]) == ("forward + loss", True)
    assert row["ratio_to_baseline_rounds"] == [1.0, 1.0]
    assert row["examples_per_second"] > 0 and row["peak_rss_mib"] > 0
    assert len(row["examples_per_second_rounds"]) == 2
