"""Validation questions held out of the Mathematics training files
(``tpr_keras.data.mathematics.heldout``) and ``MathSplit.select``."""

import collections

import numpy as np
import pytest

from tpr_keras.data.mathematics import (
    CharVocabulary,
    MathSplit,
    encode_texts,
    hold_out,
    load_sample_split,
)

NAMES = ("arithmetic__add_or_sub", "numbers__place_value")
VOCAB = CharVocabulary.build("What is the units digit of 0123456789 + ?")


def module_split(module, questions, names=NAMES):
    """One module's questions; each answer is the question's last digit."""
    split, unknown = encode_texts(questions, [q[-2] for q in questions], VOCAB,
                                  names.index(module), names)
    assert unknown == 0
    return split


def pairs(split):
    return [(VOCAB.decode(split.question(i)), VOCAB.decode(split.answer(i)),
             split.module_names[split.modules[i]]) for i in range(len(split))]


def questions(split):
    return [question for question, _, _ in pairs(split)]


@pytest.fixture(scope="module")
def train():
    """2,000 additions of numbers below 30 (many repeated) and 600 place-value questions."""
    rng = np.random.default_rng(3)
    add = [f"What is {a} + {b}?" for a, b in rng.integers(0, 30, (2000, 2))]
    place = [f"What is the units digit of {n}?" for n in rng.integers(100, 100000, 600)]
    return MathSplit.concatenate([module_split(NAMES[0], add), module_split(NAMES[1], place)],
                                 NAMES)


def test_held_out_questions_are_never_trained_on(train):
    held = hold_out(train, 50)
    # 50 of each module, at most 5 % of one: 30 of the 600 place-value questions
    assert held.questions == {"arithmetic__add_or_sub": 50, "numbers__place_value": 30}
    validation = pairs(held.validation)
    assert collections.Counter(m for _, _, m in validation) == {
        "arithmetic__add_or_sub": 50, "numbers__place_value": 30}
    assert all(answer == question[-2] for question, answer, _ in validation)  # still aligned
    # no training question has the text of a validation question; the repeated sums made
    # the draw remove more training questions than it held out
    held_texts = set(questions(held.validation))
    assert not held_texts & set(questions(held.train))
    assert held.duplicates_removed["arithmetic__add_or_sub"] > 0
    # everything else is still trained on, as often as in the files
    before = collections.Counter(pairs(train))
    left = collections.Counter(pairs(held.train))
    assert left == {p: n for p, n in before.items() if p[0] not in held_texts}
    assert len(train) == len(held.train) + len(held.validation) + sum(
        held.duplicates_removed.values())


def test_the_same_seed_holds_out_the_same_questions_another_seed_others(train):
    first, again, other = hold_out(train, 50), hold_out(train, 50), hold_out(train, 50, seed=1)
    assert pairs(first.validation) == pairs(again.validation)
    assert pairs(first.train) == pairs(again.train)
    assert set(questions(first.validation)) != set(questions(other.validation))


def test_a_modules_draw_does_not_depend_on_the_other_modules(train):
    place = train.select(train.modules == 1)
    assert pairs(hold_out(place, 50).validation) == [
        p for p in pairs(hold_out(train, 50).validation) if p[2] == "numbers__place_value"]


def test_too_few_questions_to_hold_out_one_is_an_error():
    few = module_split(NAMES[0], [f"What is 1 + {i}?" for i in range(19)])
    with pytest.raises(ValueError, match="no validation question held out.*fewer than 20"):
        hold_out(few, 10)
    assert hold_out(few, 10, max_fraction=0.1).questions == {"arithmetic__add_or_sub": 1}
    with pytest.raises(ValueError, match="positive"):
        hold_out(few, 0)


def test_select_keeps_the_examples_where_the_mask_is_true(train):
    mask = np.random.default_rng(0).random(len(train)) < 0.3
    chosen, taken = train.select(mask), train.take(np.flatnonzero(mask))
    for name in ("question_ids", "question_splits", "answer_ids", "answer_splits", "modules"):
        np.testing.assert_array_equal(getattr(chosen, name), getattr(taken, name))
    assert len(train.select(np.zeros(len(train), bool))) == 0
    with pytest.raises(ValueError, match="mask has shape"):
        train.select(mask[:-1])


def test_a_sample_folder_is_read_module_by_module(tmp_path):
    sample = {"numbers__place_value": [("What is the units digit of 1234?", "4")] * 3,
              "arithmetic__add_or_sub": [("What is 2 + 3?", "5")]}

    def write(folder, modules):
        folder.mkdir(parents=True)
        for module in modules:
            (folder / f"{module}.txt").write_text(
                "".join(f"{q}\n{a}\n" for q, a in sample[module]))

    write(tmp_path / "generated" / "interpolate", sample)  # the generator script's layout
    write(tmp_path / "flat", sample)
    for folder in ("generated", "flat"):
        split, counts, unknown = load_sample_split(tmp_path / folder,
                                                   ["numbers__place_value"], VOCAB, NAMES)
        assert counts == {"numbers__place_value": 3} and unknown == 0
        assert pairs(split) == [("What is the units digit of 1234?", "4",
                                 "numbers__place_value")] * 3
    write(tmp_path / "partial" / "interpolate", ["arithmetic__add_or_sub"])
    with pytest.raises(FileNotFoundError, match="module numbers__place_value"):
        load_sample_split(tmp_path / "partial", NAMES, VOCAB, NAMES)


def test_question_hashes_are_equal_exactly_for_equal_questions_in_any_chunking(train):
    from tpr_keras.data.mathematics.heldout import _question_hashes

    whole, chunked = _question_hashes(train), _question_hashes(train, rows_per_chunk=7)
    np.testing.assert_array_equal(whole, chunked)
    by_text = {}
    for text, value in zip(questions(train), whole.tolist()):
        by_text.setdefault(text, set()).add(value)
    assert all(len(values) == 1 for values in by_text.values())
    assert len({values.pop() for values in by_text.values()}) == len(by_text)
