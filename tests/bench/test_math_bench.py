"""bench.math_bench: training configurations of the TP-Transformer step side by side, on a
tiny Mathematics folder, written as JSON (examples/s, peak memory, ratio to the baseline)."""

import json
import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]


def write_module(path, count):
    """A module file of ``count`` units-digit questions (question line, answer line)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    numbers = [1000 + 37 * i for i in range(count)]
    path.write_text("".join(f"What is the units digit of {n}?\n{n % 10}\n" for n in numbers))


def test_the_trainer_step_with_a_compiled_loss_beside_the_baseline(tmp_path):
    for folder in ("train-easy", "train-medium", "train-hard", "interpolate"):
        write_module(tmp_path / folder / "numbers__place_value.txt", 40)
    out = tmp_path / "bench.json"
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-m", "bench.math_bench", "--data_dir", str(tmp_path),
         "--configs", "baseline,trainer_jit", "--batch_size", "8", "--batches", "2",
         "--seconds", "0.2", "--repeats", "2", "--json", str(out)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(out.read_text())["configs"]
    assert set(rows) == {"baseline", "trainer_jit"}
    assert rows["baseline"]["ratio_to_baseline"] == 1.0
    assert rows["trainer_jit"]["jit_compile"] == "forward + loss"
    assert all(r["examples_per_second"] > 0 and r["peak_rss_mib"] > 0 and
               len(r["ratio_to_baseline_rounds"]) == 2 for r in rows.values())
