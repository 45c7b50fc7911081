"""The §7 systematic-generalisation builder on tiny generated task files."""

import json
import re

import numpy as np
import pytest

from tpr_keras.data import babi
from tpr_keras.data.babi import systematic as sg

TASKS = (1, 6)
NAMES = {"Alex": 2, "Logan": 1}


@pytest.fixture()
def source(tmp_path, babi_task1_writer):
    root = tmp_path / "en-10k"
    root.mkdir()
    for task, name in ((1, "single-supporting-fact"), (6, "yes-no-questions")):
        babi_task1_writer(root / f"qa{task}_{name}_train.txt", 60, task)
        babi_task1_writer(root / f"qa{task}_{name}_test.txt", 20, 100 + task)
    return root


def build(source, out, seed=0):
    return sg.build(source, out, seed=seed, tasks=TASKS, pairs=20, new_names=NAMES)


def test_names_tasks_and_the_question_share(source, tmp_path):
    manifest = build(source, tmp_path / "out")
    trained = manifest["trained_on"]
    assert sorted(trained["Alex"]) == [1, 6] and len(trained["Logan"]) == 1
    assert set(trained["Logan"]) <= set(trained["Alex"])
    for name in NAMES:
        for task in TASKS:
            path = next((tmp_path / "out" / "systematic" / name).glob(f"qa{task}_*_test.txt"))
            samples = babi.parse_babi_file(path)
            assert len(samples) == 20
            asked = sum(name.lower() in s.question for s in samples)
            assert asked == 4  # 20 % of 20: the new name is in the question
            for s in samples:  # every story holds the new name, none of the name it replaced
                words = {w for sentence in s.story for w in sentence} | set(s.question)
                assert name.lower() in words
    # Training stories with a new name exist exactly for the (name, task) pairs trained on.
    for task in TASKS:
        train = next((tmp_path / "out" / "en-10k").glob(f"qa{task}_*_train.txt")).read_text()
        for name in NAMES:
            assert (re.search(rf"\b{name}\b", train) is not None) == (task in trained[name])


def test_no_test_story_in_training_and_originals_kept(source, tmp_path):
    build(source, tmp_path / "out")
    for task in TASKS:
        original_train = next(source.glob(f"qa{task}_*_train.txt"))
        built_train = next((tmp_path / "out" / "en-10k").glob(f"qa{task}_*_train.txt"))
        original = babi.parse_babi_file(original_train)
        built = babi.parse_babi_file(built_train)
        assert len(built) == len(original) + 20 * sum(task in t for t in
                                                      sg.training_tasks(0, TASKS, NAMES).values())
        # every original question is still there, in order
        kept = [s for s in built if not ({"alex", "logan"} & set(s.question) or any(
            {"alex", "logan"} & set(sentence) for sentence in s.story))]
        assert [(s.story, s.question, s.answer) for s in kept] == \
            [(s.story, s.question, s.answer) for s in original]
        stories = {tuple(map(tuple, s.story)) for s in built}
        for name in NAMES:
            test_file = next((tmp_path / "out" / "systematic" / name).glob(f"qa{task}_*"))
            for s in babi.parse_babi_file(test_file):
                assert tuple(map(tuple, s.story)) not in stories


def test_deterministic_and_seed_dependent(source, tmp_path):
    def files(out):
        return {p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*.txt"))}

    build(source, tmp_path / "a", seed=3)
    build(source, tmp_path / "b", seed=3)
    build(source, tmp_path / "c", seed=4)
    assert files(tmp_path / "a") == files(tmp_path / "b")
    assert files(tmp_path / "a") != files(tmp_path / "c")
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["seed"] == 3 and manifest["pairs"] == 20


@pytest.mark.filterwarnings("ignore:task .* holds")
def test_the_main_loader_reads_the_result(source, tmp_path):
    build(source, tmp_path / "out")
    data = babi.load_babi(tmp_path / "out", tasks=TASKS, download=False)
    assert {"alex", "logan"} <= set(data.vocab.tokens)
    assert len(data.train) + len(data.valid) == 2 * 180 + 20 * 3


def test_supporting_facts_are_renumbered(tmp_path):
    lines = ["1 Mary went to the office.", "2 John went to the garden.",
             "3 Where is Mary? \toffice\t1", "4 Mary moved to the hallway.",
             "5 Where is Mary? \thallway\t4"]
    path = tmp_path / "qa1_support.txt"
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    second = sg.read_questions(path)[1]
    assert second.statements == ("Mary went to the office.", "John went to the garden.",
                                 "Mary moved to the hallway.")
    assert second.question.support == (3,)
    renamed = sg.rename(second, "Mary", "Alex")
    assert sg.story_lines(renamed)[-1] == "4 Where is Alex? \thallway\t3"
    # The first question's story names only John besides Mary (who is asked about): a
    # story-only pair must rename John; with no such name anywhere it cannot be made.
    first = sg.read_questions(path)[:1]
    pair = sg.sample_pairs(first, "Alex", 1, np.random.default_rng(0), in_question=0.0)[0]
    assert pair.statements[1] == "Alex went to the garden." and "Mary" in pair.question.text
    lonely = tmp_path / "qa1_lonely.txt"
    lonely.write_text("1 Mary went to the office.\n2 Where is Mary? \toffice\t1\n")
    with pytest.raises(ValueError, match="no question fits"):
        sg.sample_pairs(sg.read_questions(lonely), "Alex", 5, np.random.default_rng(0),
                        in_question=0.0)
