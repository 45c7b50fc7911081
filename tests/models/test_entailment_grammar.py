"""The entailment grammar check: every formula of the dataset is well formed, a
natural-language "p AND q" is not, and the in-graph check agrees with the Python one."""

import pytest

from tpr_keras.models.entailment.entailment_grammar import MAX_DEPTH, is_well_formed

FORMULAS = {"((a&b)>~(c))": True, "( a & b )": True, "~(~(a))": True, "a": True,
            "p AND q": False, "P or Q": False, "": False, " \t": False, "(a)": False,
            "~a": False, "(a&b&c)": False, "((a|b)": False, "a\x00": False, "a->b": False,
            "~(" * MAX_DEPTH + "a" + ")" * MAX_DEPTH: True,
            "~(" * (MAX_DEPTH + 1) + "a" + ")" * (MAX_DEPTH + 1): False}  # too deep


def test_the_python_check():
    assert {f: is_well_formed(f) for f in FORMULAS} == FORMULAS


def test_every_formula_of_the_dataset_is_well_formed(shared_data):
    for name in ("validate.txt", "test_exam.txt", "test_massive.txt"):
        for line in (shared_data / "entailment" / name).read_text().split("\n"):
            if line:
                premise, hypothesis = line.split(",")[:2]
                assert is_well_formed(premise) and is_well_formed(hypothesis), line


@pytest.mark.tensorflow_backend
def test_the_in_graph_check_agrees():
    import tensorflow as tf

    from tpr_keras.export.entailment_grammar import well_formed

    check = tf.function(well_formed, input_signature=[tf.TensorSpec([None], tf.string)])
    assert check(tf.constant(list(FORMULAS))).numpy().tolist() == list(FORMULAS.values())
    assert check(tf.constant([], tf.string)).numpy().tolist() == []
