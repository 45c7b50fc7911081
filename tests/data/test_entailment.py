"""Tests of the logical entailment loader, vocabulary, augmentation and tf.data."""

import itertools
import pathlib

import numpy as np
import pytest
import tensorflow as tf

from tpr_keras.data import entailment as E
from tpr_keras.data.errors import DataFormatError

REAL_DIR = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "data" / "entailment"
REAL_COUNTS = {
    "train": 100_000,
    "validate": 5_000,
    "test_easy": 5_000,
    "test_hard": 5_000,
    "test_big": 1_696,
    "test_massive": 2_230,
    "test_exam": 100,
}

# Hand-made pairs with known labels (some from the official test_exam.txt).
HAND_LINES = [
    "(p&q),q,1,0,0,0",
    "(p|q),(p&q),0,0,0,0",
    "(p>(q>r)),((p&q)>r),1,0,0,0",
    "(p>(q>r)),(p>(q&r)),0,0,0,0",
    "~((p>q)),(p&~(q)),1,0,0,0",
    "~((p>q)),(q&~(p)),0,0,0,0",
    "(p&~(p)),q,1,0,0,0",
    "(p&~(r)),q,0,0,0,0",
    "z,(p>(q>p)),1,0,0,0",
    "z,(q>(q>p)),0,0,0,0",
    "((a|b)&(~(a)|c)),(b|c),1,1,0,0",
    "(a&b),(b&c),0,1,0,0",
]


# ----------------------------------------------------------------- truth tables
def _parse(s, i=0):
    """formula := var | '~(' formula ')' | '(' formula op formula ')'."""
    c = s[i]
    if c.isalpha():
        return ("var", c), i + 1
    if c == "~":
        assert s[i + 1] == "("
        sub, j = _parse(s, i + 2)
        assert s[j] == ")"
        return ("~", sub), j + 1
    assert c == "("
    left, j = _parse(s, i + 1)
    op = s[j]
    right, k = _parse(s, j + 1)
    assert s[k] == ")"
    return (op, left, right), k + 1


def _formula(s):
    tree, end = _parse(s)
    assert end == len(s), s
    return tree


def _eval(t, world):
    if t[0] == "var":
        return world[t[1]]
    if t[0] == "~":
        return not _eval(t[1], world)
    x, y = _eval(t[1], world), _eval(t[2], world)
    return {"&": x and y, "|": x or y, ">": (not x) or y}[t[0]]


def _entails(a, b):
    """A |= B by brute force over all worlds of the variables of A and B."""
    ta, tb = _formula(a), _formula(b)
    names = sorted(set(c for c in a + b if c.isalpha()))
    for values in itertools.product([False, True], repeat=len(names)):
        world = dict(zip(names, values))
        if _eval(ta, world) and not _eval(tb, world):
            return False
    return True


def test_truth_table_checker_agrees_with_hand_labels():
    data = E.parse_entailment_lines(HAND_LINES)
    for a, b, y in zip(data.a, data.b, data.labels):
        assert _entails(a, b) == bool(y), (a, b)


# ------------------------------------------------------------------- vocabulary
def test_vocabulary_order_and_round_trip(tmp_path):
    v = E.VOCABULARY
    assert v[:8] == ("<pad>", "<unk>", "~", "&", "|", ">", "(", ")")
    assert v[8:] == tuple("abcdefghijklmnopqrstuvwxyz")
    assert E.VOCAB_SIZE == 34 and E.PAD_ID == 0 and E.UNK_ID == 1
    assert E.FIRST_VARIABLE_ID == 8
    path = tmp_path / "vocab.txt"
    E.save_vocabulary(path)
    assert path.read_text().splitlines() == list(v)
    assert E.load_vocabulary(path) == v
    ids = E.encode("(a>~(z))")
    np.testing.assert_array_equal(ids, [6, 8, 5, 2, 6, 33, 7, 7])
    assert E.decode(np.concatenate([ids, [0, 0]])) == "(a>~(z))"
    np.testing.assert_array_equal(E.encode("A$"), [1, 1])


def test_models_default_to_the_data_vocabulary():
    from tpr_keras.models import BiDAFEntailmentModel, PlainEntailmentModel

    for model_class in (PlainEntailmentModel, BiDAFEntailmentModel):
        model = model_class(units=4, num_roles=2, seed=0)
        assert model.vocabulary_size == E.VOCAB_SIZE == 34
        assert model.get_layer("embedding").input_dim == 34


def test_tokenize_drops_whitespace_and_maps_the_rest():
    np.testing.assert_array_equal(E.tokenize("( a | Q )"), [6, 8, 4, 1, 7])
    np.testing.assert_array_equal(E.tokenize(" \t\n\r\f"), np.zeros(0))
    np.testing.assert_array_equal(E.tokenize("a\vb\u00a0c"), [8, 1, 9, 1, 10])
    np.testing.assert_array_equal(E.tokenize("(a&b)"), E.encode("(a&b)"))


# ---------------------------------------------------------------------- parsing
def test_parse_file(tmp_path):
    path = tmp_path / "x.txt"
    path.write_text("\n".join(HAND_LINES[:3]) + "\n")
    data = E.load_entailment_file(path)
    assert len(data) == 3
    assert data.a == ["(p&q)", "(p|q)", "(p>(q>r))"]
    assert data.b == ["q", "(p&q)", "((p&q)>r)"]
    np.testing.assert_array_equal(data.labels, [1, 0, 1])
    assert data.labels.dtype == np.int32
    assert data.heuristics.shape == (3, 3) and data.heuristics.dtype == np.int8
    # No trailing newline and CRLF line ends are accepted.
    path.write_text("\r\n".join(HAND_LINES[:2]))
    assert E.load_entailment_file(path).b == ["q", "(p&q)"]


@pytest.mark.parametrize(
    "bad, reason",
    [
        ("(p&q),q,1,0,0", "6 comma-separated fields"),
        ("(p&q),q,1,0,0,0,0", "6 comma-separated fields"),
        ("", "6 comma-separated fields"),
        ("(p&q),q,2,0,0,0", "label must be 0 or 1"),
        ("(p&q),q,x,0,0,0", "label must be 0 or 1"),
        ("(p&q),q,1,0,7,0", "heuristic H2"),
        ("((p&q),q,1,0,0,0", "unbalanced parentheses"),
        ("(p&q)),q,1,0,0,0", "unbalanced parentheses"),
        ("(p&q),)q(,1,0,0,0", "unbalanced parentheses"),
        ("(p&Q),q,1,0,0,0", "unknown character"),
        ("(p&q),q r,1,0,0,0", "unknown character"),
        ("(p&q),,1,0,0,0", "empty proposition"),
    ],
)
def test_malformed_lines_raise_with_location(tmp_path, bad, reason):
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(HAND_LINES[:2] + [bad] + HAND_LINES[2:4]) + "\n")
    with pytest.raises(E.EntailmentFormatError) as info:
        E.load_entailment_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}:3: "), message
    assert reason in message
    assert isinstance(info.value, DataFormatError) and isinstance(info.value, ValueError)
    assert (info.value.path, info.value.lineno) == (str(path), 3)


def test_first_malformed_line_is_reported():
    lines = [HAND_LINES[0], "(p&q),(q%p),1,0,0,0", HAND_LINES[1], "((p),q,0,0,0,0"]
    with pytest.raises(E.EntailmentFormatError, match=r"^f\.txt:2: unknown character in B"):
        E.parse_entailment_lines(lines, path="f.txt")
    with pytest.raises(E.EntailmentFormatError, match=r"^f\.txt:4: unbalanced parentheses in A"):
        E.parse_entailment_lines(HAND_LINES[:3] + lines[3:] + lines[1:2], path="f.txt")


# ------------------------------------------------------------ finding the data
def test_find_entailment_dir_precedence(tmp_path, monkeypatch):
    given, env, home = tmp_path / "given", tmp_path / "env", tmp_path / "home"
    cache = home / "datasets" / "logical_entailment_dataset" / "data"
    for d in (given, env, cache):
        d.mkdir(parents=True)
    monkeypatch.setenv("KERAS_HOME", str(home))
    monkeypatch.setenv(E.ENV_VAR, str(env))
    assert E.find_entailment_dir(given) == str(given)
    assert E.find_entailment_dir() == str(env)
    monkeypatch.delenv(E.ENV_VAR)
    assert E.find_entailment_dir() == str(cache)
    (cache / "validate.txt").write_text("\n".join(HAND_LINES) + "\n")
    assert len(E.load_entailment_split("validate")) == len(HAND_LINES)
    with pytest.raises(FileNotFoundError, match="data_dir"):
        E.find_entailment_dir(tmp_path / "missing")
    with pytest.raises(ValueError, match="Unknown split"):
        E.load_entailment_split("dev")


def test_find_entailment_dir_missing_says_what_to_pass(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "empty_home"))
    monkeypatch.delenv(E.ENV_VAR, raising=False)
    with pytest.raises(FileNotFoundError) as info:
        E.find_entailment_dir()
    message = str(info.value)
    assert "data_dir=" in message and E.ENV_VAR in message
    assert "google-deepmind/logical-entailment-dataset" in message


# ----------------------------------------------------------------- augmentation
def _pad(strings, length=None):
    length = length or max(map(len, strings))
    out = np.zeros((len(strings), length), np.int32)
    for i, s in enumerate(strings):
        out[i, : len(s)] = E.encode(s)
    return out


def _check_permuted_pairs(a_in, b_in, labels, a_out, b_out):
    for a, b, y, pa, pb in zip(a_in, b_in, labels, a_out, b_out):
        assert len(pa) == len(a) and len(pb) == len(b)
        mapping = {}
        for old, new in zip(a + b, pa + pb):
            if old.isalpha():
                assert new.isalpha()
                assert mapping.setdefault(old, new) == new  # one map for A and B
            else:
                assert new == old  # structure unchanged
        assert len(set(mapping.values())) == len(mapping)  # injective
        assert len(set(c for c in pa + pb if c.isalpha())) == len(mapping)
        assert _entails(pa, pb) == bool(y) == _entails(a, b)


def _real_or_hand_lines():
    lines = list(HAND_LINES)
    path = REAL_DIR / "validate.txt"
    if path.exists():
        real = path.read_text().splitlines()
        rng = np.random.default_rng(0)
        picked = [real[i] for i in rng.choice(len(real), 200, replace=False)]
        # Keep truth tables small (at most 2^10 worlds).
        picked = [
            ln for ln in picked
            if len(set(c for c in ",".join(ln.split(",")[:2]) if c.isalpha())) <= 10
        ]
        lines += picked[:36]
    return lines


def test_permute_variables_is_a_label_preserving_bijection():
    data = E.parse_entailment_lines(_real_or_hand_lines())
    a, b = _pad(data.a), _pad(data.b)
    changed = 0
    for seed in range(3):
        pa, pb = E.permute_variables(a, b, seed=tf.constant([seed, 7]))
        pa, pb = pa.numpy(), pb.numpy()
        assert pa.dtype == np.int32 and pa.shape == a.shape
        np.testing.assert_array_equal(pa == 0, a == 0)  # padding stays padding
        a_out = [E.decode(r) for r in pa]
        b_out = [E.decode(r) for r in pb]
        _check_permuted_pairs(data.a, data.b, data.labels, a_out, b_out)
        changed += sum(x != y for x, y in zip(a_out, data.a))
    assert changed > len(data) * 2  # it really permutes


def test_permute_variables_is_uniformish_and_seeded():
    a = np.tile(_pad(["a"]), (2600, 1))
    pa, _ = E.permute_variables(a, a, seed=tf.constant([1, 2]))
    counts = np.bincount(pa.numpy()[:, 0], minlength=E.VOCAB_SIZE)[8:]
    assert counts.min() > 50 and counts.max() < 160  # ~100 each of 26
    again, _ = E.permute_variables(a, a, seed=tf.constant([1, 2]))
    np.testing.assert_array_equal(pa.numpy(), again.numpy())
    # Single pair (rank 1) and the stateful path work too.
    one_a, one_b = E.permute_variables(E.encode("(a&b)"), E.encode("b"))
    assert E.decode(one_a.numpy())[0] == "(" and one_b.numpy().shape == (1,)
    assert E.decode(one_a.numpy())[3] == E.decode(one_b.numpy())


# ------------------------------------------------------------------ tf.data
def test_make_dataset_batches_decode_to_the_data():
    data = E.parse_entailment_lines(HAND_LINES)
    ds = E.make_dataset(data, batch_size=5)
    got_a, got_b, got_y = [], [], []
    shapes = []
    for x, y in ds:
        assert x["a"].dtype == tf.int32 and y.dtype == tf.float32
        shapes.append(x["a"].shape[1])
        got_a += [E.decode(r) for r in x["a"].numpy()]
        got_b += [E.decode(r) for r in x["b"].numpy()]
        got_y += list(y.numpy()[:, 0])
        # Padded to the longest proposition of the batch.
        assert max(len(s) for s in got_a[-len(y):]) == x["a"].shape[1]
    assert got_a == data.a and got_b == data.b
    np.testing.assert_array_equal(got_y, data.labels)
    assert len(shapes) == 3  # 5 + 5 + 2

    fixed = E.make_dataset(data, batch_size=4, pad_to=30, drop_remainder=True)
    assert fixed.element_spec[0]["a"].shape.as_list() == [4, 30]
    assert sum(1 for _ in fixed) == 3
    with pytest.raises(ValueError, match="pad_to"):
        E.make_dataset(data, pad_to=3)

    # "longest": every batch padded to the data's longest proposition, A and B alike.
    longest = max(len(E.encode(s)) for s in data.a + data.b)
    batches = list(E.make_dataset(data, batch_size=5, pad_to="longest"))
    assert len(batches) == 3
    for x, _ in batches:
        assert x["a"].shape[1] == x["b"].shape[1] == longest
    assert [E.decode(r) for x, _ in batches for r in x["a"].numpy()] == data.a


def test_make_dataset_shuffle_and_augment():
    data = E.parse_entailment_lines(HAND_LINES)

    def epoch(ds):
        out = []
        for x, y in ds:
            out += list(zip([E.decode(r) for r in x["a"].numpy()],
                            [E.decode(r) for r in x["b"].numpy()],
                            y.numpy()[:, 0].astype(int)))
        return out

    ds = E.make_dataset(data, batch_size=4, shuffle=True, seed=1)
    first, second = epoch(ds), epoch(ds)
    assert sorted(first) == sorted(zip(data.a, data.b, data.labels))
    assert first != second  # reshuffled each epoch
    assert epoch(E.make_dataset(data, batch_size=4, shuffle=True, seed=1)) == first

    aug = E.make_dataset(data, batch_size=4, augment=True, seed=5)
    e1, e2 = epoch(aug), epoch(aug)
    assert e1 != e2  # fresh permutations every epoch
    for ep in (e1, e2):
        a_out, b_out, y_out = zip(*ep)
        np.testing.assert_array_equal(y_out, data.labels)
        _check_permuted_pairs(data.a, data.b, data.labels, a_out, b_out)
    assert epoch(E.make_dataset(data, batch_size=4, augment=True, seed=5)) == e1


# ------------------------------------------------------------------ real data
@pytest.mark.skipif(not REAL_DIR.is_dir(), reason=f"no data at {REAL_DIR}")
def test_real_files_counts_and_labels():
    for split, count in REAL_COUNTS.items():
        data = E.load_entailment_split(split, REAL_DIR)
        assert len(data) == count, split
        assert len(data.a) == len(data.b) == count
        assert set(np.unique(data.labels)) <= {0, 1}
    valid = E.load_entailment_split("validate", REAL_DIR)
    assert 0.45 < valid.labels.mean() < 0.55
    assert valid.a[0] and all(
        set(s) <= set(E.VOCABULARY[2:]) for s in valid.a[:100] + valid.b[:100]
    )
    # The real labels are truth-table entailment (checked on the exam set).
    exam = E.load_entailment_split("test_exam", REAL_DIR)
    for a, b, y in zip(exam.a, exam.b, exam.labels):
        assert _entails(a, b) == bool(y), (a, b)
