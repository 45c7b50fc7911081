"""The TP-Transformer's in-graph decoding (Schlag et al., 2019, §2.3): greedy and beam search.

Both run the cached decoder one position per step inside a single
``keras.ops.while_loop`` (static shapes; the batch size may be unknown), reading
earlier positions from fixed-size key/value caches. They use the model's cached-step
interface: ``model._decoder_state(source, repeats)`` (encode once),
``model._zero_caches(rows, length)`` and ``model._step_log_probs(tokens, position,
caches, kv, valid)`` (one decoder step), and its ``start_id``, ``end_id``, ``pad_id``,
``vocabulary_size`` and ``max_decode_length``. :class:`TPTransformer`'s
``greedy_decode`` and ``beam_search`` methods call these functions.

Example:
>>> ids, log_prob = greedy_decode(model, source)  # doctest: +SKIP
>>> ids, log_prob = beam_search(model, source, beam_size=4)  # doctest: +SKIP
"""

from keras import ops

from tpr_keras.ops.masking import MASK_VALUE


def take_rows(x, index):
    """Rows of each batch entry: ``x[b, index[b, k], ...]``.

    ``[B, N, ...]`` (static beyond ``B``) by ``int32[B, K]`` -> ``[B, K, ...]``, as one
    gather along a flattened first axis (``tf.gather`` with ``batch_dims=1``;
    ``keras.ops.take_along_axis`` costs far more per decoding step).
    """
    n, k = x.shape[1], index.shape[1]
    rows = ops.arange(ops.shape(x)[0], dtype="int32")[:, None] * n + index
    flat = ops.reshape(x, (-1, *x.shape[2:]))
    return ops.reshape(ops.take(flat, ops.reshape(rows, (-1,)), axis=0), (-1, k, *x.shape[2:]))


def greedy_pick(model, log_probs, finished, log_prob):
    """One greedy step: the most probable symbol of each row (``pad_id`` once finished),
    the summed log-probability and the finished flags after it."""
    chosen = ops.cast(ops.argmax(log_probs, axis=-1), "int32")
    chosen = ops.where(finished, model.pad_id, chosen)
    gained = take_rows(log_probs, chosen[:, None])[:, 0]
    log_prob = log_prob + ops.where(finished, 0.0, gained)
    finished = ops.logical_or(finished, ops.equal(chosen, model.end_id))
    return chosen, log_prob, finished


def greedy_decode(model, source, max_length=None, use_cache=True):
    """Greedy decoding (§2.3): the most probable symbol at every step.

    With ``use_cache=True`` (default) the encoder runs once and the decoder runs
    one position per step inside a single ``keras.ops.while_loop``, reading earlier
    positions from fixed-size key/value caches (static shapes; the batch size may
    be unknown), stopping when every row has produced the end symbol. With
    ``use_cache=False`` it re-runs the full decoder on the growing prefix at each
    step in a Python loop (the slow reference used by the tests). Inside a
    ``tf.function``, trace it with ``autograph=False``: its control flow is the
    loop op already.

    Args:
        model: a built :class:`~tpr_keras.models.TPTransformer`.
        source: ``int32[B, Ls]`` question ids, ``pad_id``-padded.
        max_length: decoding steps ``L`` (a Python int); default
            ``max_decode_length``.
        use_cache: see above.

    Returns:
        ``(ids int32[B, L], log_prob float32[B])``: generated symbols (end symbol
        included, then ``pad_id``) and the sum of their log-probabilities.
    """
    length = int(max_length or model.max_decode_length)
    source = ops.convert_to_tensor(source, "int32")
    if not use_cache:
        return _greedy_uncached(model, source, length)
    batch = ops.shape(source)[0]
    kv, valid = model._decoder_state(source)
    steps = ops.arange(length, dtype="int32")

    def cond(t, tokens, finished, log_prob, ids, caches):
        return ops.logical_and(t < length, ops.logical_not(ops.all(finished)))

    def body(t, tokens, finished, log_prob, ids, caches):
        log_probs, caches = model._step_log_probs(tokens, t, caches, kv, valid)
        chosen, log_prob, finished = greedy_pick(model, log_probs, finished, log_prob)
        ids = ops.where(ops.equal(steps, t)[None, :], chosen[:, None], ids)
        return t + 1, chosen, finished, log_prob, ids, caches

    initial = (
        ops.convert_to_tensor(0, "int32"),
        ops.full((batch,), model.start_id, "int32"),
        ops.zeros((batch,), "bool"),
        ops.zeros((batch,), "float32"),
        ops.full((batch, length), model.pad_id, "int32"),
        model._zero_caches(batch, length),
    )
    _, _, _, log_prob, ids, _ = ops.while_loop(cond, body, initial,
                                               maximum_iterations=length)
    return ids, log_prob


def _greedy_uncached(model, source, length):
    batch = ops.shape(source)[0]
    prefix = ops.full((batch, 1), model.start_id, "int32")
    finished = ops.zeros((batch,), "bool")
    log_prob = ops.zeros((batch,), "float32")
    outputs = []
    for _ in range(length):  # Python loop: reference implementation only.
        logits = model({"source": source, "target_in": prefix}, training=False)
        log_probs = ops.log_softmax(ops.cast(logits[:, -1], "float32"), axis=-1)
        chosen, log_prob, finished = greedy_pick(model, log_probs, finished, log_prob)
        outputs.append(chosen)
        prefix = ops.concatenate([prefix, chosen[:, None]], axis=1)
    return ops.stack(outputs, axis=1), log_prob


def length_penalty(length, alpha):
    """GNMT length penalty ``((5 + length) / 6) ** alpha`` (Wu et al. 2016)."""
    return ops.power((5.0 + ops.cast(length, "float32")) / 6.0, alpha)


def beam_search(model, source, beam_size=4, max_length=None, alpha=0.6, return_all=False):
    """Beam search over the cached decoder, in one ``keras.ops.while_loop``.

    ``beam_size`` hypotheses per row. At each step every live hypothesis is
    extended by every symbol; a finished one (it produced the end symbol) only
    by ``pad_id`` at no cost, so it keeps its score. The ``beam_size`` best
    candidates by length-normalised score ``log_prob / lp(length)`` survive
    (``lp`` = :func:`length_penalty`; ``length`` counts symbols up to and
    including the end symbol). Stops when all hypotheses are finished or after
    ``max_length`` steps. With ``beam_size=1`` this is exactly greedy decoding.

    Args:
        model: a built :class:`~tpr_keras.models.TPTransformer`.
        source: ``int32[B, Ls]``.
        beam_size: ``K`` (at most the vocabulary size).
        max_length: decoding steps; default ``max_decode_length``.
        alpha: length-penalty exponent; 0 ranks by raw log-probability.
        return_all: return all ``K`` hypotheses, best first.

    Returns:
        ``(ids int32[B, L], log_prob float32[B])`` of the best hypothesis, or
        ``([B, K, L], [B, K])`` with ``return_all``. ``log_prob`` is the raw
        (un-normalised) log-probability.
    """
    beams = int(beam_size)
    if not 1 <= beams <= model.vocabulary_size:
        raise ValueError(f"beam_size must be in [1, {model.vocabulary_size}]; got {beam_size}.")
    length = int(max_length or model.max_decode_length)
    alpha = float(alpha)
    source = ops.convert_to_tensor(source, "int32")
    batch = ops.shape(source)[0]
    kv, valid = model._decoder_state(source, repeats=beams)
    step = _beam_step(model, batch, beams, length, alpha, kv, valid)

    def cond(t, tokens, seqs, scores, lengths, finished, caches):
        return ops.logical_and(t < length, ops.logical_not(ops.all(finished)))

    initial = _beam_initial_state(model, batch, beams, length)
    _, _, seqs, scores, lengths, _, _ = ops.while_loop(cond, step, initial,
                                                       maximum_iterations=length)
    seqs, scores = _best_first(seqs, scores, lengths, alpha, beams)
    if return_all:
        return seqs, scores
    return seqs[:, 0], scores[:, 0]


def _beam_step(model, batch, beams, length, alpha, kv, valid):
    """The loop body of :func:`beam_search`: one decoder step for all ``B * K``
    hypotheses, then the ``K`` best extensions of each row (scores, lengths, symbols,
    finished flags and caches reordered to the beams they extend)."""
    vocab = model.vocabulary_size
    steps = ops.arange(length, dtype="int32")
    pad_only = ops.where(ops.equal(ops.arange(vocab), model.pad_id), 0.0, MASK_VALUE)  # [V]

    def pick_rows(x, index):  # x: [B * K, ...] -> reordered by index [B, K].
        grouped = ops.reshape(x, (-1, beams, *x.shape[1:]))
        return ops.reshape(take_rows(grouped, index), (-1, *x.shape[1:]))

    def body(t, tokens, seqs, scores, lengths, finished, caches):
        log_probs, caches = model._step_log_probs(tokens, t, caches, kv, valid)
        log_probs = ops.reshape(log_probs, (batch, beams, vocab))
        log_probs = ops.where(finished[:, :, None], pad_only, log_probs)
        candidates = scores[:, :, None] + log_probs  # [B, K, V]
        new_lengths = ops.where(finished, lengths, t + 1)  # [B, K]
        normalised = candidates / length_penalty(new_lengths, alpha)[:, :, None]
        _, index = ops.top_k(ops.reshape(normalised, (batch, beams * vocab)), beams)
        index = ops.cast(index, "int32")
        origin = index // vocab  # [B, K] beam each survivor extends
        symbol = index % vocab
        scores = take_rows(ops.reshape(candidates, (batch, beams * vocab, 1)), index)[..., 0]
        lengths = take_rows(new_lengths[:, :, None], origin)[..., 0]
        seqs = take_rows(seqs, origin)
        seqs = ops.where(ops.equal(steps, t)[None, None, :], symbol[:, :, None], seqs)
        finished = ops.logical_or(take_rows(finished[:, :, None], origin)[..., 0],
                                  ops.equal(symbol, model.end_id))
        caches = [pick_rows(c, origin) for c in caches]
        return t + 1, ops.reshape(symbol, (-1,)), seqs, scores, lengths, finished, caches

    return body


def _beam_initial_state(model, batch, beams, length):
    """The loop state of :func:`beam_search` at ``t = 0``: ``(t, tokens, seqs, scores,
    lengths, finished, caches)``; only beam 0 of each row is live (the others score
    ``MASK_VALUE``, so the first step does not pick the same symbol ``K`` times)."""
    first = ops.concatenate([ops.zeros((1,)), ops.full((beams - 1,), MASK_VALUE)], axis=0)
    return (
        ops.convert_to_tensor(0, "int32"),
        ops.full((batch * beams,), model.start_id, "int32"),
        ops.full((batch, beams, length), model.pad_id, "int32"),
        ops.tile(first[None, :], (batch, 1)),
        ops.zeros((batch, beams), "int32"),
        ops.zeros((batch, beams), "bool"),
        model._zero_caches(batch * beams, length),
    )


def _best_first(seqs, scores, lengths, alpha, beams):
    """The final hypotheses ``[B, K, L]`` and raw scores ``[B, K]`` sorted by
    length-normalised score, best first."""
    normalised = scores / length_penalty(lengths, alpha)
    _, order = ops.top_k(normalised, beams)
    order = ops.cast(order, "int32")
    seqs = take_rows(seqs, order)
    scores = take_rows(scores[:, :, None], order)[..., 0]
    return seqs, scores
