"""TPTransformer against the authors' PyTorch TP-Transformer (docs/fidelity_tp_transformer.md).

``fixtures/tp_transformer.npz`` holds what their ``models/tp-transformer.py`` computed on
a real batch of the Mathematics Dataset (``python -m tools.fidelity.tp_transformer``,
metadata in ``fixtures/tp_transformer.json``): weights under the port's names, every
layer's output, logits, loss, every gradient, greedy answers and a 20-step trajectory
of their training step. Here the port gets their weights and the same ids (their
vocabulary: ``<unk> 0, <pad> 1, <sos> 2, <eos> 3``) and must agree to float32 rounding
(tolerances: ``tolerance.py``). No PyTorch and no authors' code needed.

Their decoder self-attention also masks the rows of padded target positions (the port
masks only the future); those rows feed nothing real, so decoder activations and logits
are compared at the real rows (``target_in != <pad>``) and the loss, gradients and
answers everywhere.
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
from tpr_keras.models.tp_transformer import TPTransformer
from tpr_keras.training.losses import sequence_cross_entropy

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "tp_transformer.npz"
PAD = 1


@pytest.fixture(scope="module")
def fixture():
    meta = json.loads(FIXTURE.with_suffix(".json").read_text())
    return dict(np.load(FIXTURE)), meta


def build(data, meta, prefix="weights/"):
    """The port at the fixture's sizes with the fixture's weights (all, one to one)."""
    sizes, ids = meta["sizes"], meta["ids"]
    model = TPTransformer(
        vocabulary_size=sizes["vocabulary"], model_dim=sizes["hidden"], num_heads=sizes["heads"],
        num_encoder_layers=sizes["layers"], num_decoder_layers=sizes["layers"],
        feed_forward_dim=sizes["filter"], pad_id=ids["pad"], start_id=ids["sos"],
        end_id=ids["eos"])
    theirs = {k[len(prefix):] for k in data if k.startswith(prefix)}
    assert {v.path for v in model.trainable_variables} == theirs
    assert len(theirs) == meta["parameters"] == len(model.trainable_weights)
    for v in model.trainable_variables:
        v.assign(data[prefix + v.path])
    return model


def depths(meta, data):
    """Reduction depths (``tolerance.py``) of each computation at the fixture's sizes."""
    s = meta["sizes"]
    d, d_k, d_f, layers = s["hidden"], s["hidden"] // s["heads"], s["filter"], s["layers"]
    ls, lt = data["input/source"].shape[1], data["input/target"].shape[1] - 1
    out = {"embedding": d, "feed_forward": d + d_f,
           "encoder_attention": 2 * d + d_k + ls, "self_attention": 2 * d + d_k + lt,
           "cross_attention": 2 * d + d_k + ls}
    out["encoder"] = 3 * d + out["encoder_attention"] + out["feed_forward"]
    out["decoder"] = (4 * d + out["self_attention"] + out["cross_attention"]
                      + out["feed_forward"])
    out["logits"] = out["embedding"] + layers * (out["encoder"] + out["decoder"]) + d
    # The loss: a log-sum-exp over V and a mean over the batch's tokens on top.
    out["loss"] = out["logits"] + s["vocabulary"] + data["input/target"].size
    # Backpropagation retraces the forward path, then sums over every position.
    out["gradient"] = 2 * out["logits"] + data["input/target"].shape[0] * (ls + lt)
    return out


def token_mean_loss(model, source, target):
    """Their loss from the port's public loss: ``CrossEntropyLoss(ignore_index=<pad>)``
    is the port's per-example token sums (``reduction="sum"``) over the real tokens."""
    compute = sequence_cross_entropy(pad_id=PAD, reduction="sum")
    features = {"source": source, "target_in": target[:, :-1]}
    tokens = float(np.sum(target[:, 1:] != PAD))

    def loss():
        per_example = compute(model, features, {"target_out": target[:, 1:]}, False)["loss"]
        return ops.sum(per_example) / tokens

    return loss


def sublayer(path):
    """``encoder_0/self_attention/key_bias`` -> ``encoder_0/self_attention``."""
    return "/".join(path.split("/")[:2])


def real_rows(data):
    return data["input/target"][:, :-1] != PAD  # [B, Lt]


def test_every_layer_given_their_inputs(fixture):
    data, meta = fixture
    model, depth, report = build(data, meta), depths(meta, data), []
    act = lambda key: data[f"act/{key}"]  # noqa: E731
    source, target_in = data["input/source"], data["input/target"][:, :-1]
    valid, rows = source != PAD, real_rows(data)
    source_mask = valid[:, None, :]
    assert_close("embedding/source", model.embedding(source), act("embedding/source/out"),
                 depth["embedding"], report=report)
    assert_close("embedding/target", model.embedding(target_in), act("embedding/target/out"),
                 depth["embedding"], report=report)
    x = act("embedding/source/out")
    for i, layer in enumerate(model.encoder_layers):
        name = f"encoder_{i}"
        h = act(f"{name}/self_attention/in")
        assert_close(f"{name}/self_attention",
                     layer.self_attention(query=h, value=h, attention_mask=source_mask),
                     act(f"{name}/self_attention/out"), depth["encoder_attention"], report=report)
        assert_close(f"{name}/feed_forward", layer.feed_forward(act(f"{name}/feed_forward/in")),
                     act(f"{name}/feed_forward/out"), depth["feed_forward"], report=report)
        assert_close(name, layer(x, valid), act(f"{name}/out"), depth["encoder"], report=report)
        x = act(f"{name}/out")
    encoded, y = x, act("embedding/target/out")
    for i, layer in enumerate(model.decoder_layers):
        name = f"decoder_{i}"
        h = act(f"{name}/self_attention/in")
        out = layer.self_attention(query=h, value=h, use_causal_mask=True)
        assert_close(f"{name}/self_attention", np.asarray(out)[rows],
                     act(f"{name}/self_attention/out")[rows], depth["self_attention"],
                     report=report)
        out = layer.cross_attention(query=act(f"{name}/cross_attention/in"), value=encoded,
                                    attention_mask=source_mask)
        assert_close(f"{name}/cross_attention", out, act(f"{name}/cross_attention/out"),
                     depth["cross_attention"], report=report)
        assert_close(f"{name}/feed_forward", layer.feed_forward(act(f"{name}/feed_forward/in")),
                     act(f"{name}/feed_forward/out"), depth["feed_forward"], report=report)
        out = np.asarray(layer(y, encoded, valid))
        assert_close(name, out[rows], act(f"{name}/out")[rows], depth["decoder"], report=report)
        y = act(f"{name}/out")
    print("\n".join(f"{n}: {e:.3g} <= {b:.3g}" for n, e, b in report))


def test_logits_loss_and_every_gradient(fixture):
    data, meta = fixture
    model, depth, report = build(data, meta), depths(meta, data), []
    source, target = data["input/source"], data["input/target"]
    logits = np.asarray(model({"source": source, "target_in": target[:, :-1]}))
    rows = real_rows(data)
    assert_close("logits", logits[rows], data["logits"][rows], depth["logits"], report=report)
    loss, grads = value_and_gradients(model, token_mean_loss(model, source, target))
    # The loss's terms are logits: their scale is the magnitude.
    assert_close("loss", loss, data["loss"], depth["loss"],
                 magnitude=np.max(np.abs(data["logits"][rows])), report=report)
    # A gradient sums terms of its sub-layer's gradient scale; some sums cancel (a key
    # bias's gradient is zero up to rounding: softmax ignores a shift shared by all
    # keys), so the magnitude is the largest gradient of the sub-layer's weights.
    scale = {}
    for variable in model.trainable_variables:
        group = sublayer(variable.path)
        scale[group] = max(scale.get(group, 0.0),
                           float(np.max(np.abs(data[f"grad/{variable.path}"]))))
    for variable, grad in zip(model.trainable_variables, grads):
        assert_close(f"grad/{variable.path}", grad, data[f"grad/{variable.path}"],
                     depth["gradient"], magnitude=scale[sublayer(variable.path)],
                     report=report)
    worst = max(report[2:], key=lambda r: r[1] / r[2])
    print("\n".join(f"{n}: {e:.3g} <= {b:.3g}" for n, e, b in report[:2]),
          f"\n{len(grads)} gradients, worst {worst[0]}: {worst[1]:.3g} <= {worst[2]:.3g}")


def test_greedy_answers(fixture):
    data, meta = fixture
    model = build(data, meta)
    theirs = data["greedy/ids"][:, 1:]  # theirs start with <sos>; the port's do not
    ours, _ = model.greedy_decode(data["input/source"], max_length=theirs.shape[1])
    ours = np.asarray(ours)
    for row_ours, row_theirs in zip(ours, theirs):
        end = list(row_theirs).index(meta["ids"]["eos"]) + 1 if meta["ids"]["eos"] in row_theirs \
            else len(row_theirs)
        np.testing.assert_array_equal(row_ours[:end], row_theirs[:end])


def test_a_wrong_weight_fails(fixture):
    """The tolerances catch a mapping error: the role bias of one attention left at zero
    (as a mapping that forgot it would) moves the logits by more than 100 times the
    logits' tolerance."""
    data, meta = fixture
    model, depth = build(data, meta), depths(meta, data)
    model.get_layer("decoder_1").cross_attention.role_bias.assign(
        np.zeros(meta["sizes"]["hidden"], np.float32))
    source, target_in = data["input/source"], data["input/target"][:, :-1]
    rows = real_rows(data)
    logits = np.asarray(model({"source": source, "target_in": target_in}))[rows]
    error = np.max(np.abs(logits - data["logits"][rows]))
    assert error > 100 * tolerance(depth["logits"], np.max(np.abs(data["logits"][rows])))


def authors_code_steps(data, meta, model_dir, **overrides):
    """Their training step on the port as ``train.math`` builds it from the
    ``authors_code`` recipe: the recipe's optimizer (``get_optimizer``), loss
    (``sequence_compute_fn`` with its ``loss_reduction``) and clip, run by the port's
    :class:`Trainer` (its compiled step: summed per-example losses over the batch
    size, the global norm, ``clip_by_global_norm``, the update), from the fixture's
    initial weights on the fixture's batches (``overrides``: recipe fields changed).
    Returns per-step losses and norms."""
    import tensorflow as tf

    from tpr_keras.models.tp_transformer import sequence_compute_fn
    from tpr_keras.training import TrainConfig, Trainer, get_optimizer
    from tpr_keras.training.recipes.tp_transformer import resolve_size

    _, recipe = resolve_size("tiny", recipe_name="authors_code")
    opt = meta["optimizer"]
    ours = (recipe["learning_rate"], [recipe["beta_1"], recipe["beta_2"]], recipe["epsilon"],
            recipe["clip_norm"])
    assert ours == (opt["learning_rate"], opt["betas"], opt["eps"], opt["clip_grad_norm"])
    recipe.update(overrides)
    trainer = Trainer(
        lambda: build(data, meta),
        lambda: get_optimizer(recipe["optimizer"], recipe["learning_rate"], recipe["beta_1"],
                              recipe["beta_2"], recipe["epsilon"]),
        sequence_compute_fn(pad_id=PAD, reduction=recipe["loss_reduction"]),
        TrainConfig(learning_rate=recipe["learning_rate"], clip_norm=recipe["clip_norm"],
                    warmup_steps=0, halve_lr_below=None, verbose=0),
        model_dir=str(model_dir))
    ids = tf.TensorSpec([None, None], tf.int32)
    step = trainer.make_train_function(({"source": ids, "target_in": ids},
                                        {"target_out": ids}))
    losses, norms = [], []
    for i in range(meta["steps"]):
        source = data[f"train/source/{i:02d}"].astype(np.int32)
        target = data[f"train/target/{i:02d}"].astype(np.int32)
        out = step(({"source": source, "target_in": target[:, :-1]},
                    {"target_out": target[:, 1:]}))
        assert bool(out["applied"])
        losses.append(float(out["loss"]))
        norms.append(float(out["grad_norm"]))
    return np.asarray(losses), np.asarray(norms)


def trajectory_report(data, meta, losses, norms):
    """Each step's loss and gradient norm against theirs; ``(name, error, tolerance)``.

    A step's tolerance is the single batch's, grown as rounding noise accumulates in
    quadrature over the steps taken (``sqrt(step + 1)``)."""
    report = []
    parameters = sum(int(np.prod(data[k].shape)) for k in data if k.startswith("weights/"))
    logit_scale = float(np.max(np.abs(data["logits"])))
    for step in range(meta["steps"]):
        target = data[f"train/target/{step:02d}"]
        depth = depths(meta, {"input/source": data[f"train/source/{step:02d}"],
                              "input/target": target})
        growth = float(np.sqrt(step + 1))
        for name, ours, theirs, bound_depth, magnitude in (
                # The loss's terms are logits, of batch 0's scale.
                ("loss", losses[step], data["train/loss"][step],
                 depth["loss"] * growth ** 2, logit_scale),
                # The norm sums every parameter's squared gradient.
                ("grad_norm", norms[step], data["train/grad_norm"][step],
                 depth["gradient"] * growth ** 2 + parameters, None)):
            bound = tolerance(bound_depth, abs(theirs) if magnitude is None else magnitude)
            report.append((f"train/{name}/{step}", abs(float(ours) - float(theirs)), bound))
    return report


@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="runs the TensorFlow Trainer's compiled step")
def test_authors_code_recipe_follows_their_trajectory(fixture, tmp_path):
    """20 steps of the ``authors_code`` recipe (PyTorch-form Adam, token-mean loss,
    global-norm clip 0.1) on the port follow their loss and gradient-norm trajectory to
    float32 noise.

    Not compared: the final weights element by element. Where a gradient vanishes in
    exact arithmetic (a key bias: softmax ignores a shift shared by all keys) both sides
    step on rounding noise, and Adam's division by ``sqrt(v)`` makes those steps full
    size (about 1e-6 here, against weights of 0.1) (docs/fidelity_tp_transformer.md)."""
    data, meta = fixture
    losses, norms = authors_code_steps(data, meta, tmp_path)
    assert_report_within(trajectory_report(data, meta, losses, norms))


@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="runs the TensorFlow Trainer's compiled step")
def test_a_changed_recipe_leaves_their_trajectory(fixture, tmp_path):
    """The tolerances resolve the recipe: a learning rate 5 % off moves the loss
    trajectory past them within the 20 steps."""
    data, meta = fixture
    losses, norms = authors_code_steps(data, meta, tmp_path, learning_rate=1.05e-4)
    report = trajectory_report(data, meta, losses, norms)
    worst = max(error / bound for name, error, bound in report if "/loss/" in name)
    assert worst > 1.0, worst
