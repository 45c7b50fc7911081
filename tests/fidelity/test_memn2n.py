"""MemN2N against the authors' MATLAB code (MemN2N-babi-matlab, run under GNU Octave;
docs/fidelity_memn2n.md).

``fixtures/memn2n.npz`` holds what their code computed on a real bAbI batch
(``python -m tools.fidelity.memn2n``, metadata in ``fixtures/memn2n.json``): their lookup
tables under the port's names, the question vector, per hop the memory vectors ``m`` and
``c``, the attention ``p``, the read ``o`` and the state ``u``, their logits over their
whole vocabulary (the words, then the time words), their summed loss and every gradient,
with the memory softmax and without it (linear start), and two 20-step trajectories of
their ``train_linear_start.m`` and ``train.m``. No Octave and no authors' code needed.

Their code is the port's MemN2N with ``sentence_encoding="position_code"`` (their coded
PE; the time index an extra last word, weighted by the PE's column ``J = W + 1``),
``mask_empty_memories=False`` (empty slots in the softmax with logit 0),
``pad_gradient=True`` (their nil word looked up like a word, its gradient in each table's
clipping norm), ``answer_time_words=True`` (their answer softmax spans the time words:
their ``W = C^K`` is the whole lookup table), adjacent tying, temporal encoding,
``memory_size`` their ``sz``. Their memory holds a story oldest sentence first; the port's
most recent first: activations over slots are compared in the port's order.
"""

import json
import pathlib

import keras
import numpy as np
import pytest
from keras import ops

from tests.fidelity.tolerance import (
    assert_close,
    assert_report_within,
    tolerance,
    value_and_gradients,
)
from tpr_keras.models import MemN2N
from tpr_keras.training.losses import sparse_classification

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "memn2n.npz"
TABLES = ("embeddings", "temporal")


@pytest.fixture(scope="module")
def fixture():
    meta = json.loads(FIXTURE.with_suffix(".json").read_text())
    return dict(np.load(FIXTURE)), meta


def build(data, meta, **options):
    s = meta["sizes"]
    config = dict(embedding_dim=s["embedding_dim"], num_hops=s["num_hops"],
                  memory_size=s["memory_size"], sentence_encoding="position_code",
                  mask_empty_memories=False, pad_gradient=True, answer_time_words=True,
                  temporal_encoding=True, weight_tying="adjacent", random_noise=0.0)
    config.update(options)
    model = MemN2N(vocabulary_size=s["vocabulary"], max_words=s["max_words"], **config)
    theirs = {k[len("weights/"):] for k in data if k.startswith("weights/")}
    assert {v.path for v in model.trainable_variables} == theirs
    for v in model.trainable_variables:
        v.assign(data[f"weights/{v.path}"])
    return model


def depths(meta):
    """Reduction depths (``tolerance.py``): a sentence sums its ``W + 1`` word slots (the
    time word included); a hop adds a dot product over ``d``, the softmax and the read
    over the ``sz`` slots; the logits one more dot product; the loss the softmax over the
    ``V + sz`` answers and the batch sum; a gradient twice the loss's depth plus the
    ``B · sz · (W + 1)`` lookups it sums."""
    s = meta["sizes"]
    d, slots, words = s["embedding_dim"], s["memory_size"], s["max_words"] + 1
    out = {"embed": words, "hop": d + 2 * slots}
    for k in range(s["num_hops"] + 1):
        out[f"u_{k}"] = words + k * (out["hop"] + words)
    out["logits"] = out[f"u_{s['num_hops']}"] + d
    out["loss"] = out["logits"] + s["vocabulary"] + slots + s["batch"]
    out["gradient"] = 2 * out["loss"] + s["batch"] * slots * words
    return out


def to_port_order(theirs, time):
    """``[B, sz, ...]`` in their slot order (oldest sentence first, empty slots last) in
    the port's (the most recent first, empty slots last): their slot of time ``t`` is the
    port's slot ``t - 1``."""
    out = np.array(theirs)
    for b in range(time.shape[0]):
        for j in np.flatnonzero(time[b]):
            out[b, time[b, j] - 1] = theirs[b, j]
    return out


def inputs(data, prefix="input"):
    return {"story": data[f"{prefix}/story"], "question": data[f"{prefix}/question"]}


@pytest.mark.parametrize("linear", [False, True], ids=["softmax", "linear_start"])
def test_every_hop_given_their_inputs(fixture, linear):
    data, meta = fixture
    model, depth, report = build(data, meta, linear_start=linear), depths(meta), []
    key = "ls/" if linear else ""
    act = lambda name: data[f"{key}act/{name}"]  # noqa: E731
    network, time = model.network, data["input/time"]
    ids, mask, count = network.memory_slots(data["input/story"])
    ours_time = np.asarray(network.time_indices(mask, count))
    assert np.array_equal(ours_time, to_port_order(time, time))  # their time words
    assert_close("u_0", network.question_table(data["input/question"]), act("u_0"),
                 depth["embed"], report=report)
    for k, (hop, a, c) in enumerate(zip(network.hops, network.input_tables,
                                        network.output_tables), 1):
        m_k, c_k = (to_port_order(act(f"{n}_{k}"), time) for n in ("m", "c"))
        assert_close(f"m_{k}", a(ids, time_index=ours_time), m_k, depth["embed"],
                     report=report)
        assert_close(f"c_{k}", c(ids, time_index=ours_time), c_k, depth["embed"],
                     report=report)
        u, p = hop([act(f"u_{k - 1}"), m_k, c_k], memory_mask=np.asarray(mask), linear=linear)
        scale = np.max(np.abs(act(f"u_{k}")))
        assert_close(f"p_{k}", p, to_port_order(act(f"p_{k}"), time), depth["hop"],
                     report=report)
        assert_close(f"o_{k}", np.asarray(u) - act(f"u_{k - 1}"), act(f"o_{k}"), depth["hop"],
                     magnitude=scale, report=report)
        assert_close(f"u_{k}", u, act(f"u_{k}"), depth["hop"], magnitude=scale, report=report)
    print("\n".join(f"{n}: {e:.3g} <= {b:.3g}" for n, e, b in report))


def loss_and_gradients(model, loss_fn):
    """``value_and_gradients`` with dense gradients (TensorFlow gives a gather's gradient
    as ``IndexedSlices``)."""
    if keras.backend.backend() != "tensorflow":
        return value_and_gradients(model, loss_fn)
    import tensorflow as tf

    with tf.GradientTape() as tape:
        loss = loss_fn()
    grads = tape.gradient(loss, model.trainable_variables)
    return loss.numpy(), [tf.convert_to_tensor(g).numpy() for g in grads]


def summed_loss(model, data, prefix="input"):
    compute = sparse_classification("answer")
    labels = {"answer": data[f"{prefix}/answer"]}
    return lambda: ops.sum(compute(model, inputs(data, prefix), labels, False)["loss"])


@pytest.mark.parametrize("linear", [False, True], ids=["softmax", "linear_start"])
def test_logits_loss_and_every_gradient(fixture, linear):
    data, meta = fixture
    model, depth, report = build(data, meta, linear_start=linear), depths(meta), []
    key = "ls/" if linear else ""
    logits = data[f"{key}logits"]
    ours = model(inputs(data))
    assert_close("logits", ours, logits, depth["logits"], report=report)
    # their answer probabilities: a softmax of those logits (conditioned by their size)
    assert_close("probs", ops.softmax(ours, axis=-1), data[f"{key}probs"],
                 depth["logits"] + logits.shape[1], magnitude=np.max(np.abs(logits)),
                 report=report)
    value, grads = loss_and_gradients(model, summed_loss(model, data))
    # the loss sums B terms of the logits' size
    magnitude = max(abs(data[f"{key}loss"]), meta["sizes"]["batch"] * np.max(np.abs(logits)))
    assert_close("loss", value, data[f"{key}loss"], depth["loss"], magnitude=magnitude,
                 report=report)
    grads = {v.path: g for v, g in zip(model.trainable_variables, grads)}
    for path, g in grads.items():
        table = path.rsplit("/", 1)[0]
        scale = max(np.max(np.abs(data[f"{key}grad/{table}/{t}"])) for t in TABLES)
        assert_close(f"grad/{path}", g, data[f"{key}grad/{path}"], depth["gradient"],
                     magnitude=scale, report=report)
    assert np.any(data[f"{key}grad/memn2n/embedding_1/embeddings"][0])  # their nil word's
    worst = max(report[3:], key=lambda r: r[1] / r[2])
    print("\n".join(f"{n}: {e:.3g} <= {b:.3g}" for n, e, b in report[:3]),
          f"\n{len(grads)} gradients, worst {worst[0]}: {worst[1]:.3g} <= {worst[2]:.3g}")


def test_a_wrong_weight_fails(fixture):
    """A mapping error (the second hop's output table given the first's time rows)
    moves the logits by more than 100 times their tolerance."""
    data, meta = fixture
    model = build(data, meta)
    model.network.embedding_2.temporal.assign(data["weights/memn2n/embedding_1/temporal"])
    error = np.max(np.abs(np.asarray(model(inputs(data))) - data["logits"]))
    assert error > 100 * tolerance(depths(meta)["logits"], np.max(np.abs(data["logits"])))


@pytest.mark.parametrize("option", [dict(mask_empty_memories=True),
                                    dict(sentence_encoding="position"),
                                    dict(answer_time_words=False)])
def test_other_options_compute_another_function(fixture, option):
    """Each option that reproduces their code is needed: the port's defaults leave their
    loss by far more than its tolerance."""
    data, meta = fixture
    model = build(data, meta, **option)
    value, _ = loss_and_gradients(model, summed_loss(model, data))
    bound = tolerance(depths(meta)["loss"], max(
        abs(data["loss"]), meta["sizes"]["batch"] * np.max(np.abs(data["logits"]))))
    assert abs(float(value) - float(data["loss"])) > 100 * bound


def authors_code_steps(data, meta, key, model_dir, **changes):
    """Their training step on the port as ``train.babi`` builds it from the ``authors_code``
    recipe (with ``changes`` to its keys): its model options, SGD at its rate (the linear start's for
    ``key == "traj_ls"``), the batch-summed loss and the per-matrix spectral clip, run by the
    port's :class:`Trainer` step from their initial weights on their batches. Returns the
    per-step summed losses and the final weights."""
    import tensorflow as tf

    from tpr_keras.training import TrainConfig, Trainer
    from tpr_keras.training.recipes import recipe

    hp, opt = recipe("memn2n", "joint_paper", "authors_code"), meta["optimizer"]
    linear = key == "traj_ls"
    rate = hp["learning_rate"] * (hp["linear_start_lr_factor"] if linear else 1.0)
    assert (hp["optimizer"], hp["loss_reduction"], hp["matrix_norm"]) == ("sgd", "sum",
                                                                           "spectral")
    assert (rate, hp["clip_norm"]) == pytest.approx(
        (opt["linear_start_learning_rate" if linear else "learning_rate"],
         opt["clip_per_matrix"]))
    hp.update(changes)
    model_options = {k: hp[k] for k in ("sentence_encoding", "mask_empty_memories",
                                        "pad_gradient", "answer_time_words")}
    trainer = Trainer(
        lambda: build(data, meta, linear_start=linear, **model_options),
        lambda: keras.optimizers.SGD(rate), sparse_classification("answer"),
        TrainConfig(learning_rate=rate, clip_norm=None, loss_reduction=hp["loss_reduction"],
                    clip_per_matrix=hp["clip_norm"], matrix_norm=hp["matrix_norm"],
                    warmup_steps=0, halve_lr_below=None, verbose=0),
        model_dir=str(model_dir))
    words = meta["sizes"]["max_words"]
    step = trainer.make_train_function((
        {"story": tf.TensorSpec([None, None, words], tf.int32),
         "question": tf.TensorSpec([None, words], tf.int32)},
        {"answer": tf.TensorSpec([None], tf.int32)}))
    losses = []
    for i in range(meta["steps"]):
        batch = {"story": data[f"{key}/story/{i:02d}"], "question": data[f"{key}/question/{i:02d}"]}
        out = step((batch, {"answer": data[f"{key}/answer/{i:02d}"]}))
        assert bool(out["applied"])
        losses.append(float(out["loss"]) * float(out["examples"]))  # theirs: the sum
    return np.asarray(losses), {v.path: np.asarray(v) for v in trainer.model.trainable_variables}


def trajectory_report(data, meta, key, losses, final):
    """Each step's summed loss and the final weights against theirs: the single batch's
    tolerance grown as rounding noise adds up over the steps (``sqrt(step + 1)``); a final
    weight's scale is the largest of its table (``(name, error, tolerance)``)."""
    depth, steps = depths(meta), meta["steps"]
    scale = meta["sizes"]["batch"] * np.max(np.abs(data["ls/logits" if key == "traj_ls"
                                                         else "logits"]))
    report = [(f"{key}/loss/{step}", abs(losses[step] - data[f"{key}/loss"][step]),
               tolerance(depth["loss"] * (step + 1.0), max(scale, data[f"{key}/loss"][step])))
              for step in range(steps)]
    for path, value in final.items():
        table = path.rsplit("/", 1)[0]
        size = max(np.max(np.abs(data[f"{key}/final/{table}/{t}"])) for t in TABLES)
        report.append((f"{key}/final/{path}",
                       float(np.max(np.abs(value - data[f"{key}/final/{path}"]))),
                       tolerance(depth["gradient"] * steps, size)))
    return report


@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="runs the TensorFlow Trainer's compiled step")
@pytest.mark.parametrize("key", ["traj_ls", "traj"])
def test_authors_code_recipe_follows_their_trajectory(fixture, tmp_path, key):
    data, meta = fixture
    losses, final = authors_code_steps(data, meta, key, tmp_path)
    assert_report_within(trajectory_report(data, meta, key, losses, final))


@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="runs the TensorFlow Trainer's compiled step")
@pytest.mark.parametrize("change", [dict(pad_gradient=False), dict(answer_time_words=False),
                                    dict(matrix_norm="frobenius")])
def test_a_changed_recipe_leaves_their_trajectory(fixture, tmp_path, change):
    """The tolerances resolve what only the training step sees: without the nil word's
    gradient in the clipping norm, without the time words' answers, or clipped by the
    Frobenius norm, the step leaves their linear-start trajectory (whose gradients
    exceed the clip of 40 in 8 of the 20 steps)."""
    data, meta = fixture
    losses, final = authors_code_steps(data, meta, "traj_ls", tmp_path, **change)
    report = trajectory_report(data, meta, "traj_ls", losses, final)
    worst = max(report, key=lambda r: r[1] / r[2])
    print(f"\n{change}: {worst[0]} {worst[1]:.3g} = {worst[1] / worst[2]:.0f} x {worst[2]:.3g}")
    assert worst[1] > 10.0 * worst[2]


def noise_frequencies(times):
    """``{(n, slot, time): frequency}`` over examples of ``n`` memories, and the counts."""
    counts = (times > 0).sum(axis=1)
    table, sizes = {}, {}
    for n in np.unique(counts):
        rows = times[counts == n]
        sizes[int(n)] = len(rows)
        for slot in range(n):
            values, seen = np.unique(rows[:, slot], return_counts=True)
            for value, count in zip(values, seen):
                table[int(n), slot, int(value)] = count / len(rows)
    return table, sizes


def port_noise(data, meta, random_noise, repeats=10):
    """The port's training-time indices for the memories of their noisy batches
    (``repeats`` draws each), as :func:`noise_frequencies` reads them."""
    model = build(data, meta, random_noise=random_noise, seed=7)
    mask = np.tile(data["noise/time"] > 0, (repeats, 1))
    return np.asarray(model.network.time_indices(mask, mask.sum(axis=1), training=True))


def noise_distance(theirs, ours):
    """The largest difference of a frequency in units of its standard error (binomial, the
    two samples' sizes), over every ``(n, slot, time)`` either side draws."""
    (f1, n1), (f2, n2) = noise_frequencies(theirs), noise_frequencies(ours)
    worst = 0.0
    for key in set(f1) | set(f2):
        p, q = f1.get(key, 0.0), f2.get(key, 0.0)
        pooled = (p * n1[key[0]] + q * n2[key[0]]) / (n1[key[0]] + n2[key[0]])
        error = np.sqrt(max(pooled * (1 - pooled), 1e-4) * (1 / n1[key[0]] + 1 / n2[key[0]]))
        worst = max(worst, abs(p - q) / error)
    return worst


def test_random_noise_draws_their_distribution(fixture):
    """Their ``train.m`` with ``randomize_time`` 0.1 (3,200 recorded memories of 2-10
    sentences) against the port's ``random_noise`` 0.1 on the same memories: every
    frequency of a time index at a slot (59 of them) agrees within 5 standard errors; the
    port at 0.3 is far off."""
    data, meta = fixture
    theirs = data["noise/time"].astype(np.int64)
    assert np.any(theirs != np.where(theirs > 0, np.arange(1, theirs.shape[1] + 1), 0))
    assert noise_distance(theirs, port_noise(data, meta, 0.1)) < 5.0
    assert noise_distance(theirs, port_noise(data, meta, 0.3)) > 10.0
