"""The evaluation tables (what presets record and train.evaluate recomputes) against an
independent computation of the same numbers, on tiny files made here."""

import numpy as np
import pytest

from tpr_keras.data import entailment
from tpr_keras.data.babi import load_babi
from tpr_keras.models import TPRRNN, PlainEntailmentModel
from tpr_keras import evaluation

PAIRS = [("(a&b)", "a", 1), ("a", "(a&b)", 0), ("(a|b)", "(b|a)", 1), ("a", "~a", 0),
         ("(a>b)", "(~b>~a)", 1), ("(c&d)", "(c|d)", 1), ("(c|d)", "(c&d)", 0)]


@pytest.fixture(scope="module")
def babi_dir(tmp_path_factory, babi_task1_writer):
    root = tmp_path_factory.mktemp("babi") / "en-10k"
    root.mkdir()
    for task, name in ((1, "single-supporting-fact"), (2, "two-supporting-facts")):
        babi_task1_writer(root / f"qa{task}_{name}_train.txt", 10, task)
        babi_task1_writer(root / f"qa{task}_{name}_test.txt", 12, 10 + task)
    return root.parent


def test_babi_table_matches_the_models_own_answers(babi_dir):
    data = load_babi(babi_dir, tasks=(1, 2), download=False)
    model = TPRRNN.from_paper_size("single_task", vocabulary_size=len(data.vocab),
                               max_words=data.max_words)
    table = evaluation.babi_table(model, data.vocab, babi_dir, tasks=(1, 2))
    test = data.test
    story = np.zeros((len(test), test.max_story_length, data.max_words), "int32")
    for i in range(len(test)):  # the loader's own dense form, one sample at a time
        rows = test.story(i)
        story[i, :len(rows)] = rows
    predicted = np.argmax(model.predict({"story": story, "question": test.questions},
                                        verbose=0), -1)
    for task in (1, 2):
        mine = test.tasks == task
        expected = 100.0 * np.mean(predicted[mine] != test.answers[mine])
        assert table["test_error_percent"][str(task)] == pytest.approx(expected, abs=1e-9)
        assert table["questions"][str(task)] == 36
    assert table["test_error_percent_mean"] == pytest.approx(
        np.mean(list(table["test_error_percent"].values())))
    assert table["failed_tasks"] == sum(e > 5 for e in table["test_error_percent"].values())

    sample = evaluation.babi_table(model, data.vocab, babi_dir, tasks=(1, 2), limit=5)
    assert sample["questions"] == {"1": 5, "2": 5}
    first = {t: np.flatnonzero(test.tasks == t)[:5] for t in (1, 2)}
    for task, rows in first.items():
        expected = 100.0 * np.mean(predicted[rows] != test.answers[rows])
        assert sample["test_error_percent"][str(task)] == pytest.approx(expected)


def test_babi_table_names_a_missing_test_file(babi_dir):
    data = load_babi(babi_dir, tasks=(1,), download=False)
    model = TPRRNN.from_paper_size("single_task", vocabulary_size=len(data.vocab),
                               max_words=data.max_words)
    with pytest.raises(FileNotFoundError, match=r"qa3_\*_test.txt"):
        evaluation.babi_table(model, data.vocab, babi_dir, tasks=(1, 3))


def test_entailment_table_matches_the_logits(tmp_path):
    lines = [f"{a},{b},{label},0,0,0" for a, b, label in PAIRS]
    for name in evaluation.ENTAILMENT_SPLITS:
        (tmp_path / f"{name}.txt").write_text("\n".join(lines) + "\n")
    model = PlainEntailmentModel.from_paper_size("plain_tpru", units=8, num_roles=4, seed=1)
    table = evaluation.entailment_table(model, tmp_path, limit=6)
    data = entailment.load_entailment_split("validate", tmp_path)
    logits = np.concatenate([np.reshape(model.predict(f, verbose=0), -1)
                             for f, _ in entailment.make_dataset(data, 256)])
    expected = 100.0 * np.mean((logits[:6] > 0) == (data.labels[:6] == 1))
    assert table["accuracy_percent"]["validate"] == pytest.approx(expected)
    assert table["pairs"] == {name: 6 for name in evaluation.ENTAILMENT_SPLITS}


class UnitsDigit:
    """A stand-in TP-Transformer that answers "What is the units digit of N?" by copying the
    digit before "?" (source = <s> question </s>), or always "0" when ``right`` is False."""

    max_decode_length = 4

    def __init__(self, vocab, right):
        self.zero, self.end, self.right = vocab.encode("0")[0], vocab.END_ID, right

    def greedy_decode(self, source, max_length):
        import tensorflow as tf

        length = tf.reduce_sum(tf.cast(source != 0, tf.int32), axis=1)
        digit = tf.gather(source, length - 3, batch_dims=1)
        if not self.right:
            digit = tf.fill(tf.shape(digit), self.zero)
        ids = tf.stack([digit, tf.fill(tf.shape(digit), self.end)], axis=1)
        return ids, tf.zeros(tf.shape(digit), tf.float32)


def write_units_digits(root):
    """place_value files: interpolate 100..111, extrapolate 1000..1011; returns the
    vocabulary."""
    from tpr_keras.data.mathematics import CharVocabulary

    numbers = {"interpolate": range(100, 112), "extrapolate": range(1000, 1012)}
    for regime, module in (("train-easy", "numbers__place_value"),
                           ("interpolate", "numbers__place_value"),
                           ("extrapolate", "numbers__place_value_big")):
        path = root / regime / f"{module}.txt"
        path.parent.mkdir(parents=True)
        path.write_text("".join(f"What is the units digit of {n}?\n{n % 10}\n"
                                for n in numbers.get(regime, range(5))))
    return CharVocabulary.build(["What is the units digit of 0123456789?"])


@pytest.mark.parametrize("right", [True, False])
def test_math_table_scores_greedy_answers_per_module(tmp_path, right):
    vocab = write_units_digits(tmp_path)
    table = evaluation.math_table(UnitsDigit(vocab, right), vocab, tmp_path,
                                  ["numbers__place_value"], limit=8)
    # The first 8 questions: 100..107 and 1000..1007; only 100 and 1000 end in 0.
    expected = 100.0 if right else 12.5
    assert table["interpolate_accuracy_percent"] == {"numbers__place_value": expected}
    assert table["extrapolate_accuracy_percent"] == {"numbers__place_value_big": expected}
    assert table["summary"]["interpolate"] == {"modules": 1, "mean": expected,
                                               "above_95": int(right)}


class CountedUnitsDigit(UnitsDigit):
    """:class:`UnitsDigit` that counts how often its decoding is traced (each Python call
    of ``greedy_decode`` is a trace: the scorer is a ``tf.function``)."""

    traces = 0

    def greedy_decode(self, source, max_length):
        self.traces += 1
        return super().greedy_decode(source, max_length)


def test_a_full_and_a_sample_table_trace_the_model_once(tmp_path):
    """What ``train.save_preset`` and ``train.route_presets`` record: the full table and
    the first-N sample, equal to two separate tables, from one trace."""
    vocab = write_units_digits(tmp_path)
    alone = CountedUnitsDigit(vocab, False)
    want = [evaluation.math_table(alone, vocab, tmp_path, ["numbers__place_value"],
                                  limit=limit) for limit in (None, 8)]
    assert alone.traces == 2
    model = CountedUnitsDigit(vocab, False)
    tables = evaluation.evaluate_tables("math", model, vocab, tmp_path,
                                        {"modules": ["numbers__place_value"]}, [None, 8])
    assert tables == want and model.traces == 1
    # 100..111: 100 and 110 end in 0 (2 of 12); of the first 8, 100 only
    assert [t["interpolate_accuracy_percent"]["numbers__place_value"] for t in tables] == [
        pytest.approx(100 * 2 / 12), 12.5]


class RoutedUnitsDigit:
    """A routed model: route 1 (``numbers__place_value``'s wording) answers right, route 0
    (any other wording) always 0."""

    max_decode_length = 4

    def __init__(self, vocab):
        self.parts = [UnitsDigit(vocab, False), UnitsDigit(vocab, True)]

    def decoders(self):
        return self.parts

    def routes(self, modules):
        return np.asarray([int(m == "numbers__place_value") for m in modules], np.int32)


def test_math_table_routes_each_question_by_its_wording(tmp_path):
    from tpr_keras.data.mathematics import CharVocabulary, ModuleTemplates

    wordings = ["What is the units digit of {}?", "Units digit of {}?"]
    for regime in ("train-easy", "interpolate"):
        path = tmp_path / regime / "numbers__place_value.txt"
        path.parent.mkdir(parents=True)
        path.write_text("".join(wordings[n % 2].format(n) + f"\n{n % 10}\n"
                                for n in range(100, 112)))
    vocab = CharVocabulary.build(["What is the units digit of 0123456789?U"])
    templates = ModuleTemplates({"numbers__place_value": ["What is the units digit of N?"]})
    table = evaluation.math_table(RoutedUnitsDigit(vocab), vocab, tmp_path,
                                  ["numbers__place_value"], limit=8, templates=templates)
    # 100..107: the even ones (100, 102, 104, 106) in the routed wording, answered right;
    # the odd ones by the default decoder, which answers 0: wrong for all four.
    assert table["interpolate_accuracy_percent"] == {"numbers__place_value": 50.0}
    with pytest.raises(ValueError, match="templates"):
        evaluation.math_table(RoutedUnitsDigit(vocab), vocab, tmp_path,
                              ["numbers__place_value"], limit=8)


def test_compare_tables_flags_moved_and_missing_rows():
    recorded = {"test_error_percent": {"1": 1.0, "2": 2.0}, "test_error_percent_mean": 1.5,
                "failed_tasks": 0}
    same = {"test_error_percent": {"1": 1.04, "2": 2.0}, "test_error_percent_mean": 1.52,
            "failed_tasks": 0}
    assert all(ok for *_, ok in evaluation.compare_tables(same, recorded))
    moved = dict(same, test_error_percent={"1": 1.2, "2": 2.0})
    bad = [row for row, *_, ok in evaluation.compare_tables(moved, recorded) if not ok]
    assert bad == ["task 1 test error %"]
    missing = dict(same, test_error_percent={"1": 1.0})
    bad = [row for row, *_, ok in evaluation.compare_tables(missing, recorded) if not ok]
    assert bad == ["task 2 test error %"]
