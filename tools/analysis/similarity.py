"""``python -m tools.analysis.similarity``: TPR-RNN §7 (Figure 4), the clustered cosine
similarity of e1, e2, r1, r2, r3 over one task's statements, from a ``train.babi`` run.

    python -m tools.analysis.similarity --model_dir runs/babi-all --task 3 \\
        --data_dir ../shared/data/babi --out results/figures/similarity-task3

Writes one PNG per representation (``e1.png`` ...) and ``clusters.txt`` (every cluster's
sentences, tallies and purities); the method: :mod:`tpr_keras.analysis.similarity`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from serving.command_flags import Command
from tpr_keras.analysis import similarity as sim


def main(argv: Sequence[str] | None = None) -> int:
    command = Command("python -m tools.analysis.similarity", __doc__.split("\n\n")[0])
    command.string("model_dir", None, "a train.babi --model_dir", required=True)
    command.integer("task", None, "the bAbI task whose validation statements are compared",
                    required=True)
    command.string("data_dir", None)
    command.string("out", None, "folder for the PNGs and clusters.txt", required=True)
    command.integer("max_sentences", 60)
    command.integer("clusters", 8)
    command.integer("seed", 0)
    args = command.parse(argv)
    from tpr_keras.runtime import import_tensorflow

    import_tensorflow()  # quiet start-up, as the train.* commands
    model, ids, texts = sim.unique_sentences(args.model_dir, args.task, args.data_dir,
                                             args.max_sentences, args.seed)
    os.makedirs(args.out, exist_ok=True)
    listing = [f"# task {args.task}: {len(texts)} unique validation statements, "
               f"model {args.model_dir}"]
    for name, vectors in sim.representations(model, ids).items():
        similarity = sim.cosine_similarity(vectors)
        order, labels = sim.cluster(similarity, args.clusters)
        path = os.path.join(args.out, f"{name}.png")
        sim.plot(similarity, order, texts, f"task {args.task}: cosine similarity of {name}",
                 path)
        first = sim.purity(labels, sim.word_at(texts, 0))
        second = sim.purity(labels, sim.word_at(texts, 1))
        event = sim.purity(labels, sim.events(texts))
        listing.append(f"\n## {name} ({path})")
        listing.append(f"purity by first word {first:.2f}, by second word {second:.2f}, "
                       f"by event {event:.2f}")
        for label in sorted(set(labels)):
            members = [texts[i] for i in order if labels[i] == label]
            listing.append(f"cluster {label} ({len(members)}): first words "
                           f"{sim.tally(sim.word_at(members, 0))}; second words "
                           f"{sim.tally(sim.word_at(members, 1))}; events "
                           f"{sim.tally(sim.events(members))}")
            listing.extend(f"  {text}" for text in members)
        print(f"{name}: {len(set(labels))} clusters, purity by first word {first:.2f}, "
              f"by second word {second:.2f}, by event {event:.2f} -> {path}")
    with open(os.path.join(args.out, "clusters.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(listing) + "\n")
    print(f"Cluster listing: {os.path.join(args.out, 'clusters.txt')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
