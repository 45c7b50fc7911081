"""Tests for tpr_keras.data.mathematics: parsing, the character vocabulary, loading and
make_dataset.

The data is a tiny folder written under ``tmp_path`` (``tests/data/tiny_math.py``):
malformed files refused with file and line, module selection and the merge of the three
training difficulties, the tf.data batches with their buckets and module balancing, and
the real data's counts (``shared_data``; skipped when it is missing).
"""

import collections

import numpy as np
import pytest

from tests.data.tiny_math import MODULES, make_math_dir, random_split
from tpr_keras.data import mathematics as math_data
from tpr_keras.data.mathematics import (
    CharVocabulary,
    MathFormatError,
    load_mathematics,
    make_dataset,
    parse_mathematics_file,
    select_modules,
)


@pytest.fixture
def math_dir(tmp_path):
    return make_math_dir(tmp_path / "math")


def decode_split(split, vocab):
    return [(vocab.decode(split.question(i)), vocab.decode(split.answer(i)),
             split.module_names[split.modules[i]]) for i in range(len(split))]


# --------------------------------------------------------------------------------------
# Parsing and vocabulary
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, lineno, fragment",
    [
        ("q1\na1\nq2\n", 3, "odd number of lines"),
        ("q1\na1\n\na2\n", 3, "empty line"),
        ("q1\na1\n" + "x" * 161 + "\na2\n", 3, "161 characters, more than 160"),
        ("q1\n" + "1" * 31 + "\n", 2, "answer has 31 characters"),
    ],
)
def test_malformed_files_raise_with_file_and_line(tmp_path, text, lineno, fragment):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(MathFormatError, match=fragment) as info:
        parse_mathematics_file(path)
    assert str(info.value).startswith(f"{path}:{lineno}: ")
    assert info.value.lineno == lineno and info.value.path == str(path)


def test_parse_limits_and_line_endings(tmp_path):
    path = tmp_path / "m.txt"
    path.write_bytes(b"What is 1 + 1?\r\n2\r\nLast one?\r\nyes\r\n")
    assert parse_mathematics_file(path) == (["What is 1 + 1?", "Last one?"], ["2", "yes"])
    assert parse_mathematics_file(path, limit=1) == (["What is 1 + 1?"], ["2"])
    path.write_text("x" * 200 + "\n1\n")
    assert parse_mathematics_file(path, max_question_length=None)[0] == ["x" * 200]


def test_char_vocabulary_ids_and_round_trip(tmp_path):
    vocab = CharVocabulary.build(["b a", "ab?", "\n"])
    assert vocab.tokens == ("<pad>", "<unk>", "<s>", "</s>", " ", "?", "a", "b")
    assert vocab.encode("ab z") == [6, 7, 4, 1]
    assert vocab.decode([6, 4, 7, 3, 6]) == "a b"  # stops at </s>
    assert vocab.decode([2, 6, 1, 0]) == "a"  # specials dropped
    ids, splits, unknown = vocab.encode_array(["ab", "", "zé a"])
    assert ids.dtype == np.uint8 and splits.tolist() == [0, 2, 2, 6] and unknown == 2
    assert ids.tolist() == [6, 7, 1, 1, 4, 6]
    path = tmp_path / "vocab.txt"
    vocab.save(path)
    assert path.read_text() == "<pad>\n<unk>\n<s>\n</s>\n \n?\na\nb\n"
    assert CharVocabulary.load(path) == vocab
    with pytest.raises(ValueError, match="must start with"):
        CharVocabulary(["a", "b"])


def test_encode_question_is_the_model_source():
    vocab = CharVocabulary.build(["What is 3*4?", "12"])
    assert vocab.encode_question("Wh@t") == [2] + vocab.encode("Wh@t") + [3]
    assert vocab.encode_question("What is", max_length=3) == [2] + vocab.encode("Wha") + [3]
    assert vocab.encode_question("") == [2, 3]


# --------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------


def test_module_selection_names_globs_and_extrapolation_relatives(math_dir):
    available = math_data.list_modules(math_dir)
    picked = select_modules("numbers__place_value", available)
    assert picked == {
        "train": ["numbers__place_value"],
        "interpolate": ["numbers__place_value"],
        "extrapolate": ["numbers__place_value_big"],
    }
    picked = select_modules(["arithmetic__*"], available)
    assert picked["train"] == ["arithmetic__add_or_sub", "arithmetic__mul"]
    assert picked["extrapolate"] == ["arithmetic__add_or_sub_big", "arithmetic__mul_big"]
    assert select_modules("all", available)["train"] == sorted(available["train-easy"])
    assert select_modules("arithmetic__mul_big", available) == {
        "train": [], "interpolate": [], "extrapolate": ["arithmetic__mul_big"]
    }
    with pytest.raises(ValueError, match="matches no module; available: arithmetic__add_or_sub"):
        select_modules("algebra__*", available)


def test_load_merges_difficulties_and_keeps_eval_separate(math_dir):
    data = load_mathematics(math_dir, modules="numbers__place_value,arithmetic__mul")
    assert data.module_names == (
        "arithmetic__mul",
        "arithmetic__mul_big",
        "numbers__place_value",
        "numbers__place_value_big",
    )
    train = collections.Counter(decode_split(data.train, data.vocab))
    expected = collections.Counter(
        (q, a, m)
        for regime in ("train-easy", "train-medium", "train-hard")
        for m, pairs in MODULES[regime].items()
        if m in ("numbers__place_value", "arithmetic__mul")
        for q, a in pairs
    )
    assert train == expected and len(data.train) == 8
    assert sorted(data.interpolate) == ["arithmetic__mul", "numbers__place_value"]
    assert sorted(data.extrapolate) == ["arithmetic__mul_big", "numbers__place_value_big"]
    assert decode_split(data.extrapolate["arithmetic__mul_big"], data.vocab) == [
        ("1000*1000?", "1000000", "arithmetic__mul_big")
    ]
    assert data.stats["counts"]["train-hard"] == {"arithmetic__mul": 1, "numbers__place_value": 3}
    # Vocabulary from the training data only; other characters become <unk>.
    assert "W" in data.vocab and "+" not in data.vocab
    assert data.stats["unknown_characters"] == {}
    other = load_mathematics(math_dir, modules="arithmetic__add_or_sub", vocab=data.vocab)
    assert other.vocab is data.vocab
    assert other.stats["unknown_characters"] == {  # "+" and "-" were never seen
        "train/arithmetic__add_or_sub": 2,
        "interpolate/arithmetic__add_or_sub": 1,
        "extrapolate/arithmetic__add_or_sub_big": 1,
    }


def test_head_keeps_the_first_examples(math_dir):
    data = load_mathematics(math_dir, modules="numbers__place_value,arithmetic__mul")
    pairs = decode_split(data.train, data.vocab)
    for n in (0, 1, 5, len(data.train), len(data.train) + 3):
        head = data.train.head(n)
        assert decode_split(head, data.vocab) == pairs[:n]
        assert len(head) == min(n, len(data.train))
    assert data.train.head(3).module_names == data.train.module_names


def test_take_keeps_the_examples_at_the_indices_in_their_order(math_dir):
    data = load_mathematics(math_dir, modules="numbers__place_value,arithmetic__mul")
    pairs = decode_split(data.train, data.vocab)
    for indices in ([], [0], [3, 1, 4], list(range(len(data.train)))[::-1]):
        taken = data.train.take(indices)
        assert decode_split(taken, data.vocab) == [pairs[i] for i in indices]
        assert taken.module_names == data.train.module_names


def test_load_reports_file_and_line_of_bad_data(math_dir):
    path = math_dir / "train-medium" / "arithmetic__mul.txt"
    path.write_text("q\na\n" + "7" * 170 + "\n1\n")
    with pytest.raises(MathFormatError, match=r"arithmetic__mul\.txt:3: question has 170"):
        load_mathematics(math_dir, modules="arithmetic__mul")


def test_make_dataset_sequences_shapes_and_coverage(math_dir):
    data = load_mathematics(math_dir, modules="all")
    split = data.train
    ds = make_dataset(split, batch_size=3, shuffle=True, seed=1, bucket_boundaries=(12, 20))
    seen = []
    v = data.vocab
    for features, labels in ds:
        src, t_in = features["source"].numpy(), features["target_in"].numpy()
        t_out, module = labels["target_out"].numpy(), labels["module"].numpy()
        assert src.dtype == t_in.dtype == t_out.dtype == np.int32 and module.dtype == np.int32
        assert t_in.shape == t_out.shape and len(module) <= 3
        lengths = (src != v.PAD_ID).sum(1)
        assert len(set(np.digitize(lengths, [12, 20]))) == 1  # one bucket per batch
        for s, ti, to, m in zip(src, t_in, t_out, module):
            n = int((s != 0).sum())
            assert s[0] == v.START_ID and s[n - 1] == v.END_ID
            answer = v.decode(to)
            assert ti[0] == v.START_ID and v.decode(ti[1:]) == answer
            assert to[len(answer)] == v.END_ID and not to[len(answer) + 1 :].any()
            seen.append((v.decode(s[1 : n - 1]), answer, data.module_names[m]))
    assert collections.Counter(seen) == collections.Counter(decode_split(split, v))
    plain = make_dataset(split, batch_size=4, bucket_boundaries=None, source_markers=False)
    features, _ = next(iter(plain))
    assert features["source"].shape[0] == 4 and features["source"].numpy()[0, 0] != v.START_ID


@pytest.mark.parametrize("drop_remainder", [False, True])
def test_answer_buckets_batch_one_cell_of_the_length_grid(drop_remainder):
    """Each batch holds the examples of one (question length, answer length) cell, padded
    to its own longest of each; a pass holds every example once (or, dropping remainders,
    only full batches of 3)."""
    split = random_split(60, (3, 30), (1, 6))
    ds = make_dataset(split, batch_size=3, shuffle=True, seed=1, bucket_boundaries=(12, 20),
                      answer_bucket_boundaries=(4,), drop_remainder=drop_remainder)
    seen = []
    for features, labels in ds:
        src, t_in = features["source"].numpy(), features["target_in"].numpy()
        q, a = (src != 0).sum(1), (t_in != 0).sum(1)
        assert len(set(zip(np.digitize(q, [12, 20]), np.digitize(a, [4])))) == 1, (q, a)
        assert src.shape[1] == q.max() and t_in.shape[1] == a.max()
        assert len(src) == 3 or not drop_remainder
        seen += [(tuple(s[1:n - 1]), tuple(o[:m - 1])) for s, n, o, m in zip(
            src, q, labels["target_out"].numpy(), a)]
    everything = collections.Counter(
        (tuple(split.question(i)), tuple(split.answer(i))) for i in range(60))
    if drop_remainder:
        assert len(seen) % 3 == 0 and not collections.Counter(seen) - everything
        assert len(seen) > 30
    else:
        assert collections.Counter(seen) == everything

def test_balanced_indices_give_every_module_its_share():
    from tpr_keras.data.mathematics import balanced_indices

    modules = np.array([0] * 12 + [1] * 2 + [2] * 7, np.int32)  # N = 21, 7 per module
    idx = balanced_indices(modules, seed=3)
    assert idx.dtype == np.int64 and len(idx) == 21
    assert collections.Counter(modules[idx].tolist()) == {0: 7, 1: 7, 2: 7}
    # the large module: 7 different examples; the small one cycled (each 3 or 4 times);
    # the middle one: each of its 7 exactly once
    assert len(set(idx[modules[idx] == 0].tolist())) == 7
    assert sorted(collections.Counter(idx[modules[idx] == 1].tolist()).values()) == [3, 4]
    assert sorted(idx[modules[idx] == 2].tolist()) == list(range(14, 21))
    np.testing.assert_array_equal(idx, balanced_indices(modules, seed=3))
    assert not np.array_equal(idx, balanced_indices(modules, seed=4))
    # N % M extra examples go to different modules
    counts = collections.Counter(modules[balanced_indices(modules[:20], seed=0)].tolist())
    assert sorted(counts.values()) == [6, 7, 7] and sum(counts.values()) == 20


def test_balanced_indices_draw_modules_in_proportion_to_their_weights():
    from tpr_keras.data.mathematics import balanced_indices

    modules = np.array([0] * 12 + [1] * 2 + [2] * 7, np.int32)  # N = 21
    idx = balanced_indices(modules, seed=3, weights={1: 5})  # 3 : 15 : 3 of 21
    assert collections.Counter(modules[idx].tolist()) == {0: 3, 1: 15, 2: 3}
    assert len(set(idx[modules[idx] == 0].tolist())) == 3  # without replacement
    # floor(20 * w / 7) = 2, 14, 2: the two examples left go to two different modules
    counts = collections.Counter(modules[balanced_indices(modules[:20], 0, {1: 5})].tolist())
    assert sum(counts.values()) == 20 and counts[1] in (14, 15)
    assert all(counts[m] in (2, 3) for m in (0, 2))
    # equal weights (any value) draw exactly the unweighted indices
    for weights in ({0: 2.0, 1: 2.0, 2: 2.0}, {0: 1}, {}):
        np.testing.assert_array_equal(balanced_indices(modules, 9, weights),
                                      balanced_indices(modules, 9))
    with pytest.raises(ValueError, match="positive"):
        balanced_indices(modules, 0, {1: 0})
    with pytest.raises(ValueError, match=r"module ids \[7\]"):
        balanced_indices(modules, 0, {7: 2})


def test_make_dataset_balances_modules_of_different_sizes(math_dir):
    data = load_mathematics(math_dir, modules="all")
    split = data.train  # 6 place_value, 2 add_or_sub, 2 mul examples
    sizes = collections.Counter(split.modules.tolist())
    assert sorted(sizes.values()) == [2, 2, 6]

    def module_counts(**kwargs):
        ds = make_dataset(split, batch_size=4, shuffle=True, seed=5, **kwargs)
        return collections.Counter(int(m) for _, labels in ds for m in labels["module"].numpy())

    assert module_counts() == sizes
    balanced = module_counts(balance_modules=True)
    assert sum(balanced.values()) == len(split)
    assert max(balanced.values()) - min(balanced.values()) <= 1
    with pytest.raises(ValueError, match="one pass"):
        make_dataset(split, batch_size=4, shuffle=True, repeat=True, balance_modules=True)
    # equal sizes: the same batches as without balancing
    equal = load_mathematics(math_dir, modules="numbers__place_value").train

    def batches(**kwargs):
        ds = make_dataset(equal, batch_size=2, shuffle=True, seed=7, **kwargs)
        return [f["source"].numpy().tolist() for f, _ in ds]

    assert batches(balance_modules=True) == batches()
    # module weights set the proportions of the pass, whatever the sizes
    both = load_mathematics(math_dir, modules="numbers__place_value,arithmetic__add_or_sub")
    add, place = (both.module_names.index(m) for m in ("arithmetic__add_or_sub",
                                                        "numbers__place_value"))
    weighted = make_dataset(both.train, batch_size=4, shuffle=True, seed=5,
                            balance_modules=True, module_weights={add: 3})
    drawn = collections.Counter(int(m) for _, labels in weighted
                                for m in labels["module"].numpy())
    assert drawn == {add: 6, place: 2}  # 2 and 6 examples, drawn 3 : 1
    with pytest.raises(ValueError, match="balance_modules=True"):
        make_dataset(both.train, batch_size=4, shuffle=True, module_weights={add: 3})


# --------------------------------------------------------------------------------------
# Real data (../shared/data/mathematics)
# --------------------------------------------------------------------------------------


def test_real_place_value_counts(shared_data):
    root = shared_data / "mathematics"
    if not root.is_dir():
        pytest.skip(f"{root} not found")
    counts = {}
    for line in (root / "COUNTS.txt").read_text().splitlines():
        name, count = line.split()
        counts[name] = int(count)
    data = load_mathematics(root, modules="numbers__place_value", download=False)
    assert len(data.train) == sum(
        counts[f"{r}/numbers__place_value"] for r in ("train-easy", "train-medium", "train-hard")
    )
    interpolate = data.interpolate["numbers__place_value"]
    assert len(interpolate) == counts["interpolate/numbers__place_value"]
    assert list(data.extrapolate) == ["numbers__place_value_big"]
    assert len(data.extrapolate["numbers__place_value_big"]) == counts[
        "extrapolate/numbers__place_value_big"
    ]
    assert data.train.max_question_length <= 160 and data.train.max_answer_length <= 30
    assert data.stats["unknown_characters"] == {}
