"""Why the BiDAF TPRU learns slowly: training variants of the entailment models, and probes.

Two subcommands (results and discussion: results/entailment.md, "BiDAF TPRU: diagnosis"):

``train VARIANT [train.entailment flags]`` runs ``python -m train.entailment`` with one change
to the model, made by patching the model code in this process only (the saved model.keras
of a changed model is not meant to be reloaded):

- ``layers=CONTEXTUAL,MODELLING``: the BiDAF model's two recurrent layers of different unit
  types, e.g. ``layers=tpru,lstm``;
- ``tpru_bias=VALUE``: every TPRU's scalar biases b_b, b_x (eq. 5) start at VALUE, not 1;
- ``centred``: the BiDAF contextual layer's outputs h, u minus their masked mean over the
  batch and the time steps (per feature) before the attention;
- ``backwards`` (``--arch plain`` only): the plain model's encoder reads the proposition
  from its end (``go_backwards=True``), the backward half of a bidirectional layer alone;
- ``no_attention``: the BiDAF attention passes the contextual layer's output h through and
  replaces everything it adds (the context vectors ũ, and eq. 4's products) by zeros, so
  the modelling layer keeps its input width and parameter count but sees no attention.
- ``embedding_scale=K``: the character embedding starts at K times its usual initial
  values (Keras' uniform ±0.05), the same draws scaled, so that the input side of the
  first TPRU's eq. 4 (Uᵀ W x) is K times larger against its recurrent side (Uᵀ b).

Variants combine with ``+``, e.g. ``no_attention+layers=tpru,lstm``.

``probe [--checkpoint PREFIX] [--arch bidaf|plain] [--cell tpru|lstm] [--seed S]`` prints, on
the first 512 validation pairs, for each TPRU layer the input-side role-distribution
statistics (eqs. 4-6 with b_{t-1} = 0) and, for a layer that returns its per-step outputs,
the same with the layer's own states b_{t-1} together with the recurrent side's
pre-activation Uᵀ b_{t-1}, and for the BiDAF contextual layer the share of
its per-step output's second moment that depends on the input (1 - the share of the mean
over pairs, at each of the first 8 steps), at initialisation or from a best-weights
checkpoint (``<model_dir>/best/weights``); then the norm of the loss gradient on those pairs
for each layer's weights of each kind (e.g. ``contextual/unbinding_kernel``, both directions
together).

    python -m experiments.entailment_bidaf_diagnosis train layers=tpru,lstm \\
        --model_dir=runs/entailment/diag-tpru-lstm --data_dir=../shared/data/entailment \\
        --recipe=paper --arch=bidaf --cell=tpru --roles=32 --dim=64 --seed=0 --jit_compile \\
        --max_train_minutes=26
    python -m experiments.entailment_bidaf_diagnosis probe --data_dir ../shared/data/entailment
"""

import os
import runpy
import sys


VARIANTS = ("layers=CONTEXTUAL,MODELLING", "tpru_bias=VALUE", "centred", "backwards",
            "no_attention", "embedding_scale=K")


def apply_variant(variant):
    """Patches the model code so that models built afterwards have ``variant`` (variants
    joined by ``+`` are applied in turn)."""
    from keras import ops

    from tpr_keras.layers.tpru_cell import TPRUCell
    from tpr_keras.models.entailment import entailment_layers

    if "+" in variant:
        for part in variant.split("+"):
            apply_variant(part)
        return
    name, _, value = variant.partition("=")
    make = entailment_layers.make_recurrent_layer
    if name == "layers":
        cells = value.split(",")
        if len(cells) != 2 or not set(cells) <= set(entailment_layers.CELLS):
            raise ValueError(f"layers=CONTEXTUAL,MODELLING of {entailment_layers.CELLS}; "
                             f"got {value!r}")
        made = []

        def make_layers(cell, units, num_roles=32, seed=None, return_sequences=False,
                        name=None):
            # BiDAFEntailmentModel.encode_pair makes the contextual layer, then the modelling one
            made.append(cells[len(made) % 2])
            return make(made[-1], units, num_roles, seed, return_sequences, name)

        entailment_layers.make_recurrent_layer = make_layers
    elif name == "tpru_bias":
        bias, build = float(value), TPRUCell.build

        def build_with_bias(self, input_shape):
            build(self, input_shape)
            self.binding_bias.assign(bias)
            self.input_bias.assign(bias)

        TPRUCell.build = build_with_bias
    elif name == "centred":
        call = entailment_layers.BiDAFAttention.call

        def centre(x, mask):
            if mask is None:
                return x - ops.mean(x, axis=(0, 1), keepdims=True)
            m = ops.expand_dims(ops.cast(mask, x.dtype), -1)
            mean = ops.sum(x * m, axis=(0, 1), keepdims=True) / ops.maximum(
                ops.sum(m, axis=(0, 1), keepdims=True), 1.0)
            return (x - mean) * m

        def centred_call(self, inputs, mask=None):
            (h, u), (mh, mu) = inputs, ((None, None) if mask is None else mask)
            return call(self, [centre(h, mh), centre(u, mu)], mask=mask)

        entailment_layers.BiDAFAttention.call = centred_call
    elif name == "backwards":
        def make_backwards(*args, **kwargs):
            layer = make(*args, **kwargs)
            layer.go_backwards = True
            return layer

        entailment_layers.make_recurrent_layer = make_backwards
    elif name == "no_attention":
        call = entailment_layers.BiDAFAttention.call

        def pass_through(self, inputs, mask=None):
            width = inputs[0].shape[-1]
            return [ops.concatenate([g[..., :width], ops.zeros_like(g[..., width:])], axis=-1)
                    for g in call(self, inputs, mask=mask)]

        entailment_layers.BiDAFAttention.call = pass_through
    elif name == "embedding_scale":
        from tpr_keras.models.entailment import BiDAFEntailmentModel, PlainEntailmentModel

        scale = float(value)
        for model_class in (BiDAFEntailmentModel, PlainEntailmentModel):
            def encode_pair(embedding, a, b, config, _encode=model_class.encode_pair):
                initializer = embedding.embeddings_initializer
                embedding.embeddings_initializer = (
                    lambda shape, dtype=None: scale * initializer(shape, dtype=dtype))
                return _encode(embedding, a, b, config)

            model_class.encode_pair = staticmethod(encode_pair)
    else:
        raise ValueError(f"unknown variant {variant!r}; one of {VARIANTS}")


def _tpru_layers(model):
    import keras

    from tpr_keras.layers.tpru import TPRU

    for layer in model.layers:
        if isinstance(layer, keras.layers.Bidirectional):
            for sub, direction in ((layer.forward_layer, "fw"), (layer.backward_layer, "bw")):
                if isinstance(sub, TPRU):
                    yield f"{layer.name}/{direction}", sub
        elif isinstance(layer, TPRU):
            yield layer.name, layer


def role_statistics(cell, inputs, states=None):
    """Role distribution of ``cell`` for input steps ``inputs`` ``[n, d']`` (eqs. 4-6): the
    std of the input side's pre-activation ``Uᵀ W x``, the mean largest ``f`` and the mean
    effective number of roles ``1 / Σ f²``, with ``b_{t-1} = 0``, or with the states
    ``b_{t-1}`` ``[n, d]`` the layer had before those steps; then also the std of the
    recurrent side's pre-activation ``Uᵀ b_{t-1}`` (``state_pre_std``)."""
    import numpy as np

    unbinding = np.asarray(cell.unbinding_kernel) @ np.asarray(cell.role_basis)  # U
    pre = inputs @ np.asarray(cell.input_kernel) @ unbinding  # eq. 4, Uᵀ W x
    if states is None:
        states = np.zeros((len(inputs), cell.units), inputs.dtype)
    f = np.asarray(cell.role_distribution(inputs, states))
    stats = {"pre_std": float(pre.std()), "f_max": float(f.max(-1).mean()),
             "effective_roles": float((1.0 / (f ** 2).sum(-1)).mean())}
    if states.any():
        stats["state_pre_std"] = float((states @ unbinding).std())
    return stats


def previous_states(outputs, mask, go_backwards):
    """``(inputs' mask, b_{t-1})`` per step in the input's order, from a TPRU layer's
    per-step ``outputs`` (``[batch, T, d]``, in processing order, i.e. reversed when
    ``go_backwards``) and its input mask; masked steps keep the state, so the state before
    a sequence's first real step is the initial 0."""
    import numpy as np

    if go_backwards:
        mask = mask[:, ::-1]
    previous = np.concatenate([np.zeros_like(outputs[:, :1]), outputs[:, :-1]], axis=1)
    previous = np.where(mask[:, :, None], previous, 0.0)  # unused at masked steps
    if go_backwards:
        return mask[:, ::-1], previous[:, ::-1]
    return mask, previous


def input_dependent_share(outputs, mask, steps=8):
    """Per step ``t < steps``: ``E|h_t - mean over pairs|² / E|h_t|²`` over the pairs that
    are real at ``t`` (0: the output ignores the input; 1: it has mean 0 over pairs)."""
    import numpy as np

    shares = []
    for t in range(steps):
        h = outputs[mask[:, t], t]
        shares.append(float(((h - h.mean(0)) ** 2).mean() / (h ** 2).mean()))
    return shares


def probe(args):
    import keras
    import numpy as np
    import tensorflow as tf

    from tpr_keras.data import entailment as data
    from tpr_keras.models.entailment import BiDAFEntailmentModel, PlainEntailmentModel
    from tpr_keras.training.checkpoints import variables_by_path

    validate = data.load_entailment_split("validate", args.data_dir)
    x, y = next(iter(data.make_dataset(validate, batch_size=512)))
    keras.utils.set_random_seed(args.seed)
    model_class = BiDAFEntailmentModel if args.arch == "bidaf" else PlainEntailmentModel
    model = model_class.from_paper_size(f"{args.arch}_{args.cell}", seed=args.seed)
    model(x)
    if args.checkpoint:
        tf.train.Checkpoint(model_variables=variables_by_path(
            model.variables, scope=model.name)).restore(args.checkpoint).expect_partial()
    captured = {}
    for name, layer in _tpru_layers(model):
        def capture(sequences, initial_state, mask, training=False, _loop=layer.inner_loop,
                    _name=name):
            result = _loop(sequences, initial_state, mask, training=training)
            captured[_name] = (np.asarray(sequences), np.asarray(mask).astype(bool),
                               np.asarray(result[1]))
            return result
        layer.inner_loop = capture
    model(x)
    layers = dict(_tpru_layers(model))
    for name, (sequences, mask, outputs) in captured.items():
        stats = role_statistics(layers[name].cell, sequences[mask])
        print(f"{name}: input |x| {np.abs(sequences[mask]).mean():.3f}, "
              f"f_x pre-activation std {stats['pre_std']:.2f}, mean max f "
              f"{stats['f_max']:.3f}, effective roles {stats['effective_roles']:.1f}"
              f"/{layers[name].cell.num_roles}")
        if outputs.ndim == 3 and outputs.shape[1] == sequences.shape[1]:
            real, states = previous_states(outputs, mask, layers[name].go_backwards)
            stats = role_statistics(layers[name].cell, sequences[real], states[real])
            print(f"{name}, with the layer's own b_(t-1): Uᵀb pre-activation std "
                  f"{stats['state_pre_std']:.2f}, mean max f {stats['f_max']:.3f}, "
                  f"effective roles {stats['effective_roles']:.1f}")
    if args.arch == "bidaf":
        a = x["a"]
        mask = np.asarray(a != 0)
        h = np.asarray(model.get_layer("contextual")(model.get_layer("embedding")(a),
                                                     mask=a != 0))
        shares = input_dependent_share(h, mask)
        print(f"contextual output: mean |h| {np.abs(h[mask]).mean():.3f}, input-dependent "
              f"share at steps 1-8: " + " ".join(f"{s:.3f}" for s in shares))
    for name, norm in gradient_norms(model, x, y).items():
        print(f"gradient norm {name}: {norm:.1e}")


def gradient_norms(model, x, y):
    """``{layer/weight kind: norm}`` of the mean binary cross-entropy's gradient on (x, y);
    the weights of a kind are pooled over a bidirectional layer's two directions."""
    import numpy as np
    import tensorflow as tf

    from tpr_keras.training import binary_classification

    with tf.GradientTape() as tape:  # train.entailment's loss
        loss = tf.reduce_mean(binary_classification()(model, x, y, training=False)["loss"])
    squares = {}
    for variable, grad in zip(model.trainable_variables,
                              tape.gradient(loss, model.trainable_variables)):
        parts = variable.path.split("/")
        key = f"{parts[0]}/{parts[-1]}" if len(parts) > 2 else variable.path
        squares[key] = squares.get(key, 0.0) + float(tf.reduce_sum(
            tf.square(tf.convert_to_tensor(grad))))
    return {key: float(np.sqrt(value)) for key, value in squares.items()}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["train"] and len(argv) >= 2:
        apply_variant(argv[1])
        sys.argv = ["train.entailment", *argv[2:]]
        runpy.run_module("train.entailment", run_name="__main__")
        return
    from serving.command_flags import Command

    parser = Command("python -m experiments.entailment_bidaf_diagnosis",
                     __doc__.split("\n\n")[0])
    parser.positional("command", "probe (role distributions and contextual-output "
                      "statistics; the flags below are its), or train VARIANT "
                      f"[train.entailment flags] with VARIANT one of {', '.join(VARIANTS)}")
    parser.string("data_dir", None)
    parser.string("checkpoint", None, "a best/weights prefix")
    parser.enum("arch", "bidaf", ["bidaf", "plain"])
    parser.enum("cell", "tpru", ["tpru", "lstm", "gru"])
    parser.integer("seed", 0)
    args = parser.parse(argv)
    if args.command == "train":
        parser.error("train needs a VARIANT")
    if args.command != "probe":
        parser.error(f"the command is probe or train, not {args.command!r}")
    probe(args)


if __name__ == "__main__":
    main()
