import math

import keras
import numpy as np
import pytest
from keras import ops

from tpr_keras import testing
from tpr_keras.models.tp_transformer import (
    END_ID,
    PAD_ID,
    PAPER_SIZES,
    START_ID,
    TPTransformer,
    sequence_compute_fn,
)

# Runs on TensorFlow and again under KERAS_BACKEND=jax (the test command's second half).
pytestmark = pytest.mark.every_backend

V = 12


def _model(placement="code", seed=0, **overrides):
    keras.utils.set_random_seed(seed)
    return TPTransformer.from_paper_size(
        "tiny", vocabulary_size=V, model_dim=16, feed_forward_dim=32,
        norm_placement=placement, **overrides,
    )


def _sources(seed=0, batch=3, length=7):
    rng = np.random.default_rng(seed)
    src = rng.integers(4, V, size=(batch, length)).astype("int32")
    src[1, 5:] = PAD_ID
    return src


def _short_sources():
    """Four symbols, row 1 padded after three: under JAX each source length is a new shape
    for every op of the encoder to compile, so the tests that need a second length share
    this one (and the 7 of :func:`_sources` once padded)."""
    src = _sources(length=4)
    src[1, 3:] = PAD_ID
    return src


def _sharpen(model, seed=1):
    """Bigger random embeddings, so decoding is not a near-tie everywhere."""
    rng = np.random.default_rng(seed)
    model.embedding.embeddings.assign(rng.normal(0, 1.0, (V, 16)).astype("float32"))
    return model


_MODELS = {}


def _shared(placement):
    """One sharpened model per placement for the tests that do not change it."""
    if placement not in _MODELS:
        _MODELS[placement] = _sharpen(_model(placement))
    return _MODELS[placement]


@pytest.mark.parametrize("placement", ["code", "paper"])
def test_causal_future_targets_do_not_change_earlier_logits(placement):
    model = _shared(placement)
    src = _sources()
    target = np.array([[START_ID, 5, 6, 7]] * 3, "int32")
    before = testing.numpy(model({"source": src, "target_in": target}))
    changed = target.copy()
    changed[:, 3] = 9
    after = testing.numpy(model({"source": src, "target_in": changed}))
    np.testing.assert_allclose(after[:, :3], before[:, :3], rtol=1e-5, atol=1e-5)
    assert not np.allclose(after[:, 3:], before[:, 3:])
    assert before.shape == (3, 4, V)


def test_source_padding_is_masked():
    model = _shared("code")
    src = _short_sources()
    target = np.full((3, 2), START_ID, "int32")
    longer = np.concatenate([src, np.zeros((3, 3), "int32")], axis=1)
    np.testing.assert_allclose(
        testing.numpy(model({"source": longer, "target_in": target})),
        testing.numpy(model({"source": src, "target_in": target})),
        rtol=1e-5, atol=1e-5,
    )


@pytest.mark.parametrize("placement", ["code", "paper"])
def test_cached_and_uncached_greedy_decoding_agree(placement):
    model = _shared(placement)
    src = _sources()
    # Four steps: the uncached reference runs the model once per prefix length, each a new
    # shape for JAX to compile op by op; lengths 1-4 are those the other tests feed it.
    ids, log_prob = model.greedy_decode(src, max_length=4)
    ref_ids, ref_log_prob = model.greedy_decode(src, max_length=4, use_cache=False)
    np.testing.assert_array_equal(testing.numpy(ids), testing.numpy(ref_ids))
    np.testing.assert_allclose(testing.numpy(log_prob), testing.numpy(ref_log_prob),
                               rtol=1e-4, atol=1e-4)
    assert ids.shape == (3, 4) and keras.backend.standardize_dtype(ids.dtype) == "int32"


def test_beam_size_one_equals_greedy():
    model = _shared("code")
    src = _sources(seed=3)
    greedy_ids, greedy_lp = model.greedy_decode(src, max_length=6)
    beam_ids, beam_lp = model.beam_search(src, beam_size=1, max_length=6, alpha=0.6)
    np.testing.assert_array_equal(testing.numpy(beam_ids), testing.numpy(greedy_ids))
    np.testing.assert_allclose(testing.numpy(beam_lp), testing.numpy(greedy_lp),
                               rtol=1e-5, atol=1e-5)


def _compiled_decoder(model):
    """Greedy and beam decoding traced into one compiled function: on TensorFlow a
    ``tf.function`` with an unknown batch dimension (as an exported model traces it), on
    JAX ``jax.jit`` (shapes are static there)."""

    def decode(source):
        return model.greedy_decode(source, max_length=6), model.beam_search(
            source, beam_size=3, max_length=6, return_all=True
        )

    if testing.backend() == "tensorflow":
        import tensorflow as tf

        return tf.function(decode, input_signature=[tf.TensorSpec([None, None], tf.int32)])
    return testing.compiled(decode)


def test_decoding_in_a_compiled_function():
    model = _shared("code")
    src = _sources(seed=3)
    (ids, log_prob), (seqs, scores) = _compiled_decoder(model)(src)
    eager_ids, eager_log_prob = model.greedy_decode(src, max_length=6)
    np.testing.assert_array_equal(testing.numpy(ids), testing.numpy(eager_ids))
    np.testing.assert_allclose(testing.numpy(log_prob), testing.numpy(eager_log_prob),
                               rtol=1e-5, atol=1e-5)
    assert seqs.shape == (3, 3, 6) and scores.shape == (3, 3)
    lengths = np.sum(testing.numpy(seqs) != PAD_ID, axis=-1)
    normalised = testing.numpy(scores) / ((5.0 + lengths) / 6.0) ** 0.6
    assert np.all(np.diff(normalised, axis=1) <= 1e-6)  # best first


def _scripted(model, table):
    """Replaces the decoder by a Markov chain: log p(next | current) = table[current]."""
    log_table = ops.convert_to_tensor(np.log(table).astype("float32"))

    def step(tokens, position, caches, kv, valid):
        return ops.take(log_table, tokens, axis=0), caches

    model._step_log_probs = step


def _chain():
    # Symbols: 4 = "a", 5 = "b". From <s>: a 0.6, b 0.4. From a: a/b/end about 1/3
    # each (a slightly ahead); from b: end 0.99. Greedy: a a a ...; best: b </s>.
    table = np.full((V, V), 1e-6)
    table[START_ID, [4, 5]] = [0.6, 0.4]
    table[4, [4, 5, END_ID]] = [0.34, 0.33, 0.33]
    table[5, [END_ID, 4]] = [0.99, 0.01]
    table[END_ID, 4] = 1.0  # never used: finished rows only get <pad>
    table[PAD_ID, 4] = 1.0
    return table / table.sum(1, keepdims=True)


def test_decoding_stops_at_the_end_symbol_and_pads_after_it():
    model = _model()
    table = _chain()
    _scripted(model, table)
    src = _sources()
    ids, log_prob = model.greedy_decode(src, max_length=5)
    np.testing.assert_array_equal(testing.numpy(ids), [[4, 4, 4, 4, 4]] * 3)
    np.testing.assert_allclose(testing.numpy(log_prob),
                               math.log(table[2, 4]) + 4 * math.log(table[4, 4]), rtol=1e-5)
    seqs, scores = model.beam_search(src, beam_size=2, max_length=5, alpha=0.0, return_all=True)
    best = [5, END_ID, PAD_ID, PAD_ID, PAD_ID]
    np.testing.assert_array_equal(testing.numpy(seqs)[:, 0], [best] * 3)
    np.testing.assert_allclose(testing.numpy(scores)[:, 0],
                               math.log(table[2, 5] * table[5, END_ID]), rtol=1e-5)
    # The runner-up stays live (a a beats a b and a </s> at step 1) to the end.
    np.testing.assert_array_equal(testing.numpy(seqs)[0, 1], [4, 4, 4, 4, 4])
    np.testing.assert_allclose(
        testing.numpy(scores)[0, 1], math.log(table[2, 4]) + 4 * math.log(table[4, 4]), rtol=1e-5
    )
    # Greedy rows that end early: make "a" end immediately.
    ending = table.copy()
    ending[4] = 1e-6
    ending[4, END_ID] = 1.0
    _scripted(model, ending / ending.sum(1, keepdims=True))
    ids, _ = model.greedy_decode(src, max_length=5)
    np.testing.assert_array_equal(testing.numpy(ids), [[4, END_ID, PAD_ID, PAD_ID, PAD_ID]] * 3)


def test_keras_round_trip(tmp_path):
    vocabulary = ["<pad>", "<unk>", "<s>", "</s>"] + list("0123456 ?")[: V - 4]
    model = _model(vocabulary=vocabulary)
    _sharpen(model)
    src = _sources()
    target = np.array([[START_ID, 5, 6]] * 3, "int32")
    path = tmp_path / "model.keras"
    model.save(path)
    restored = keras.models.load_model(path)
    assert isinstance(restored, TPTransformer)
    assert restored.get_config() == model.get_config()
    assert list(restored.vocabulary) == vocabulary
    np.testing.assert_allclose(
        testing.numpy(restored({"source": src, "target_in": target})),
        testing.numpy(model({"source": src, "target_in": target})),
        rtol=1e-6, atol=1e-6,
    )
    np.testing.assert_array_equal(
        testing.numpy(restored.greedy_decode(src, 5)[0]),
        testing.numpy(model.greedy_decode(src, 5)[0]),
    )


def test_compute_fn_masks_padding_and_needs_the_whole_answer():
    target = np.array([[5, 6, END_ID], [7, END_ID, PAD_ID]], "int32")
    # Logits +-2, not +-5: a token loss of 5e-4 (log 1.0005) has float32 rounding errors of
    # 1e-4 relative, which differ with the order of the sum over symbols (backend, kernel).
    logits = np.full((2, 3, V), -2.0, "float32")
    for b, row in enumerate([[5, 6, END_ID], [7, END_ID, 9]]):  # row 1: wrong only at a pad
        for t, s in enumerate(row):
            logits[b, t, s] = 2.0

    def model(features, training):
        return ops.convert_to_tensor(logits)

    out = sequence_compute_fn()(model, {}, {"target_out": target}, False)
    z = logits[0, 0].astype("float64")
    token_ce = np.log(np.sum(np.exp(z))) - z[5]
    np.testing.assert_allclose(testing.numpy(out["loss"]), [3 * token_ce, 2 * token_ce], rtol=1e-5)
    np.testing.assert_array_equal(testing.numpy(out["correct"]), [1.0, 1.0])
    logits[1, 1, 8] = 9.0  # now the end symbol of row 1 is wrong
    out = sequence_compute_fn(reduction="mean")(model, {}, {"target_out": target}, False)
    np.testing.assert_array_equal(testing.numpy(out["correct"]), [1.0, 0.0])
    np.testing.assert_allclose(testing.numpy(out["loss"])[0], token_ce, rtol=1e-5)


def test_compute_fn_with_xla_gives_the_same_loss_and_gradients():
    # One encoder and one decoder layer: XLA compiles every layer, whatever the depth.
    model = _model(num_encoder_layers=1, num_decoder_layers=1)
    src = _short_sources()  # as long as the target: the attentions share their shapes
    features = {"source": src, "target_in": np.full((3, 4), START_ID, "int32")}
    labels = {"target_out": np.array([[5, 6, END_ID, PAD_ID], [7, END_ID, PAD_ID, PAD_ID],
                                      [4, 4, 4, END_ID]], "int32")}
    compute = sequence_compute_fn()

    def step():  # the integer features and labels are closed over
        out = compute(model, features, labels, True)
        _, grads, _ = testing.value_and_gradients(
            lambda: ops.sum(compute(model, features, labels, True)["loss"]),
            model.trainable_variables)
        return out["loss"], out["correct"], grads

    results = []
    for run in (step, testing.compiled(step, jit_compile=True)):
        loss, correct, grads = run()
        global_norm = np.sqrt(sum(np.sum(np.square(testing.numpy(g))) for g in grads))
        results.append((testing.numpy(loss), testing.numpy(correct), global_norm))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-4)
    np.testing.assert_array_equal(results[1][1], results[0][1])
    np.testing.assert_allclose(results[1][2], results[0][2], rtol=1e-4)


def _expected_count(v, d, f, n_enc, n_dec, role, multiplicative):
    attention = (5 if role else 4) * (d * d + d)
    ff = 2 * d * f + f + d
    encoder = attention + ff + 3 * 2 * d
    decoder = 2 * attention + ff + 4 * 2 * d
    return v * d + (d * d + d if multiplicative else 0) + n_enc * encoder + n_dec * decoder


def test_parameter_counts_and_paper_sizes():
    model = _shared("code")  # tiny with d 16, d_f 32
    assert model.count_params() == _expected_count(V, 16, 32, 2, 2, True, True)
    # Baseline attention and embedding have no role / multiplier weights (see the layer
    # tests), so the baseline sizes follow the same formula without those terms.
    sizes = {name: (p.config["model_dim"], p.config["feed_forward_dim"], p.config["num_heads"],
                    p.config["num_encoder_layers"]) for name, p in PAPER_SIZES.items()}
    assert sizes["tp_transformer"] == sizes["transformer"] == (512, 2048, 8, 6)  # §4.1
    assert sizes["tp_transformer_b"] == (480, 1920, 8, 6)
    assert sizes["tp_transformer_c"] == (512, 512, 8, 6)
    assert sizes["tiny"] == (64, 256, 4, 2)
    assert not PAPER_SIZES["transformer"].config["use_role"]
    assert PAPER_SIZES["tp_transformer"].config["use_role"]
    # Table 1: the Transformer baseline has 44.2M weights (73 symbols here).
    assert round(_expected_count(73, 512, 2048, 6, 6, False, False) / 1e6, 1) == 44.2
    with pytest.raises(ValueError, match="Unknown paper size"):
        TPTransformer.from_paper_size("huge", vocabulary_size=73)


def test_attention_details_for_analysis():
    model = _shared("code")
    details = model.attention_details(
        {"source": _sources(), "target_in": np.full((3, 2), START_ID, "int32")}
    )
    assert len(details["encoder"]) == 2 and len(details["decoder"]) == 2
    assert details["encoder"][0]["roles"].shape == (3, 4, 7, 4)
    assert details["decoder"][1]["cross_attention"].shape == (3, 4, 2, 7)
    assert details["logits"].shape == (3, 2, V)


# tf.train.Checkpoint is what the TensorFlow Trainer (CheckpointIO) writes; TF only.
@pytest.mark.tensorflow_backend
def test_training_checkpoint_holds_every_weight(tmp_path):
    import tensorflow as tf

    model = _model()
    checkpoint = tf.train.Checkpoint(model=model)  # what the Trainer saves
    path = checkpoint.write(str(tmp_path / "weights"))
    saved = [testing.numpy(w).copy() for w in model.weights]
    for w in model.weights:
        w.assign(w + 1.0)
    checkpoint.read(path).assert_consumed()
    for w, value in zip(model.weights, saved):
        np.testing.assert_array_equal(testing.numpy(w), value, err_msg=w.path)


def test_decoding_and_loss_live_in_their_modules():
    """Decoding in the family's decoding.py, the loss with the other losses below the
    models (tpr_keras.losses); the names users import keep working."""
    from tpr_keras import losses, models, training
    from tpr_keras.models.tp_transformer import decoding
    from tpr_keras.training import losses as training_losses

    assert models.sequence_compute_fn is losses.sequence_cross_entropy
    assert training_losses.sequence_cross_entropy is losses.sequence_cross_entropy
    assert training.sequence_cross_entropy is losses.sequence_cross_entropy
    model = _shared("code")
    source = _sources()
    ids, log_prob = decoding.greedy_decode(model, source, max_length=5)
    same_ids, same_log_prob = model.greedy_decode(source, max_length=5)
    np.testing.assert_array_equal(testing.numpy(ids), testing.numpy(same_ids))
    np.testing.assert_allclose(testing.numpy(log_prob), testing.numpy(same_log_prob))
