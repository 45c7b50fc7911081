"""The authors-step tables (tools/report/bench.py): one row per configuration from a
bench.math_authors_step JSON (its median ratio also per useful FLOP, for sets of other
questions), and a caption that names the questions the batches came from."""

import json

from tools.report import bench


def write(root, modules):
    path = root / "results" / "bench" / "step.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    rounds = {"authors": [1.0, 1.0], "tensorflow_grouped5x2": [3.4, 3.2],
              "tensorflow_buckets_grouped2x2": [4.0, 3.6]}
    path.write_text(json.dumps({
        "command": "python -m bench.math_authors_step --modules all", "modules": modules,
        "preset": "tiny", "batch_size": 128, "batches": 24, "repeats": 2, "seconds": 5.0,
        "load_average_start": 1.25, "cpu_vector_extension": "AVX2", "baseline": "authors",
        "batch_sets": {"same": {"mean_source_length": 158.04, "mean_target_length": 28.9,
                                "useful_flops_per_example": 60e6},
                       "buckets": {"mean_source_length": 72.6, "mean_target_length": 26.6,
                                   "useful_flops_per_example": 45e6}},
        "configs": {name: {"batches": "buckets" if "buckets" in name else "same",
                           "peak_rss_mib": 900.0,
                           "cpu": {"examples_per_second": 116.4 * r[0],
                                   "ratio_to_baseline_rounds": r,
                                   "fraction_of_matmul_peak": 0.26 * r[0]}}
                    for name, r in rounds.items()}}))


def test_rows_and_a_caption_naming_the_modules_and_padded_lengths(tmp_path):
    write(tmp_path, "all")
    lines = bench.authors_step_block("step")(str(tmp_path)).splitlines()
    assert lines[2] == "| `authors` | same | 116 | 1 | 1.00× | 1.00× | 26% | 900 |"
    assert lines[3] == ("| `tensorflow_grouped5x2` | same | 396 | 3.40, 3.20 | 3.30× | 3.30× "
                        "| 88% | 900 |")
    # the bucketed set's examples are 0.75 of the same set's work: 3.80x is 2.85x of it
    assert lines[4] == ("| `tensorflow_buckets_grouped2x2` | buckets | 466 | 4.00, 3.60 | "
                        "3.80× | 2.85× | 104% | 900 |")
    assert lines[-1].startswith("Questions of all 56 modules (padded lengths: same 158/29, "
                                "buckets 73/27); `tiny`, batch 128, 24 batches per set")
    assert "one thread each of a CPU with AVX2; load average 1.2 at the start" in lines[-1]
    write(tmp_path, "numbers__gcd,numbers__lcm")
    assert "Questions of 2 modules (" in bench.authors_step_block("step")(str(tmp_path))
