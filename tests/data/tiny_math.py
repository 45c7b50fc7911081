"""A tiny Mathematics Dataset folder for the tests of tpr_keras.data.mathematics: a few
question/answer pairs per module in each of the five regimes, written as the real
``mathematics_dataset-v1.0`` lays them out.

Used by ``tests/data/test_mathematics*.py``; :func:`random_split` also by the tests of the
length buckets elsewhere.
"""

from pathlib import Path

import numpy as np

MODULES = {
    # regime -> module -> examples (question, answer)
    "train-easy": {
        "numbers__place_value": [("What is the units digit of 12?", "2"), ("Digit of 7?", "7")],
        "arithmetic__add_or_sub": [("1+1?", "2")],
        "arithmetic__mul": [("2*3?", "6")],
    },
    "train-medium": {
        "numbers__place_value": [("What is the tens digit of 345?", "4")],
        "arithmetic__add_or_sub": [("10 - 4?", "6")],
    },
    "train-hard": {
        "numbers__place_value": [("Tens digit of 9012?", "1"), ("Units of 88?", "8"),
                                 ("Hundreds of 123?", "1")],
        "arithmetic__mul": [("12*12?", "144")],
    },
    "interpolate": {
        "numbers__place_value": [("Units of 5?", "5")],
        "arithmetic__add_or_sub": [("3+4?", "7")],
        "arithmetic__mul": [("3*4?", "12")],
    },
    "extrapolate": {
        "numbers__place_value_big": [("Units of 123456789?", "9")],
        "arithmetic__add_or_sub_big": [("1000000+1?", "1000001")],
        "arithmetic__mul_big": [("1000*1000?", "1000000")],
    },
}


def make_math_dir(root: Path, modules=MODULES) -> Path:
    for regime, files in modules.items():
        (root / regime).mkdir(parents=True, exist_ok=True)
        for module, pairs in files.items():
            text = "".join(f"{q}\n{a}\n" for q, a in pairs)
            (root / regime / f"{module}.txt").write_text(text, encoding="utf-8")
    return root


def random_split(size, question_lengths, answer_lengths, seed=0):
    """A ``MathSplit`` of ``size`` random questions of one module, their lengths drawn
    uniformly from the ``[low, high)`` pairs ``question_lengths`` and ``answer_lengths``."""
    from tpr_keras.data.mathematics import MathSplit

    rng = np.random.default_rng(seed)
    q_lengths, a_lengths = rng.integers(*question_lengths, size=size), rng.integers(
        *answer_lengths, size=size)
    return MathSplit(
        question_ids=rng.integers(4, 40, size=int(q_lengths.sum())).astype(np.int32),
        question_splits=np.concatenate([[0], np.cumsum(q_lengths)]),
        answer_ids=rng.integers(4, 40, size=int(a_lengths.sum())).astype(np.int32),
        answer_splits=np.concatenate([[0], np.cumsum(a_lengths)]),
        modules=np.zeros(size, np.int32), module_names=("m0",))
