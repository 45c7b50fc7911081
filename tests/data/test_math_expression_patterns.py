"""Expression rules: a wide module's questions recognised by their shape, in Python and in
the graph alike."""

import collections
import re

import pytest
import tensorflow as tf

from tpr_keras.data.mathematics import ModuleTemplates, question_template
from tpr_keras.data.mathematics.expression_patterns import EXPRESSION_PATTERNS

SUM = "arithmetic__add_sub_multiple"
# The module's four openings and its bare form; nested, negated parentheses.
SUMS = ["What is 4 - (-2 - 7) + 1?", "What is the value of 1 + 2 + 3 - 4?",
        "Calculate -(4 - 5) + 2 - (-3 + 1).", "Evaluate (0 - (2 - 3)) + 5 + 6.",
        "-3 + 2 - (4 + 9)", "((1 - 2) + 3) - 4 + 5.5"]
NOT_SUMS = ["What is 4 - 2?",  # two numbers: arithmetic__add_or_sub's
            "Calculate 4 - 2 + 1?",  # "Calculate" ends with "."
            "What is 4 - 2 + 1.",  # and "What is" with "?"
            "What is 4*2 + 1 - 3?", "Evaluate (6/3) - 1 + 2.",  # arithmetic__mixed
            "Solve 3*x + 2 - 1 = 11 for x.", "4 -2 + 1 - 3",  # no space: not the generator's
            "Work out 4 - 2 + 1 - 3.", "Sort 4, -2, 1."]
PRODUCT = "arithmetic__mul_div_multiple"
# The module's openings, nested parentheses, negative numbers in parentheses.
PRODUCTS = ["What is 1*(-344)/8*57/57?", "Calculate ((-2)/(4/(-24)*-7))/((-591)/6895).",
            "Evaluate 26/(-13)*(-1)/(-1)*23.", "What is the value of 3/(-3)*(-36)/(-198)?",
            "(-5)/(-1)*(-17)/(-17)", "What is (6/63)/(4879/(-6027))?"]
NOT_PRODUCTS = ["Calculate 6*7.", "-2 * 3 * 4",  # arithmetic__mul's one operator; spaces
                "What is 2/3*4 + 1?", "Evaluate 17*(-945)/595 + 44.",  # arithmetic__mixed
                "What is 6*7/2.", "Work out 6*7/2."]
LINEAR = "algebra__linear_1d"
EQUATIONS = ["Solve -52*w = -49*w - 12 for w.", "Solve 5 = -3*q + 2*q + 6 for q.",
             "Solve m - 4 + 2 = 7 for m.", "Solve s = 3*s - 0.5 for s."]
NOT_EQUATIONS = ["Solve -2*a + 3*b = 1, a = 4 for a.",  # linear_2d: two equations
                 "Solve -3*b**2 + 6 = 0 for b.",  # polynomial_roots: a power
                 "Let k = 2. Solve 3*x = k for x.",  # linear_1d_composed: a sentence before
                 "Solve 3*x = 6."]


SHAPES = {SUM: (SUMS, NOT_SUMS), PRODUCT: (PRODUCTS, NOT_PRODUCTS),
          LINEAR: (EQUATIONS, NOT_EQUATIONS)}


@pytest.mark.parametrize("module", sorted(SHAPES))
def test_a_pattern_takes_its_modules_shapes_and_nothing_else(module):
    pattern = re.compile(EXPRESSION_PATTERNS[module])
    inside, outside = SHAPES[module]
    others = [q for m, (shapes, _) in SHAPES.items() if m != module for q in shapes]
    assert [q for q in inside if not pattern.fullmatch(question_template(q))] == []
    assert [q for q in outside + others if pattern.fullmatch(question_template(q))] == []


def test_tensorflow_reads_every_pattern_as_python_does():
    """RE2 (``tf.strings.regex_full_match``, the served rule) and ``re`` agree."""
    templates = [question_template(q) for shapes in SHAPES.values() for q in sum(shapes, [])]
    for pattern in EXPRESSION_PATTERNS.values():
        graph = tf.strings.regex_full_match(tf.constant(templates), pattern).numpy().tolist()
        assert graph == [bool(re.fullmatch(pattern, t)) for t in templates]
        assert any(graph) and not all(graph)


def test_a_module_recorded_by_its_templates_keeps_its_questions():
    known = ModuleTemplates({"arithmetic__add_or_sub": ["N + N + N"], SUM: []}).with_patterns()
    assert known.module_of("1 + 2 + 3") == "arithmetic__add_or_sub"
    assert known.module_of("1 + 2 - 3") == SUM


@pytest.mark.slow
def test_on_the_shared_data_each_pattern_holds_its_module_and_what_the_docstring_names(
        shared_data):
    """Every question of the shared data's files: the sum rule takes all of
    ``arithmetic__add_sub_multiple``'s (training and interpolate) and its extrapolation
    module's, and of the other modules only ``arithmetic__mixed``'s without ``*`` or
    ``/``; the product rule all of ``arithmetic__mul_div_multiple``'s and its extrapolation
    module's, and of the others only ``arithmetic__mixed``'s without ``+`` or ``-``; the
    linear rule all of ``algebra__linear_1d``'s and no other."""
    patterns = {m: re.compile(p) for m, p in EXPRESSION_PATTERNS.items()}
    taken = {m: collections.Counter() for m in patterns}
    total = collections.Counter()
    for path in sorted((shared_data / "mathematics").glob("*/*.txt")):
        lines = path.read_text(encoding="utf-8").split("\n")[0::2]
        templates = [question_template(q) for q in lines if q]
        total[path.stem] += len(templates)
        for module, pattern in patterns.items():
            taken[module][path.stem] += sum(bool(pattern.fullmatch(t)) for t in templates)
    for module in (SUM, PRODUCT):
        assert taken[module][module] == total[module] > 0
        assert taken[module][module + "_longer"] == total[module + "_longer"] > 0
    others = {m: n for m, n in taken[SUM].items() if n and not m.startswith(SUM)}
    assert set(others) <= {"arithmetic__mixed", "arithmetic__mixed_longer"}
    assert 0 < sum(others.values()) < 0.05 * total["arithmetic__mixed"]
    products = {m: n for m, n in taken[PRODUCT].items() if n and not m.startswith(PRODUCT)}
    assert set(products) == {"arithmetic__mixed", "arithmetic__mixed_longer"}
    assert 0.1 * total["arithmetic__mixed"] < products["arithmetic__mixed"] < (
        0.3 * total["arithmetic__mixed"])
    assert +taken[LINEAR] == {LINEAR: total[LINEAR]} and total[LINEAR] > 0
