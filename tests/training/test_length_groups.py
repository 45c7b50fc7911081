"""``sequence_cross_entropy(length_groups=...)``: the TP-Transformer's loss on length-sorted
parts of a padded batch equals the whole batch's, loss, match and every gradient (the
step computes less padding, not another function). The model is the tiny size with one
encoder and one decoder layer: what a cut changes (the pad columns every attention masks)
is the same in each layer, and a layer fewer is a smaller graph to trace."""

import itertools

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.fidelity.tolerance import assert_close
from tpr_keras.losses import length_grouped_terms, padding_cuts, sequence_cross_entropy
from tpr_keras.models import TPTransformer

VOCABULARY = 20


def padded_batch(rows, source_length, target_length, seed=0):
    """Random questions and answers of random lengths, padded at the end (id 0)."""
    rng = np.random.default_rng(seed)
    source = np.zeros((rows, source_length), "int32")
    target_in = np.zeros((rows, target_length), "int32")
    target_out = np.zeros((rows, target_length), "int32")
    for i in range(rows):
        length, answer = rng.integers(3, source_length + 1), rng.integers(1, target_length)
        source[i, :length] = rng.integers(4, VOCABULARY, length)
        symbols = rng.integers(4, VOCABULARY, answer)
        target_in[i, 0], target_in[i, 1:answer + 1] = 2, symbols
        target_out[i, :answer], target_out[i, answer] = symbols, 3
    return {"source": source, "target_in": target_in}, {"target_out": target_out}


def tiny_model():
    """The tiny TP-Transformer (d 64, feed-forward 256, 4 heads), one layer each side."""
    keras.utils.set_random_seed(0)
    return TPTransformer.from_paper_size("tiny", vocabulary_size=VOCABULARY,
                                         num_encoder_layers=1, num_decoder_layers=1)


# Every batch here is [rows, 30] sources and [rows, 8] targets of int32 ids; a step traced
# for unknown sizes serves every batch, so each loss is traced once in the file.
SIGNATURE = ({"source": tf.TensorSpec([None, None], tf.int32),
              "target_in": tf.TensorSpec([None, None], tf.int32)},
             {"target_out": tf.TensorSpec([None, None], tf.int32)})


def gradients_fn(model, compute):
    """``fn(features, labels) -> (outputs, gradients)`` as numpy, one traced step for
    batches of every size."""
    @tf.function(input_signature=SIGNATURE)
    def run(features, labels):
        with tf.GradientTape() as tape:
            out = compute(model, features, labels, True)
            loss = tf.reduce_sum(out["loss"])
        return out, tape.gradient(loss, model.trainable_variables)

    def fn(features, labels):
        out, grads = run(features, labels)
        return {k: v.numpy() for k, v in out.items()}, [g.numpy() for g in grads]

    return fn


@pytest.fixture(scope="module")
def steps():
    """``steps(groups, cuts)``: the model's step for that loss (1 group: the whole batch),
    built once for the file. The model is not trained (its weights stay those of seed 0),
    so every test sees the same model."""
    model, cache = tiny_model(), {}

    def step(groups, cuts="padding", target_groups=1, multiple=1):
        key = groups, cuts, target_groups, multiple
        if key not in cache:
            cache[key] = gradients_fn(model, sequence_cross_entropy(
                reduction="batch_token_mean", length_groups=groups, group_cuts=cuts,
                target_groups=target_groups, group_multiple=multiple))
        return cache[key]

    step.model = model
    return step


@pytest.mark.parametrize("groups,rows,cuts,target_groups,multiple", [
    (3, 24, "padding", 1, 1), (3, 24, "equal", 1, 1), (2, 7, "padding", 1, 1),
    (3, 2, "equal", 1, 1),
    # each group cut again by answer length; then more parts than rows (empty parts)
    (2, 24, "padding", 2, 1), (2, 3, "equal", 2, 1),
    # cuts and lengths at multiples of 8 (lengths capped at the batch's)
    (2, 24, "padding", 2, 8), (3, 21, "equal", 1, 8)])
def test_grouped_loss_and_gradients_equal_the_whole_batch(steps, groups, rows, cuts,
                                                          target_groups, multiple):
    model = steps.model
    features, labels = padded_batch(rows, 30, 8)
    whole, whole_grads = steps(1)(features, labels)
    parts, part_grads = steps(groups, cuts, target_groups, multiple)(features, labels)
    # Per example (in the batch's order): the same forward pass on fewer pad columns,
    # whose masked keys add exactly 0; the sums differ in order only. Depth: the longest
    # reduction on the path, the feed-forward's 256 and the vocabulary's softmax.
    assert_close("loss", parts["loss"], whole["loss"], depth=256 + VOCABULARY)
    np.testing.assert_array_equal(parts["correct"], whole["correct"])
    # A weight's gradient sums over every row and position of the batch (rows · 30) terms
    # of its sub-layer's gradient scale; some sums cancel (a key bias's gradient is zero
    # up to rounding), so the magnitude is the sub-layer's largest gradient, as in
    # tests/fidelity.
    scale = {}
    for variable, theirs in zip(model.trainable_variables, whole_grads):
        group = variable.path.rsplit("/", 1)[0]
        scale[group] = max(scale.get(group, 0.0), float(np.max(np.abs(theirs))))
    for variable, ours, theirs in zip(model.trainable_variables, part_grads, whole_grads):
        assert_close(variable.path, ours, theirs, depth=rows * 30 * 256,
                     magnitude=scale[variable.path.rsplit("/", 1)[0]])


def test_target_groups_pad_each_part_to_its_own_answers():
    """Questions of one length, answers of two: one cut by question length pads every
    answer to the longest; a second cut by answer length pads each to its own."""
    features, labels = padded_batch(8, 30, 8)
    features["source"][:, :] = 5
    answers = np.array([1, 6, 1, 6, 1, 6, 1, 6])  # symbols; + <s> / </s>
    labels["target_out"][:] = 0
    features["target_in"][:] = 0
    for i, n in enumerate(answers):
        features["target_in"][i, :n + 1] = [2] + [7] * n
        labels["target_out"][i, :n + 1] = [7] * n + [3]

    def widths(target_groups):
        # terms -> each example's part width on the answer axis
        out = length_grouped_terms(
            lambda f, t: (tf.fill(tf.shape(t)[:1], tf.shape(t)[1]),), features,
            tf.constant(labels["target_out"]), 1, 0, "source", "padding", target_groups)
        return out[0].numpy().tolist()

    assert widths(1) == [7] * 8
    assert widths(2) == [2, 7] * 4


def test_group_multiple_cuts_and_pads_at_multiples_of_it():
    """Every part's row count but the last, and its widths, are multiples of the
    multiple (a width at most the batch's): few distinct shapes over many batches."""
    features, labels = padded_batch(21, 30, 8, seed=3)

    def shapes(multiple, groups=3, target_groups=2):
        out = tf.function(length_grouped_terms, autograph=False)(
            lambda f, t: tuple(tf.fill(tf.shape(t)[:1], n) for n in (
                tf.shape(t)[0], tf.shape(f["source"])[1], tf.shape(t)[1])),
            {k: tf.constant(v) for k, v in features.items()},
            tf.constant(labels["target_out"]), groups, 0, "source", "padding", target_groups,
            multiple)
        return {tuple(int(x[i]) for x in out) for i in range(21)}

    exact, rounded = shapes(1), shapes(8)
    assert any(rows % 8 or width % 8 for rows, width, _ in exact)  # the test can see it
    assert sum(rows for rows, _, _ in rounded) <= 21 + 8 * 6
    for rows, width, answer in rounded:
        assert width % 8 == 0 or width == 30, rounded
        assert answer % 8 == 0 or answer == 8, rounded
    assert sum(rows % 8 != 0 for rows, _, _ in rounded) <= 2, rounded  # a run's last part


def test_a_wrong_grouping_would_be_seen(steps):
    """The comparison sees a one-example change: the grouped loss of another batch."""
    features, labels = padded_batch(24, 30, 8)
    other = {k: v.copy() for k, v in features.items()}
    other["source"][5, :3] = [4, 5, 6]
    step = steps(3)
    a, _ = step(features, labels)
    b, _ = step(other, labels)
    with pytest.raises(AssertionError):
        assert_close("loss", b["loss"], a["loss"], depth=256 + VOCABULARY)


def test_bad_group_counts_are_refused():
    with pytest.raises(ValueError, match="length_groups"):
        sequence_cross_entropy(length_groups=0)
    with pytest.raises(ValueError, match="group_cuts must be one of"):
        sequence_cross_entropy(length_groups=2, group_cuts="middle")
    with pytest.raises(ValueError, match="target_groups"):
        sequence_cross_entropy(length_groups=2, target_groups=0)
    with pytest.raises(ValueError, match="group_multiple"):
        sequence_cross_entropy(length_groups=2, group_multiple=0)


def padded_positions(lengths, cuts):
    return sum((b - a) * lengths[b - 1] for a, b in zip(cuts, cuts[1:]) if b > a)


def fewest_padded_positions(lengths, groups):
    """Every way to cut ``lengths`` into ``groups`` runs, tried."""
    n = len(lengths)
    return min(padded_positions(lengths, (0, *inner, n))
               for inner in itertools.combinations_with_replacement(range(n + 1), groups - 1))


@pytest.mark.parametrize("seed", range(4))
def test_padding_cuts_leave_the_fewest_padded_positions(seed):
    rng = np.random.default_rng(seed)
    lengths = np.sort(rng.integers(1, 60, 9)).astype("int32")
    for groups in (1, 2, 3, 4):
        cuts = [int(c) for c in padding_cuts(tf.constant(lengths), groups)]
        assert cuts[0] == 0 and cuts[-1] == 9 and cuts == sorted(cuts), cuts
        assert padded_positions(lengths, cuts) == fewest_padded_positions(lengths, groups)
    # at multiples of 4 only, each run padded to a multiple of 4: the best such cuts
    rounded = (lengths + 3) // 4 * 4
    for groups in (2, 3):
        cuts = [int(c) for c in padding_cuts(tf.constant(lengths), groups, multiple=4)]
        assert all(c % 4 == 0 for c in cuts[:-1]) and cuts[-1] == 9, cuts
        assert padded_positions(rounded, cuts) == min(
            padded_positions(rounded, (0, *inner, 9)) for inner in
            itertools.combinations_with_replacement((0, 4, 8, 9), groups - 1))
    # lengths of two kinds: the cut falls between them, whatever the counts
    lengths = np.array([5] * 7 + [50] * 2, "int32")
    assert [int(c) for c in padding_cuts(tf.constant(lengths), 2)] == [0, 7, 9]
