"""TPR-RNN §7 representation analysis (Figure 4): clustered similarity of e1, e2, r1, r2, r3.

    python -m tools.analysis.similarity --model_dir runs/babi-all --task 3 \\
        --data_dir ../shared/data/babi --out results/figures/similarity-task3

Schlag & Schmidhuber (2018) §7 / Appendix C: for sentences of one task, the update module's
entity (e1, e2; eq. 7) and relation (r1, r2, r3; eq. 8) vectors are compared by cosine
similarity, the sentences are clustered hierarchically, and the similarity matrix is drawn in
cluster order. The command (:mod:`tools.analysis.similarity`) takes the unique statements of the task's validation split (at
most ``--max_sentences``, a seeded sample), computes the five representations with the
trained model, clusters each by average linkage on cosine distance, and writes one PNG per
representation (``e1.png`` ...) plus ``clusters.txt`` listing every cluster's sentences.

To make a reading of the clusters checkable, the listing also tallies, per cluster, the
first and second word of its sentences (in bAbI statements the subject and the verb), and
gives each representation's *purity* by first word, by second word and by event: the
fraction of sentences whose key is their cluster's most common one. The event of a statement
is the kind §7 names for task 3, from its verb: moving (went, moved, journeyed, travelled),
taking an object (picked, took, got, grabbed) or giving it up (dropped, put, left, discarded);
any other verb is its own event. The paper's reading of Figure 4 (e1 separates the people,
r1 the three kinds of event) shows up as a person purity near 1 for e1 and an event purity
near 1 for r1.

Needs the ``analysis`` extra (``pip install -e ".[analysis]"``: matplotlib and scipy).
``--model_dir`` is a ``train.babi`` run (its ``export/model.keras`` and ``export/vocab.txt``).
"""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np

REPRESENTATIONS = ("e1", "e2", "r1", "r2", "r3")


def representations(model, word_ids: np.ndarray) -> dict[str, np.ndarray]:
    """e1, e2, r1 (and r2, r3 where the model has them) of each sentence, eq. 5 and 7-8.

    Args:
        model: a built ``TPRRNN``.
        word_ids: ``int32 [sentences, model.max_words]``.
    """
    vectors = model.sentence_encoder(word_ids)
    return {name: np.asarray(value) for name, value in
            model.update_module.extract(vectors).items()}


def cosine_similarity(vectors: np.ndarray) -> np.ndarray:
    """``[n, n]`` cosine similarities of the rows (a zero row is similar to nothing)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms > 0, norms, 1.0)
    return np.clip(unit @ unit.T, -1.0, 1.0)


def cluster(similarity: np.ndarray, clusters: int) -> tuple[np.ndarray, np.ndarray]:
    """Average-linkage clustering on cosine distance.

    Returns:
        ``(order, labels)``: the dendrogram's leaf order, and a cluster label 1..k per row
        from cutting the tree into at most ``clusters`` clusters.
    """
    from scipy.cluster import hierarchy
    from scipy.spatial.distance import squareform

    distance = 1.0 - similarity
    np.fill_diagonal(distance, 0.0)
    tree = hierarchy.linkage(squareform((distance + distance.T) / 2, checks=False),
                             method="average")
    order = hierarchy.leaves_list(tree)
    labels = hierarchy.fcluster(tree, t=clusters, criterion="maxclust")
    return order, labels


def word_at(texts: Sequence[str], position: int) -> list[str]:
    """The ``position``-th word of each sentence ("" where it is shorter)."""
    return [(text.split() + [""] * (position + 1))[position] for text in texts]


#: §7's three kinds of event in tasks 1-3, by the verbs bAbI uses for them.
EVENTS = {**dict.fromkeys(("went", "moved", "journeyed", "travelled"), "move"),
          **dict.fromkeys(("picked", "took", "got", "grabbed"), "take"),
          **dict.fromkeys(("dropped", "put", "left", "discarded"), "give up")}


def events(texts: Sequence[str]) -> list[str]:
    """The event of each statement (its verb where the verb is not one of :data:`EVENTS`)."""
    return [EVENTS.get(verb, verb) for verb in word_at(texts, 1)]


def tally(words: Sequence[str]) -> str:
    """``"john 14, mary 2"``: the words by count, most common first."""
    counts = {}
    for word in words:
        counts[word] = counts.get(word, 0) + 1
    return ", ".join(f"{w} {n}" for w, n in sorted(counts.items(), key=lambda x: (-x[1], x[0])))


def purity(labels: np.ndarray, keys: Sequence[str]) -> float:
    """Fraction of items whose key is the most common key of their cluster."""
    keys = np.asarray(keys)
    labels = np.asarray(labels)
    agree = 0
    for label in np.unique(labels):
        _, counts = np.unique(keys[labels == label], return_counts=True)
        agree += counts.max()
    return agree / len(keys)


def plot(similarity: np.ndarray, order: np.ndarray, sentences: Sequence[str], title: str,
         path: str) -> None:
    """The similarity matrix in cluster order as a PNG, sentences as tick labels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(order)
    size = max(6.0, 0.16 * n + 4)
    fig, ax = plt.subplots(figsize=(size, size))
    image = ax.imshow(similarity[np.ix_(order, order)], cmap="viridis", vmin=-1, vmax=1)
    labels = [sentences[i] for i in order]
    ax.set_xticks(range(n), labels, rotation=90, fontsize=6)
    ax.set_yticks(range(n), labels, fontsize=6)
    ax.set_title(title)
    fig.colorbar(image, ax=ax, fraction=0.03, label="cosine similarity")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def unique_sentences(model_dir: str, task: int, data_dir: str | None, max_sentences: int,
                     seed: int):
    """The model, and a seeded sample of the task's unique validation statements.

    Returns:
        ``(model, word_ids [n, max_words], texts)``.
    """
    import keras

    import tpr_keras.models.tpr_rnn  # noqa: F401  (registers TPRRNN)
    from tpr_keras.data import babi

    export = os.path.join(model_dir, "export")
    model = keras.models.load_model(os.path.join(export, "model.keras"))
    vocab = babi.Vocabulary.load(os.path.join(export, "vocab.txt"))
    data = babi.load_babi(data_dir, tasks=(task,), vocab=vocab, download=False)
    rows = np.unique(data.valid.sentences, axis=0)
    rows = rows[rows.any(axis=1)]
    if len(rows) > max_sentences:
        pick = np.random.default_rng(seed).choice(len(rows), max_sentences, replace=False)
        rows = rows[np.sort(pick)]
    width = model.max_words
    if rows.shape[1] > width:
        raise ValueError(f"task {task} has sentences of {rows.shape[1]} words; the model "
                         f"takes {width}")
    ids = np.zeros((len(rows), width), "int32")
    ids[:, : rows.shape[1]] = rows
    texts = [" ".join(vocab.decode(row)) for row in rows]
    return model, ids, texts
