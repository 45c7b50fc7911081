"""``train.math``'s validation questions (``--validation_source``): what the trainer
validates on, with each source, on both backends' batches; the resume check; ``--help``."""

import json
import os
import pathlib
import subprocess
import sys
import types

import numpy as np
import pytest

from train.tasks.math import MathTask
from train.tasks.math_validation import check_resumed_run, validation_source

REPO = pathlib.Path(__file__).resolve().parents[2]


def task(data_dir, **flags):
    values = dict(init_from=None, modules="numbers__place_value", data_dir=str(data_dir),
                  limit_per_file=None, download=False, module_weights=None,
                  balance_modules=True, validation_source="heldout_train",
                  validation_questions=1000, validation_dir=None, batch_size=32, seed=0,
                  eval_batch_size=8, model_dir=None)
    out = MathTask(types.SimpleNamespace(**(values | flags)))
    out.load_data()
    return out


def lines(path):
    text = path.read_text().splitlines()
    return list(zip(text[0::2], text[1::2]))


def questions_of(split, vocab):
    return [vocab.decode(split.question(i)) for i in range(len(split))]


def validated_questions(math_task, on_jax):
    """The questions of the batches the trainer validates on (``training_data``'s)."""
    _, valid, _ = math_task.training_data(None, on_jax)
    vocab, found = math_task.data.vocab, []
    for features, labels in valid:
        sources = np.asarray(features["source"])
        if on_jax:
            sources = sources[np.asarray(labels["weight"]) > 0]  # weight-0 filler rows
        found += [vocab.decode(row[row > vocab.END_ID]) for row in sources]  # no markers
    return sorted(found)


@pytest.mark.parametrize("on_jax", [False, True], ids=["tensorflow", "jax"])
def test_the_trainer_validates_on_questions_held_out_of_training(tiny_math, on_jax):
    """By default: 6 of the 120 training questions (5 %), none trained on, none from the
    interpolate test file; the same 6 at every load and every --seed."""
    math_task = task(tiny_math)
    record = math_task.validation_record
    assert record["source"] == "heldout_train"
    assert record["questions"] == {"numbers__place_value": 6}
    vocab = math_task.data.vocab
    held = questions_of(math_task.validation, vocab)
    assert validated_questions(math_task, on_jax) == sorted(held)
    trained = set(questions_of(math_task.data.train, vocab))
    assert len(math_task.data.train) == record["train_examples_left"] == 120 - 6 - sum(
        record["duplicates_removed_from_training"].values())
    assert not set(held) & trained
    test_file = {q for q, _ in lines(tiny_math / "interpolate" / "numbers__place_value.txt")}
    assert not set(held) & test_file
    assert questions_of(task(tiny_math).validation, vocab) == held  # fixed seed
    assert questions_of(task(tiny_math, seed=5).validation, vocab) == held  # not --seed's


def test_a_sample_folder_or_the_test_file_validates_when_asked(tiny_math, tmp_path):
    sample = tmp_path / "sample" / "interpolate"
    sample.mkdir(parents=True)
    (sample / "numbers__place_value.txt").write_text(
        "What is the units digit of 4321?\n1\nWhat is the units digit of 77?\n7\n")
    from_dir = task(tiny_math, validation_dir=str(tmp_path / "sample"))
    assert from_dir.validation_record == {"source": "sample_dir", "dir": str(tmp_path / "sample"),
                                          "questions": {"numbers__place_value": 2},
                                          "unknown_characters": 0}
    assert validated_questions(from_dir, False) == ["What is the units digit of 4321?",
                                                    "What is the units digit of 77?"]
    assert len(from_dir.data.train) == 120  # nothing held out of training
    old = task(tiny_math, validation_source="test_interpolate")
    assert old.validation_record == {"source": "test_interpolate",
                                     "questions": {"numbers__place_value": 16}}
    assert validated_questions(old, False) == sorted(
        q for q, _ in lines(tiny_math / "interpolate" / "numbers__place_value.txt"))
    assert len(old.data.train) == 120


def test_conflicting_validation_flags_are_refused():
    def source(name, folder=None):
        return validation_source(types.SimpleNamespace(validation_source=name,
                                                       validation_dir=folder))

    assert source("heldout_train") == "heldout_train"
    assert source("heldout_train", "/sample") == source("sample_dir", "/sample") == "sample_dir"
    with pytest.raises(ValueError, match="two validation sets"):
        source("test_interpolate", "/sample")
    with pytest.raises(ValueError, match="needs|reads --validation_dir"):
        source("sample_dir")


def test_a_run_resumes_only_on_the_questions_it_began_validating_on(tmp_path):
    held = {"source": "heldout_train", "questions": {"m": 6}, "seed": 0}
    test_file = {"source": "test_interpolate", "questions": {"m": 16}}
    check_resumed_run(str(tmp_path / "new"), held)  # a new run: recorded
    assert json.loads((tmp_path / "new" / "validation.json").read_text()) == held
    check_resumed_run(str(tmp_path / "new"), test_file)  # no checkpoint yet: re-recorded
    (tmp_path / "new" / "checkpoints").mkdir()
    (tmp_path / "new" / "checkpoints" / "checkpoint").write_text("")
    with pytest.raises(ValueError, match="validates on test_interpolate.*16 questions"):
        check_resumed_run(str(tmp_path / "new"), held)
    check_resumed_run(str(tmp_path / "new"), test_file)
    # a run begun before validation.json existed validated on the test file
    os.remove(tmp_path / "new" / "validation.json")
    with pytest.raises(ValueError, match="Add --validation_source test_interpolate"):
        check_resumed_run(str(tmp_path / "new"), held)
    check_resumed_run(str(tmp_path / "new"), test_file)
    assert json.loads((tmp_path / "new" / "validation.json").read_text()) == test_file


def test_help_names_the_validation_source():
    done = subprocess.run([sys.executable, "-m", "train.math", "--help"], cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    text = " ".join(done.stdout.split())
    assert "Validation (chooses the kept epoch):" in text
    assert ("--validation_source={heldout_train|sample_dir|test_interpolate} "
            "(default heldout_train)") in text
    assert "test_interpolate: the interpolate/ test files, which then choose the epoch" in text
    assert "--validation_questions=int (default 1000)" in text
    assert "--validation_dir=string" in text
