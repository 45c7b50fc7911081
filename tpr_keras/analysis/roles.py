"""TP-Transformer §5 analysis: role clusters (Figure 2) and attention maps (Figure 3).

    python -m tools.analysis.roles --model_dir runs/math \\
        --data_dir ../shared/data/mathematics --module numbers__place_value \\
        --out results/figures/roles-place_value

Schlag et al. (2019) §5.1: sample problems from a module's interpolation split, collect the
role vectors ``r_t`` (eq. 1) that one head of the encoder's last layer computes at every
position, and cluster them with k-means (k = 20) across problems and positions. Figure 2
draws each character of a few problems on a square coloured by its role's cluster. §5.2 /
Figure 3: the attention weights ``α`` (eq. 3) of the same head on a few problems.

The command (:mod:`tools.analysis.roles`) writes ``roles.png`` (Figure 2), ``attention.png`` (Figure 3) and ``roles.txt``.
The listing gives, per cluster, its size, the characters it holds and, for digits, their
place in their number (0 = units, 1 = tens, ...); the *purity* of the clustering by
character and by digit place (the fraction of vectors whose key is their cluster's most
common one), and the *consistency* of the digits' clusters by character, place, and place
in context (the fraction of vectors in their key's most common cluster, next to its level
for shuffled labels), so that a reading of Figure 2 can be checked against counts.

The role vectors are the ones the model computes in training and serving
(``TPTransformer.attention_details``): nothing in the model or its exported signatures
changes. Needs the ``analysis`` extra for the figures (``pip install -e ".[analysis]"``);
the clustering is NumPy only. ``--model_dir`` is a ``train.math`` run (its
``export/model.keras`` and ``export/vocab.txt``).
"""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np

#: How §5's figures write the start and end symbols of a problem.
START_CHAR, END_CHAR = "#", "%"


# --------------------------------------------------------------------------- k-means
def kmeans(x: np.ndarray, k: int = 20, seed: int = 0, iterations: int = 100,
           restarts: int = 10) -> tuple[np.ndarray, np.ndarray, float]:
    """Lloyd's k-means with k-means++ seeding; deterministic for a given ``seed``.

    Runs ``restarts`` seedings and keeps the one with the lowest within-cluster sum of
    squares. Cluster ids are then renumbered by first appearance in ``x`` (the first row
    is in cluster 0), so the labels do not depend on the seeding's order.

    Args:
        x: ``[n, d]`` vectors.
        k: number of clusters (at most the number of distinct rows is useful).
        seed: NumPy seed.
        iterations: Lloyd iterations per restart (stops earlier at convergence).
        restarts: independent k-means++ seedings.

    Returns:
        ``(labels int[n], centres [k, d], inertia)``.
    """
    x = np.asarray(x, np.float64)
    n = len(x)
    if not 1 <= k <= n:
        raise ValueError(f"k must be in [1, {n}] for {n} vectors; got {k}.")
    rng = np.random.default_rng(seed)
    squared = (x * x).sum(1)

    def distances(centres):  # [n, k] squared Euclidean distances
        d = squared[:, None] - 2.0 * x @ centres.T + (centres * centres).sum(1)[None, :]
        return np.maximum(d, 0.0)

    best = None
    for _ in range(restarts):
        centres = [x[rng.integers(n)]]
        closest = distances(np.asarray(centres))[:, 0]
        for _ in range(1, k):  # k-means++: the next centre with probability ~ distance²
            total = closest.sum()
            pick = rng.choice(n, p=closest / total) if total > 0 else rng.integers(n)
            centres.append(x[pick])
            closest = np.minimum(closest, distances(x[pick][None])[:, 0])
        centres = np.asarray(centres)
        labels = None
        for _ in range(iterations):
            new = distances(centres).argmin(1)
            if labels is not None and np.array_equal(new, labels):
                break
            labels = new
            counts = np.bincount(labels, minlength=k)
            sums = np.zeros_like(centres)
            np.add.at(sums, labels, x)
            centres = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None],
                               centres)
        inertia = float(distances(centres)[np.arange(n), labels].sum())
        if best is None or inertia < best[2]:
            best = (labels, centres, inertia)
    labels, centres, inertia = best
    _, first = np.unique(labels, return_index=True)
    order = labels[np.sort(first)]  # old ids by first appearance
    rename = np.full(k, -1)
    rename[order] = np.arange(len(order))
    unused = np.setdiff1d(np.arange(k), order)
    rename[unused] = np.arange(len(order), k)
    centres_out = np.empty_like(centres)
    centres_out[rename] = centres
    return rename[labels], centres_out, inertia


def purity(labels: np.ndarray, keys: Sequence) -> float:
    """Fraction of items whose key is the most common key of their cluster."""
    labels, keys = np.asarray(labels), np.asarray(keys)
    agree = sum(np.unique(keys[labels == c], return_counts=True)[1].max()
                for c in np.unique(labels))
    return agree / len(keys)


def consistency(labels: np.ndarray, keys: Sequence) -> float:
    """Fraction of items in the most common cluster of their key (key -> cluster).

    The converse of :func:`purity`: 1 when every key's items share one cluster, whatever
    else that cluster holds.
    """
    return purity(np.asarray([str(k) for k in keys]), np.asarray(labels))


def shuffled_consistency(labels: np.ndarray, keys: Sequence, seed: int = 0,
                         times: int = 20) -> float:
    """:func:`consistency` of randomly permuted labels (mean of ``times``): its chance level."""
    rng = np.random.default_rng(seed)
    labels = np.asarray(labels)
    return float(np.mean([consistency(rng.permutation(labels), keys) for _ in range(times)]))


def digit_places(text: str) -> list[int]:
    """Per character: its place in its run of digits (0 = units), or -1 for a non-digit."""
    places, run_end = [-1] * len(text), None
    for i in range(len(text) - 1, -1, -1):
        if text[i].isdigit():
            if run_end is None:
                run_end = i
            places[i] = run_end - i
        else:
            run_end = None
    return places


# ------------------------------------------------------------------- role vectors
def role_details(model, source: np.ndarray, layer: int = -1, head: int = 0):
    """Role vectors and attention weights of one head of one encoder layer.

    Args:
        model: a ``TPTransformer`` with TP-Attention (``use_role=True``).
        source: ``int32 [B, Ls]`` ids, ``<s> question </s>``, pad-padded.
        layer: encoder layer (``-1``: the last, as in §5).
        head: the head.

    Returns:
        ``(roles [B, Ls, d_k], attention [B, Ls, Ls])``: ``r_t`` of eq. 1 at every
        source position and ``α`` of eq. 3 (rows: querying position).
    """
    if not model.use_role:
        raise ValueError("The model has no roles (a Transformer baseline, use_role=False).")
    if not 0 <= head < model.num_heads:
        raise ValueError(f"head must be in [0, {model.num_heads}); got {head}.")
    source = np.asarray(source, np.int32)
    target_in = np.full((len(source), 1), model.start_id, np.int32)
    details = model.attention_details({"source": source, "target_in": target_in})
    encoder = details["encoder"][layer]
    roles = np.asarray(encoder["roles"])[:, head]
    attention = np.asarray(encoder["attention"])[:, head]
    return roles.astype(np.float64), attention.astype(np.float64)


def encode_questions(questions: Sequence[str], vocab) -> np.ndarray:
    """``int32 [B, max_len + 2]``: ``<s> question </s>``, pad-padded."""
    width = max(len(q) for q in questions) + 2
    ids = np.full((len(questions), width), vocab.PAD_ID, np.int32)
    for i, q in enumerate(questions):
        row = [vocab.START_ID] + vocab.encode(q) + [vocab.END_ID]
        ids[i, : len(row)] = row
    return ids


def cluster_roles(model, questions: Sequence[str], vocab, k: int = 20, layer: int = -1,
                  head: int = 0, seed: int = 0):
    """Roles of every position of every question, clustered (§5.1).

    Returns:
        A dict: ``chars`` (per question, its symbols with ``#``/``%`` for start/end),
        ``labels`` (per question, the cluster of each position), ``roles`` ``[n, d_k]``
        (all valid positions, question by question), ``attention`` ``[B, Ls, Ls]``,
        ``inertia``.
    """
    source = encode_questions(questions, vocab)
    roles, attention = role_details(model, source, layer=layer, head=head)
    valid = source != vocab.PAD_ID
    flat = roles[valid]  # row-major: question by question, position by position
    labels, _, inertia = kmeans(flat, k=min(k, len(flat)), seed=seed)
    lengths = valid.sum(1)
    split = np.split(labels, np.cumsum(lengths)[:-1])
    chars = [[START_CHAR] + list(q) + [END_CHAR] for q in questions]
    return {"chars": chars, "labels": split, "roles": flat, "attention": attention,
            "inertia": inertia}


# ------------------------------------------------------------------------ figures
def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_role_clusters(chars: Sequence[Sequence[str]], labels: Sequence[np.ndarray], k: int,
                       path: str, title: str = "") -> None:
    """Figure 2: one row per problem, each symbol on a square coloured by its cluster.

    The cluster number is printed under every symbol.
    """
    plt = _pyplot()
    from matplotlib.patches import Rectangle

    colours = plt.get_cmap("tab20" if k <= 20 else "gist_ncar", max(k, 2))
    width = max(len(c) for c in chars)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.28 * width + 1), 0.62 * len(chars) + 0.8))
    for row, (symbols, clusters) in enumerate(zip(chars, labels)):
        y = len(chars) - 1 - row
        for col, (symbol, cluster) in enumerate(zip(symbols, clusters)):
            ax.add_patch(Rectangle((col, y + 0.25), 0.95, 0.7, color=colours(int(cluster) % k)))
            ax.text(col + 0.47, y + 0.6, symbol, ha="center", va="center", fontsize=9,
                    family="monospace")
            ax.text(col + 0.47, y + 0.08, str(int(cluster)), ha="center", va="center",
                    fontsize=5)
    ax.set_xlim(0, width)
    ax.set_ylim(0, len(chars))
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def plot_attention_maps(chars: Sequence[Sequence[str]], attention: np.ndarray, path: str,
                        title: str = "") -> None:
    """Figure 3: the head's attention weights of a few problems, symbols on both axes.

    Rows are the querying positions, columns the attended ones.
    """
    plt = _pyplot()
    n = len(chars)
    width = max(len(c) for c in chars)
    side = max(3.5, 0.16 * width + 1.5)
    fig, axes = plt.subplots(1, n, figsize=(side * n, side + 0.4), squeeze=False)
    for ax, symbols, weights in zip(axes[0], chars, attention):
        m = len(symbols)
        image = ax.imshow(weights[:m, :m], cmap="viridis", vmin=0.0, vmax=1.0)
        ax.set_xticks(range(m), symbols, fontsize=6, family="monospace")
        ax.set_yticks(range(m), symbols, fontsize=6, family="monospace")
        ax.set_xlabel("attended", fontsize=7)
        ax.set_ylabel("querying", fontsize=7)
    fig.colorbar(image, ax=list(axes[0]), fraction=0.02)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.savefig(path, dpi=130)
    plt.close(fig)


# ------------------------------------------------------------------------ listing
def describe_clusters(chars: Sequence[Sequence[str]], labels: Sequence[np.ndarray],
                      k: int) -> tuple[list[str], dict[str, float]]:
    """Lines of the listing per cluster, and scores of the clustering.

    Scores: ``purity`` (cluster -> key) by character, and for the digits by their place
    and by their character; ``consistency`` (key -> cluster, with its shuffled-label chance
    level) of the digits by character, by place, and by *place in context*: the pair
    (question with its digits removed, place). In ``numbers__place_value`` the question
    without digits names the asked place, so the last key tells whether a digit's role
    depends on where it stands relative to the place asked about.
    """
    flat_chars, flat_places, flat_labels, flat_context = [], [], [], []
    for symbols, clusters in zip(chars, labels):
        inner = "".join(symbols[1:-1])
        places = [-1] + digit_places(inner) + [-1]
        template = "".join(c for c in inner if not c.isdigit())
        flat_chars += list(symbols)
        flat_places += places
        flat_context += [f"{template}|{p}" for p in places]
        flat_labels += [int(c) for c in clusters]
    flat_labels = np.asarray(flat_labels)
    digits = np.asarray([p >= 0 for p in flat_places])
    scores = {"by_character": purity(flat_labels, flat_chars)}
    if digits.any():
        scores["digits_by_place"] = purity(flat_labels[digits],
                                           np.asarray(flat_places)[digits])
        scores["digits_by_character"] = purity(flat_labels[digits],
                                               np.asarray(flat_chars)[digits])
        for name, keys in (("character", flat_chars), ("place", flat_places),
                           ("place_in_context", flat_context)):
            keys = np.asarray(keys)[digits]
            scores[f"consistency_digits_{name}"] = consistency(flat_labels[digits], keys)
            scores[f"consistency_digits_{name}_chance"] = shuffled_consistency(
                flat_labels[digits], keys)
    lines = []
    for cluster in range(k):
        members = np.flatnonzero(flat_labels == cluster)
        if not len(members):
            continue
        lines.append(f"cluster {cluster:2d} ({len(members)} positions): characters "
                     f"{tally(flat_chars[i] for i in members)}")
        places = [flat_places[i] for i in members if flat_places[i] >= 0]
        if places:
            lines.append(f"    digit places {tally(str(p) for p in places)}")
    return lines, scores


def tally(items) -> str:
    """``"7 14, 3 2"``: the items by count, most common first."""
    counts = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return ", ".join(f"{repr(w) if w == ' ' else w} {n}"
                     for w, n in sorted(counts.items(), key=lambda x: (-x[1], x[0])))


# --------------------------------------------------------------------------- main
def sample_questions(data_dir: str | None, module: str, samples: int, seed: int):
    """A seeded sample of ``module``'s interpolation questions and their answers."""
    from tpr_keras.data import mathematics

    root = mathematics.find_mathematics_dir(data_dir, download=False)
    questions, answers = mathematics.parse_mathematics_file(
        os.path.join(root, "interpolate", f"{module}.txt"))
    pick = np.sort(np.random.default_rng(seed).choice(len(questions),
                                                      min(samples, len(questions)),
                                                      replace=False))
    return [questions[i] for i in pick], [answers[i] for i in pick]
