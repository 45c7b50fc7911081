"""A run becomes a preset (train.save_preset), is re-checked (train.evaluate) and served
(train.export), end to end on a tiny bAbI task; and the commands' errors on bad presets.
The commands run in this process (``command_in_process``: their own ``cli.run``), but the
export, whose test reads its process's logging."""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from tpr_keras.provenance import shareable_command

REPO = pathlib.Path(__file__).resolve().parents[2]


def python(args, cwd):
    environ = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, *args], cwd=cwd, env=environ, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def tiny_babi(tiny_babi_cut_run):
    """The tiny task-1 folder the preset's run trained on."""
    return tiny_babi_cut_run.data_dir


@pytest.fixture(scope="module")
def tiny_preset(tiny_babi_cut_run, tiny_babi, tmp_path_factory, command_in_process):
    """A 2-epoch task-1 run on tiny data (the shared run that its time budget cut and a
    rerun finished), saved as a preset. It drops ``. ? !`` from the text
    (``--keep_sentence_ends=false``, MemN2N joint_paper's reading), so that the preset,
    its re-check and its export are seen to read text as the run did; the shipped presets
    check the default reading."""
    work = tmp_path_factory.mktemp("preset")
    shutil.copytree(tiny_babi_cut_run.model_dir, work / "run")
    results = json.loads((work / "run" / "results.json").read_text())
    assert results["command"].startswith("python -m train.babi --task 1 ")
    saved = command_in_process("train.save_preset", [
        "--model_dir", work / "run", "--output", work / "preset", "--data_dir", tiny_babi,
        "--sample", "7", "--description", "tiny test run", "--allow_dirty"])
    assert saved.returncode == 0, saved.stderr[-3000:]
    assert "Recomputed the run's table (1 number(s)): all within 0.05 points." in saved.stdout
    return work, results


@pytest.mark.slow
def test_a_run_from_a_dirty_tree_is_refused_as_a_preset(tiny_preset, tiny_babi, tmp_path,
                                                        command_in_process):
    work, results = tiny_preset
    run = tmp_path / "run"
    (run / "export").mkdir(parents=True)
    for name in ("model.keras", "vocab.txt"):
        (run / "export" / name).write_bytes((work / "run" / "export" / name).read_bytes())
    (run / "results.json").write_text(json.dumps(
        dict(results, source={"commit": "0123456789" * 4, "dirty": True})))
    saved = command_in_process("train.save_preset", [
        "--model_dir", run, "--output", tmp_path / "preset", "--data_dir", tiny_babi])
    assert saved.returncode != 0
    assert "uncommitted changes (commit 0123456, dirty)" in saved.stderr
    assert not (tmp_path / "preset").exists()


@pytest.mark.slow
def test_preset_records_the_run_and_its_tables(tiny_preset, tiny_babi):
    work, results = tiny_preset
    meta = json.loads((work / "preset" / "metadata.json").read_text())
    assert meta["task"] == "babi" and meta["class_name"] == "TPRRNN"
    # the run's command, its data folder a placeholder no user's clone lacks
    assert meta["training"]["command"] == shareable_command(results["command"])
    assert "--data_dir=DIR " in meta["training"]["command"]
    assert str(tiny_babi) not in meta["training"]["command"]
    assert meta["training"]["seed"] == 0 and meta["training"]["epochs"] == 2
    assert meta["training"]["source"] == results["source"]
    assert "cores" in meta["training"]["machine"]
    table = meta["evaluation"]["table"]
    assert table["test_error_percent"] == pytest.approx(results["test_error_percent"], abs=1e-4)
    assert table["questions"] == {"1": 60}  # 20 stories x 3 questions
    assert meta["evaluation_options"] == {"tasks": [1], "max_story_sentences": 130,
                                          "keep_sentence_ends": False}
    assert meta["serving_options"] == {"max_story_sentences": 130, "keep_sentence_ends": False}
    assert results["config"]["max_story_sentences"] == {"1": 70}
    assert results["config"]["keep_sentence_ends"] is False
    vocab = (work / "preset" / "assets" / "vocab.txt").read_text().split("\n")
    assert "mary" in vocab and "." not in vocab and "?" not in vocab
    assert meta["evaluation_sample"]["limit"] == 7
    assert meta["evaluation_sample"]["table"]["questions"] == {"1": 7}
    files = meta["data"]["files_sha256"]
    assert sorted(files) == ["qa1_single-supporting-fact_test.txt",
                             "qa1_single-supporting-fact_train.txt"]  # relative to en-10k/
    assert len(files["qa1_single-supporting-fact_test.txt"]) == 64
    assert (work / "preset" / "assets" / "vocab.txt").read_text() == (
        work / "run" / "export" / "vocab.txt").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("sample", [False, True])
def test_evaluate_reproduces_the_recorded_table(tiny_preset, tiny_babi, sample,
                                                command_in_process):
    work, _ = tiny_preset
    out = work / f"evaluate-{sample}.json"
    done = command_in_process("train.evaluate", [
        "--preset", work / "preset", "--data_dir", tiny_babi, "--download=false", "--json",
        out] + (["--sample"] if sample else []))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "All 3 numbers agree with the recorded table within 0.05 points." in done.stdout
    report = json.loads(out.read_text())
    assert report["measured"]["questions"] == {"1": 7 if sample else 60}
    assert report["differences"] == []


@pytest.mark.slow
def test_evaluate_fails_when_a_number_moves(tiny_preset, tiny_babi, tmp_path,
                                            command_in_process):
    work, _ = tiny_preset
    # The same weights, but a recorded table that says something else: exit 1, row named.
    copy = tmp_path / "preset"
    subprocess.run(["cp", "-r", str(work / "preset"), str(copy)], check=True)
    meta = json.loads((copy / "metadata.json").read_text())
    meta["evaluation"]["table"]["test_error_percent"]["1"] += 0.5
    (copy / "metadata.json").write_text(json.dumps(meta))
    done = command_in_process("train.evaluate", [
        "--preset", copy, "--data_dir", tiny_babi, "--download=false"])
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "task 1 test error %" in done.stdout and "<- differs by more than 0.05" in done.stdout


@pytest.mark.slow
def test_evaluate_warns_when_the_test_files_are_not_the_recorded_ones(tiny_preset, tiny_babi,
                                                                     tmp_path,
                                                                     command_in_process):
    work, _ = tiny_preset
    data = tmp_path / "babi"
    subprocess.run(["cp", "-r", str(tiny_babi), str(data)], check=True)
    test_file = data / "en-10k" / "qa1_single-supporting-fact_test.txt"
    lines = test_file.read_text().splitlines(keepends=True)
    test_file.write_text("".join(lines[:-9]))  # the last story's three questions are gone
    done = command_in_process("train.evaluate", [
        "--preset", work / "preset", "--data_dir", data, "--download=false"])
    assert "warning: 1 data file(s) under" in done.stdout
    assert "qa1_single-supporting-fact_test.txt" in done.stdout


@pytest.mark.slow
def test_evaluate_names_a_missing_test_file(tiny_preset, tmp_path, command_in_process):
    work, _ = tiny_preset
    empty = tmp_path / "en-10k"
    empty.mkdir()
    (empty / "qa1_single-supporting-fact_train.txt").write_text("")
    done = command_in_process("train.evaluate", [
        "--preset", work / "preset", "--data_dir", tmp_path, "--download=false"])
    assert done.returncode == 1
    assert "qa1_*_test.txt" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_export_writes_the_tf_serving_layout(tiny_preset, tmp_path):
    work, _ = tiny_preset
    done = python(["-m", "train.export", "--preset", str(work / "preset"), "--export_dir",
                   str(tmp_path / "exports")], work)
    assert done.returncode == 0, done.stderr[-3000:]
    version = tmp_path / "exports" / "babi" / "1"
    assert (version / "saved_model.pb").is_file()
    assert (version / "assets.extra" / "tf_serving_warmup_requests").is_file()
    assert "--model_base_path=" + str(tmp_path / "exports" / "babi") in done.stdout
    # the served text drops ". ?" as the run's data did: no word of this story is unknown
    import tensorflow as tf

    tokenize = tf.saved_model.load(str(version)).signatures["tokenize"]
    ids = tokenize(story=tf.constant(["Mary went to the kitchen. John went to the office."]),
                   question=tf.constant(["Where is Mary?"]))
    story, question = ids["story_ids"].numpy(), ids["question_ids"].numpy()
    assert story.shape[1] == 2 and (story[:, :, :5] > 1).all() and not story[:, :, 5:].any()
    assert (question[:, :3] > 1).all() and not question[:, 3:].any()
    # TensorFlow's INFO lines (absl's "I1127 hh:mm:ss ... file.py:N]") only with --tf_logs
    info = re.compile(r"^I\d{4} [\d:.]+ +\d+ \S+\.py:\d+\]", re.M)
    assert not info.search(done.stderr), done.stderr[-2000:]
    loud = python(["-m", "train.export", "--preset", str(work / "preset"), "--export_dir",
                   str(tmp_path / "loud"), "--tf_logs"], work)
    assert loud.returncode == 0 and info.search(loud.stderr)


def test_bad_presets_are_one_error_and_write_nothing(tmp_path, command_in_process):
    unknown = command_in_process("train.export", [
        "--preset", "nope", "--export_dir", tmp_path / "exports"])
    assert unknown.returncode == 1
    assert "Unknown preset 'nope'. Trained presets:" in unknown.stderr
    assert not (tmp_path / "exports").exists()
    missing = command_in_process("train.evaluate", [])
    assert missing.returncode == 2 and "--preset is required" in missing.stderr


@pytest.mark.slow
def test_a_damaged_preset_is_refused_by_both_commands(tiny_preset, tiny_babi, tmp_path,
                                                       command_in_process):
    work, _ = tiny_preset
    copy = tmp_path / "preset"
    subprocess.run(["cp", "-r", str(work / "preset"), str(copy)], check=True)
    weights = copy / "model.weights.h5"
    weights.write_bytes(weights.read_bytes()[:1000])
    for module, args in (("train.evaluate", ["--data_dir", tiny_babi]),
                         ("train.export", ["--export_dir", tmp_path / "exports"])):
        done = command_in_process(module, [*args, "--preset", copy])
        assert done.returncode == 1
        assert f"{weights}: SHA-256" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "exports").exists()


def test_export_of_a_keras_model_that_is_no_tpr_keras_model_is_an_error(tmp_path):
    """``train.export --keras_model`` picks the exporter from the model's class; any other
    model is refused, never exported as some family."""
    import keras

    from train.export import export_keras_model

    inputs = keras.Input((3,))
    path = tmp_path / "model.keras"
    keras.Model(inputs, keras.layers.Dense(2)(inputs)).save(path)
    with pytest.raises(ValueError, match="a Functional, not a tpr-keras model"):
        export_keras_model(str(path), str(tmp_path / "exports"))
    assert not (tmp_path / "exports").exists()
