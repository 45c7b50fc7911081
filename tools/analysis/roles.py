"""``python -m tools.analysis.roles``: TP-Transformer §5, role clusters (Figure 2) and
attention maps (Figure 3) of a ``train.math`` run.

    python -m tools.analysis.roles --model_dir runs/math \\
        --data_dir ../shared/data/mathematics --module numbers__place_value \\
        --out results/figures/roles-place_value

Writes ``roles.png`` (Figure 2), ``attention.png`` (Figure 3) and ``roles.txt`` (the
clusters, their purity and consistency, and every problem's symbols with their clusters);
what they show and how they are computed: :mod:`tpr_keras.analysis.roles`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from serving.command_flags import Command
from tpr_keras.analysis import roles


def main(argv: Sequence[str] | None = None) -> int:
    command = Command("python -m tools.analysis.roles", __doc__.split("\n\n")[0])
    command.string("model_dir", None, "a train.math --model_dir", required=True)
    command.string("data_dir", None)
    command.string("module", "numbers__place_value")
    command.string("out", None, "folder for the PNGs and roles.txt", required=True)
    command.integer("samples", 128, "problems (§5.1: 128)")
    command.integer("clusters", 20, "k of k-means (§5.1: 20)")
    command.integer("layer", -1, "encoder layer (-1: last)")
    command.integer("head", 0)
    command.integer("figure_rows", 8, "problems in Figure 2")
    command.integer("attention_maps", 3, "problems in Figure 3")
    command.integer("seed", 0)
    args = command.parse(argv)
    from tpr_keras.runtime import import_tensorflow

    import_tensorflow()  # quiet start-up, as the train.* commands
    import keras

    import tpr_keras.models.tp_transformer  # noqa: F401  (registers TPTransformer)
    from tpr_keras.data.mathematics import CharVocabulary

    export = os.path.join(args.model_dir, "export")
    model = keras.models.load_model(os.path.join(export, "model.keras"))
    vocab = CharVocabulary.load(os.path.join(export, "vocab.txt"))
    questions, answers = roles.sample_questions(args.data_dir, args.module, args.samples,
                                                args.seed)
    found = roles.cluster_roles(model, questions, vocab, k=args.clusters, layer=args.layer,
                                head=args.head, seed=args.seed)
    layer = args.layer % model.num_encoder_layers
    where = f"encoder layer {layer}, head {args.head}"
    os.makedirs(args.out, exist_ok=True)
    rows = slice(0, args.figure_rows)
    figure2 = os.path.join(args.out, "roles.png")
    roles.plot_role_clusters(found["chars"][rows], found["labels"][rows], args.clusters,
                             figure2, f"{args.module}: k-means (k={args.clusters}) clusters "
                             f"of the role vectors of {where}")
    figure3 = os.path.join(args.out, "attention.png")
    maps = slice(0, args.attention_maps)
    roles.plot_attention_maps(found["chars"][maps], found["attention"][maps], figure3,
                              f"{args.module}: attention of {where}")
    lines, scores = roles.describe_clusters(found["chars"], found["labels"], args.clusters)
    listing = [
        f"# {args.module}: {len(questions)} interpolate problems (seed {args.seed}), "
        f"{len(found['roles'])} role vectors of {where}, model {args.model_dir}",
        f"k-means k={args.clusters}: within-cluster sum of squares {found['inertia']:.4g}",
        "purity (cluster -> key) and consistency (key -> cluster; _chance: shuffled labels): "
        + ", ".join(f"{name} {value:.2f}" for name, value in scores.items()),
        "", "## clusters", *lines, "", "## problems (symbol:cluster), answer",
    ]
    for symbols, clusters, answer in zip(found["chars"], found["labels"], answers):
        listing.append(" ".join(f"{s}:{int(c)}" for s, c in zip(symbols, clusters))
                       + f"  -> {answer}")
    with open(os.path.join(args.out, "roles.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(listing) + "\n")
    print("\n".join(listing[:3]))
    print(f"Figure 2: {figure2}\nFigure 3: {figure3}\n"
          f"Listing: {os.path.join(args.out, 'roles.txt')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
