"""tools/report/pages.py: the committed results/*.md equal what the JSON gives; the marker
rewriting."""

import io
import os
import subprocess
import sys

import pytest

from tools.report import pages as report

ROOT = report.ROOT
BLOCKS = {"one": lambda root: "| a |\n|---|\n| 1 |", "two": lambda root: f"root {root}"}

PAGE = """# Title

Prose before.

<!-- report:one -->
| a |
|---|
| 0 |
<!-- /report:one -->

Prose between, with a marker-like word: report:one.

<!-- report:two -->
stale
<!-- /report:two -->
Prose after.
"""


def _page(tmp_path, text=PAGE, name="page.md"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_committed_results_equal_what_the_json_gives():
    """``python -m tools.report --check`` on this checkout: no block differs."""
    pytest.importorskip("scipy")  # the math seed table's p-values need it (analysis extra)
    out = io.StringIO()
    differ = report.run(ROOT, report.default_files(ROOT), check=True, out=out)
    assert differ == 0, out.getvalue()


def test_every_block_is_placed_in_some_results_file():
    from tools.report.blocks import BLOCKS as real

    placed = set()
    for path in report.default_files(ROOT):
        with open(path, encoding="utf-8") as f:
            placed |= {name for name, _, _ in report.blocks_of(f.read(), path)}
    assert placed == set(real)


def test_check_reports_a_changed_block_with_a_diff_and_rewrites_nothing(tmp_path):
    path = _page(tmp_path)
    out = io.StringIO()
    assert report.run(str(tmp_path), [str(path)], check=True, blocks=BLOCKS, out=out) == 1
    diff = out.getvalue()
    assert "--- page.md (committed)" in diff and "+++ page.md (from the JSON)" in diff
    assert "-| 0 |\n+| 1 |\n" in diff and "-stale\n" in diff
    assert path.read_text(encoding="utf-8") == PAGE


def test_rewrite_replaces_only_the_text_between_markers(tmp_path):
    path = _page(tmp_path)
    assert report.run(str(tmp_path), [str(path)], check=False, blocks=BLOCKS,
                      out=io.StringIO()) == 1
    assert path.read_text(encoding="utf-8") == PAGE.replace("| 0 |", "| 1 |").replace(
        "stale", f"root {tmp_path}")
    # Regenerated, the page is stable: the check passes and a second run changes nothing.
    assert report.run(str(tmp_path), [str(path)], check=True, blocks=BLOCKS,
                      out=io.StringIO()) == 0


def test_a_missing_end_marker_is_an_error_naming_the_file(tmp_path):
    path = _page(tmp_path, PAGE.replace("<!-- /report:two -->\n", ""), name="broken.md")
    with pytest.raises(report.ReportError, match=r"broken\.md: block 'two' has no end marker"):
        report.run(str(tmp_path), [str(path)], check=True, blocks=BLOCKS, out=io.StringIO())


@pytest.mark.parametrize("text, message", [
    (PAGE.replace("<!-- report:one -->\n", ""), r"page\.md:\d+: end marker of 'one' without"),
    (PAGE.replace("<!-- /report:one -->", "<!-- report:two -->"), r"begins inside block 'one'"),
    (PAGE.replace("report:two", "report:three"), r"page\.md: unknown block 'three'"),
])
def test_malformed_markers_are_errors_naming_the_file(tmp_path, text, message):
    path = _page(tmp_path, text)
    with pytest.raises(report.ReportError, match=message):
        report.run(str(tmp_path), [str(path)], check=True, blocks=BLOCKS, out=io.StringIO())


def test_the_command_line_exits_1_on_a_stale_copy_and_0_on_the_committed_file(tmp_path):
    """The real blocks and JSON: a copy of results/entailment.md with one number changed."""
    source = os.path.join(ROOT, "results", "entailment.md")
    with open(source, encoding="utf-8") as f:
        text = f.read()
    assert "| TPRU, 32 roles | 75.6 |" in text
    stale = _page(tmp_path, text.replace("| TPRU, 32 roles | 75.6 |", "| TPRU, 32 roles | 99.9 |"),
                  name="entailment.md")
    command = [sys.executable, "-m", "tools.report", "--check"]
    done = subprocess.run([*command, str(stale)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    assert "-| TPRU, 32 roles | 99.9 |" in done.stdout
    assert "+| TPRU, 32 roles | 75.6 |" in done.stdout
    done = subprocess.run([*command, source], cwd=ROOT, capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, ""), done.stdout + done.stderr
    broken = _page(tmp_path, text.replace("<!-- /report:entailment-table1 -->", ""),
                   name="broken.md")
    done = subprocess.run([*command, str(broken)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 2 and "broken.md" in done.stderr


def test_a_continued_preset_names_its_parent_its_commit_and_its_hours(tmp_path):
    import json

    from tools.report.presets import parent_lines
    (tmp_path / "results" / "p").mkdir(parents=True)
    (tmp_path / "results" / "p" / "results.json").write_text(json.dumps({"train_seconds": 7200}))
    parent = {"preset": "focus", "weights_sha256": "b692" + "0" * 60, "commit": "f765745aa",
              "at_commit": "20d3540bb", "results_json": "results/p/results.json",
              "command": "python -m train.math --data_dir=DIR --steps 80000"}
    text = "\n".join(parent_lines(str(tmp_path), parent))
    assert text.startswith("Continued from `focus` as it was at `20d3540` (weights SHA-256 "
                           "`b69200000000…`), itself trained 2.0 h, code at `f765745`, by:")
    assert "```bash\npython -m train.math --data_dir=DIR --steps 80000\n```" in text
    # a parent whose results.json is not committed: no hours, even where a run's folder
    # holds it on this machine (runs/ is ignored: the block reads alike on every checkout);
    # a preset from scratch: nothing
    (tmp_path / "runs" / "p").mkdir(parents=True)
    (tmp_path / "results" / "p" / "results.json").rename(tmp_path / "runs" / "p" / "results.json")
    in_runs = {**parent, "results_json": "runs/p/results.json"}
    assert "itself trained, code at" in "\n".join(parent_lines(str(tmp_path), in_runs))
    assert "itself trained, code at" in "\n".join(parent_lines(str(tmp_path), parent))
    assert parent_lines(str(tmp_path), None) == []


def test_recorded_commands_are_shown_from_the_repository_root():
    from tools.report.common import portable_command
    ran = ("python -m train.babi --seed=0 --data_dir=/work/main/../shared/data/babi "
           "--model_dir=/home/u/tpr-keras/runs/presets/x/seed0 --max_train_minutes=60")
    assert portable_command(ran) == (
        "python -m train.babi --seed=0 --data_dir=../shared/data/babi "
        "--model_dir=runs/presets/x/seed0 --max_train_minutes=60")
    assert portable_command("--data_dir ../shared/data/babi") == "--data_dir ../shared/data/babi"


def test_without_the_analysis_extra_the_command_says_which_extra_it_needs(monkeypatch,
                                                                          capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "scipy" else real(name, *a))
    assert report.main(["--check"]) == 2
    assert "needs the 'analysis' extra" in capsys.readouterr().err


def test_a_routed_preset_shows_each_decoders_training_then_the_joining_command(tmp_path):
    from tools.report.presets import trained_cell, training_lines

    def part(seed, hours, command, parent=None):
        return {"preset": f"p{seed}", "weights_sha256": f"{seed}" * 64, "training": {
            "seed": seed, "train_seconds": hours * 3600, "steps": 1000 * seed,
            "source": {"commit": f"{seed}" * 40}, "command": command, "parent": parent}}

    parent = {"preset": "focus", "weights_sha256": "b" * 64, "commit": "c" * 40,
              "at_commit": "d" * 40, "command": "python -m train.math --steps 80000"}
    training = {"command": "python -m train.route_presets --default focus", "parameters": 2000,
                "source": {"commit": "e" * 40}, "train_seconds": 3.5 * 3600, "parts": {
                    "default": part(0, 2.5, "python -m train.math --seed 0"),
                    "comparison__pair": part(1, 1.0, "python -m train.math --seed 1", parent),
                    "numbers__gcd": part(2, 0.5, "python -m train.math --seed 2", parent)}}
    assert trained_cell(training) == "3 decoders (seeds 0, 1, 2), 3.5 h in their last runs"
    text = "\n".join(training_lines(str(tmp_path), training))
    order = ["**default** decoder, answering every question no other decoder takes: `p0`",
             "python -m train.math --seed 0",
             "**comparison__pair** decoder, answering the questions worded as "
             "`comparison__pair`: `p1` (weights SHA-256 `111111111111…`), trained 1.0 h "
             "(1,000 steps, code at `1111111`)",
             "Continued from `focus` as it was at `ddddddd`", "python -m train.math --steps 80000",
             "python -m train.math --seed 1",
             # the same parent again: named in the decoder's paragraph, its training not
             # repeated
             "(2,000 steps, code at `2222222`); continued from `focus` as it was at `ddddddd` "
             "(weights SHA-256 `bbbbbbbbbbbb…`, trained as shown above) by:\n\n```bash\n"
             "python -m train.math --seed 2",
             "joined into one preset (2,000 parameters; code at `eeeeeee`) by:",
             "python -m train.route_presets --default focus"]
    positions = [text.index(line) for line in order]
    assert positions == sorted(positions)
    assert text.count("python -m train.math --steps 80000") == 1
    assert trained_cell({"seed": 3, "epochs": 5, "train_seconds": 1800}) == (
        "seed 3, 5 epochs, 0.5 h of training")
