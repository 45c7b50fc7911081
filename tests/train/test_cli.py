"""The ``train.*`` commands as a new user meets them: ``--help``, errors,
logs redirected to a file, and re-running a finished command."""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
COMMANDS = ("babi", "math", "entailment")
SHARED = ("strategy", "checkpoint_every_steps", "max_train_minutes", "deterministic",
          "verbose", "debug", "tf_logs", "saved_model")


def python(args, cwd, **env):
    environ = {k: v for k, v in os.environ.items()
               if k not in ("TF_CPP_MIN_LOG_LEVEL", "TPR_KERAS_DEBUG", "TPR_KERAS_TF_LOGS")}
    environ.update(PYTHONPATH=str(REPO), **env)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=environ, capture_output=True,
                          text=True, timeout=600)


def accepted_flags(command):
    """Every flag the command accepts, read without running it."""
    import importlib

    from train import cli

    return sorted(cli.command_flags(importlib.import_module(f"train.{command}").command()))


@pytest.mark.parametrize("command", COMMANDS)
def test_help_exits_0_lists_every_flag_grouped_without_tensorflow(command):
    code = ("import runpy, sys; sys.argv = ['train.{0}', '--help']\n"
            "try:\n    runpy.run_module('train.{0}', run_name='__main__')\n"
            "except SystemExit as exit:\n"
            "    print('EXIT', exit.code, 'tensorflow' in sys.modules)").format(command)
    done = python(["-c", code], REPO)
    assert done.stdout.rstrip().endswith("EXIT 0 False"), done.stdout[-500:] + done.stderr
    assert done.stderr == ""
    text = done.stdout
    listed = re.findall(r"^  --(?:\[no\])?(\w+)", text, re.M)
    flags = accepted_flags(command)
    assert sorted(listed) == flags  # each once, nothing hidden, nothing extra
    assert set(SHARED) <= set(listed)
    lines = text.splitlines()
    example = lines.index("", 2) + 1  # under the description
    assert lines[example].startswith(f"Example: python -m train.{command} ")
    # every flag is under a title; the shared ones in their own groups, at the end
    assert lines[example + 2].endswith(":") and lines[example + 3].startswith("  --")
    titles = [line for line in lines if re.match(r"^\S.*:$", line)]
    assert {"Data:", "Model:", "Outputs:"} <= set(titles)
    assert titles[-2].startswith("Run control") and titles[-1].startswith("Terminal output")
    assert "(default auto)" in text and "verbosity" not in listed  # none of absl's own
    assert python(["-m", f"train.{command}", "--help"], REPO).returncode == 0


def test_offline_error_is_one_message_and_debug_gives_the_traceback(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    args = ["-m", "train.babi", "--task", "1", "--data_dir", str(empty), "--model_dir",
            str(tmp_path / "run"), "--download=false"]
    done = python(args, tmp_path)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "en-10k" in errors[0]
    assert "--debug" in done.stderr
    assert len(done.stderr.splitlines()) <= 3, done.stderr
    debug = python([*args, "--debug"], tmp_path)
    assert debug.returncode != 0 and "Traceback" in debug.stderr


def test_usage_error_is_one_line(tmp_path, command_in_process):
    # (in this process: the command's own cli.run; train.babi starts TensorFlow before it
    # reads --task, which a process of its own pays for)
    done = command_in_process("train.babi", ["--task", "42", "--model_dir", tmp_path / "r"])
    assert done.returncode == 2
    assert done.stderr.startswith("error: --task must be 1..20") and "Traceback" not in done.stderr


@pytest.mark.slow
def test_logs_to_a_file_and_rerunning_a_finished_command(tiny_babi_run, tmp_path,
                                                         command_in_process):
    """The shared tiny run, started as from a user's shell with stdout a pipe (as when
    redirected to a file): plain lines, not a bar. Then, on a copy of it, the same command
    again, and again with a larger --epochs, both in this process (``command_in_process``,
    the command's own ``cli.run``: what they print and leave is checked, not their
    process's logging)."""
    first = tiny_babi_run
    assert "\x08" not in first.stdout and "\x1b[" not in first.stdout
    assert "epoch 1/2:" in first.stdout and "ex/s" in first.stdout
    assert len(first.stdout) < 3000, first.stdout
    # No TensorFlow start-up noise (CUDA probing on a CPU-only machine, at error severity).
    assert not re.search(r"^[EWF]\d{4} |cudart_stub|absl::InitializeLog", first.stderr, re.M), \
        first.stderr
    results = json.loads((first.model_dir / "results.json").read_text())
    assert results["stopped"] == "epochs" and results["epochs"] == 2
    model_dir = tmp_path / "run"
    shutil.copytree(first.model_dir, model_dir)
    versions = sorted(os.listdir(model_dir / "export" / "babi"))
    args = list(first.args)
    assert args[args.index("--epochs") + 1] == "2"
    dirs = ["--data_dir", str(first.data_dir), "--model_dir", str(model_dir)]

    again = command_in_process("train.babi", [*args, *dirs])
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Already trained: 2 epochs, test error" in again.stdout
    assert "a larger --epochs" in again.stdout and "Resumed" not in again.stdout
    assert sorted(os.listdir(model_dir / "export" / "babi")) == versions  # no new export

    args[args.index("--epochs") + 1] = "3"
    # (no SavedModel of the third epoch: nothing here reads it)
    more = command_in_process("train.babi", [*args, "--nosaved_model", *dirs])
    assert more.returncode == 0, more.stderr[-3000:]
    # Restarting with more epochs resumes from the checkpoint instead of starting over.
    assert "Resumed from" in more.stdout and "Already trained" not in more.stdout
    results = json.loads((model_dir / "results.json").read_text())
    assert results["epochs"] == 3
    assert results["steps"] == 3 * 17 and [h["epoch"] for h in results["history"]] == [1, 2, 3]


@pytest.mark.slow
def test_a_run_cut_by_the_time_budget_resumes(tiny_babi_cut_run):
    """The shared cut run: cut by ``--max_train_minutes``, then the same command without it
    resumes it to its end."""
    assert "Time budget" in tiny_babi_cut_run.cut_stdout
    results = tiny_babi_cut_run.cut_results
    assert results["stopped"] == "time_budget" and results["steps"] < 2 * 17
    rerun = tiny_babi_cut_run.stdout
    assert "Resumed from" in rerun and "Already trained" not in rerun
    results = json.loads((tiny_babi_cut_run.model_dir / "results.json").read_text())
    assert results["stopped"] == "epochs" and results["steps"] == 2 * 17
