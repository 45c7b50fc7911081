"""tools/report/math_devices.py: the same run on two devices, per step and per hour, beside
the CPU preset run's first epoch."""

import json

from tools.report import math_devices

KEY = "interpolate_exact_match_percent"


def write(path, steps, seconds, backend, curve, final=None, description="A GPU machine"):
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({
        "steps": steps[-1], "parameters": 1000, "train_seconds": sum(seconds) + 10,
        "history": [{"epoch": i + 1, "step": s, "seconds": t, KEY: c}
                    for i, (s, t, c) in enumerate(zip(steps, seconds, curve))],
        "config": {"preset": "small", "batch_size": 128, "backend": backend,
                   "curve_questions": 200},
        "machine": {"description": description},
        "summary": {"interpolate": {"mean": sum(final.values()) / len(final)}} if final else {},
        "interpolate_accuracy_percent": final or {},
        "command": f"python -m train.math --size small --model_dir runs/{backend}"}))


def test_a_row_per_run_then_the_curves_beside_the_reference_first_epoch(tmp_path):
    folder = tmp_path / "results" / "math"
    write(folder / "everyday20-devices" / "gpu" / "results.json", [900], [36.0], "jax",
          [{"a__x": 20.0, "b__y": 40.0}], final={"a__x": 21.0, "b__y": 41.0})
    write(folder / "everyday20" / "tiny-seed0" / "results.json", [450, 900], [1800.0, 1800.0],
          "tensorflow", [{"a__x": 10.0, "b__y": 30.0}, {"a__x": 99.0, "b__y": 99.0}],
          final={"a__x": 0.0, "b__y": 0.0}, description="A CPU thread")
    lines = math_devices.devices_markdown(str(tmp_path)).splitlines()
    # 900 steps of 128 in 36 s: 3,200 examples/s, 90,000 steps an hour
    assert lines[2] == ("| `gpu` | A GPU machine | jax | small (1,000) | 900 | 36 | 3,200 | "
                        "90,000 | 31.0 |")
    # the reference counts its first epoch only: 450 steps in 1,800 s, its curve's mean
    assert lines[3] == ("| `tiny-seed0` | A CPU thread | tensorflow | small (1,000) | 450 | "
                        "1,800 | 32 | 900 | 20.0 (curve) |")
    assert lines[5] == "| module | `gpu` 900 | `gpu` final | `tiny-seed0` 450 |"
    assert lines[7] == "| `a__x` | 20.0 | 21.0 | 10.0 |"
    assert lines[9] == "| **mean** | **30.0** | **31.0** | **20.0** |"
    assert "`python -m train.math --size small --model_dir runs/jax`" in lines[11]


def test_no_run_says_where_they_go(tmp_path):
    assert "results/math/everyday20-devices/" in math_devices.devices_markdown(str(tmp_path))
