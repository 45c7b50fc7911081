"""The evaluation tables of the three tasks, from a trained model and the official test files.

One function per task computes the numbers a paper's table reports with the rules the
``train.*`` commands apply at the end of a run (argmax answer for bAbI, logit > 0 for
entailment, greedy exact match for math; ``train.math`` calls this module's scorer), so a
preset's recorded table and ``python -m train.evaluate`` agree, and ``train.save_preset``
checks them against the run's own numbers:

* :func:`babi_table`: test error % per task, the mean, failed tasks (> 5 %);
* :func:`entailment_table`: accuracy % per split (validate and the five test sets);
* :func:`math_table`: greedy exact match % per module, interpolate and extrapolate.

``limit`` keeps the first N examples of every file (a sample: what CI checks).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from tpr_keras.data import entailment as entailment_data
from tpr_keras.data.babi import truncation

#: A task whose test error is above this (%) has failed (the bAbI papers' criterion).
FAILED_ABOVE = 5.0
#: The entailment splits every table reports, in the paper's column order.
ENTAILMENT_SPLITS = entailment_data.EVALUATION_SPLITS
#: How long a story the served bAbI models read (defined with the loader's truncation).
SERVED_MAX_STORY_SENTENCES = truncation.SERVED_MAX_STORY_SENTENCES


def babi_table(model, vocab, data_dir, tasks: Sequence[int] = tuple(range(1, 21)),
               limit: int | None = None, max_story_sentences=None,
               batch_size: int = 256, download: bool = False,
               keep_sentence_ends: bool = True) -> dict[str, Any]:
    """bAbI test error per task of a model reading ``{"story", "question"}`` ids.

    Args:
        model: A TPR-RNN or MemN2N (``max_words`` attribute; logits over ``vocab``).
        vocab: The model's :class:`~tpr_keras.data.babi.Vocabulary`.
        data_dir: Where the official files are (see ``find_babi_dir``).
        tasks: Task numbers.
        limit: Only the first N questions of every test file.
        max_story_sentences: Truncation as in training (None: 70, 130 for task 3).
        batch_size: Evaluation batch.
        download: Allow downloading the archive when no local copy is found.
        keep_sentence_ends: False drops ``. ? !`` as in training (MemN2N
            ``joint_paper``; :func:`~tpr_keras.data.babi.text.tokenize`).

    Returns:
        ``{"test_error_percent": {"1": ..., ...}, "test_error_percent_mean",
        "failed_tasks", "questions": {"1": n, ...}}``.

    Raises:
        FileNotFoundError: a task's test file is missing (the message names it).
    """
    from tpr_keras.data.babi import files, parsing, pipeline, splits, truncation
    from tpr_keras.data.babi.encoding import encode_stories

    root = files.find_babi_dir(data_dir, download=download)
    limits = truncation.resolve_limits(max_story_sentences, tasks)
    parts = []
    for task in tasks:
        stories = parsing.parse_stories(files.task_file(root, task, "test"), keep_sentence_ends)
        parts.append((task, splits.take_questions(stories, limit) if limit else stories))
    split, _ = encode_stories(parts, vocab, model.max_words, limits)
    dataset = pipeline.make_dataset(split, batch_size, shuffle=False, bucket_width=10)

    @tf.function(reduce_retracing=True)  # batches differ in length: one general trace
    def correct(features, answer):
        logits = model(features, training=False)
        return tf.equal(tf.argmax(logits, axis=-1, output_type=tf.int32),
                        tf.cast(answer, tf.int32))

    hits, groups = [], []
    for features, labels in dataset:
        hits.append(correct(features, labels["answer"]).numpy())
        groups.append(labels["task"].numpy())
    hits, groups = np.concatenate(hits), np.concatenate(groups)
    errors = {str(t): float(100.0 * (1.0 - hits[groups == t].mean())) for t in tasks}
    return {"test_error_percent": errors,
            "test_error_percent_mean": float(np.mean(list(errors.values()))),
            "failed_tasks": sum(e > FAILED_ABOVE for e in errors.values()),
            "questions": {str(t): int((groups == t).sum()) for t in tasks}}


def entailment_table(model, data_dir, splits: Sequence[str] = ENTAILMENT_SPLITS,
                     limit: int | None = None, batch_size: int = 256) -> dict[str, Any]:
    """Accuracy % per split of an entailment model (``{"a", "b"}`` ids -> one logit).

    Returns:
        ``{"accuracy_percent": {split: ...}, "pairs": {split: n}}``.

    Raises:
        FileNotFoundError: a split's file is missing (the message names it).
    """
    from tpr_keras.data import entailment

    @tf.function(reduce_retracing=True)  # batches differ in length: one general trace
    def correct(features, labels):
        logits = tf.reshape(tf.cast(model(features, training=False), tf.float32), [-1])
        return tf.equal(tf.cast(logits > 0, tf.int32),
                        tf.reshape(tf.cast(labels, tf.int32), [-1]))

    accuracy, pairs = {}, {}
    for name in splits:
        data = entailment.load_entailment_split(name, data_dir)
        if limit:
            data = entailment.EntailmentData(data.a[:limit], data.b[:limit],
                                             data.labels[:limit], data.heuristics[:limit])
        hits = np.concatenate([correct(f, y).numpy()
                               for f, y in entailment.make_dataset(data, batch_size)])
        accuracy[name] = float(100.0 * hits.mean())
        pairs[name] = int(hits.size)
    return {"accuracy_percent": accuracy, "pairs": pairs}


def greedy_scorer(model, max_length: int):
    """A ``tf.function`` ``(source, target_out) -> bool[B]``: greedy answer == target.

    Traced once (any batch size, any lengths) and shared by every module's
    evaluation, so 71 splits cost one trace, not 71.
    """

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)] * 2, autograph=False)
    def correct(source, target_out):
        ids, _ = model.greedy_decode(source, max_length=max_length)
        width = tf.shape(ids)[1]
        target = tf.pad(target_out, [[0, 0], [0, width - tf.shape(target_out)[1]]])
        return tf.reduce_all(tf.equal(ids, target), axis=1)

    return correct


def greedy_accuracy(scorer, dataset) -> float:
    """Exact match (%) of greedy answers over ``dataset``, whole answer + end symbol."""
    hits = [scorer(f["source"], l["target_out"]).numpy() for f, l in dataset]
    return float(100.0 * np.concatenate(hits).mean()) if hits else float("nan")


def routed_accuracy(model, scorers, templates, vocab, split, batch_size) -> float:
    """Exact match (%) over ``split`` of a routed model (``RoutedTPTransformer``): each
    question answered by the decoder of the module its wording has (``templates``), as
    the served model does; ``scorers[r]`` scores route ``r``'s decoder."""
    from tpr_keras.data import mathematics

    texts = [vocab.decode(split.question(i)) for i in range(len(split))]
    routes = model.routes([templates.module_of(text) for text in texts])
    hits = 0.0
    for route, scorer in enumerate(scorers):
        rows = np.flatnonzero(routes == route)
        if rows.size:
            part = mathematics.make_dataset(split.take(rows), batch_size)
            hits += greedy_accuracy(scorer, part) * rows.size
    return hits / len(split) if len(split) else float("nan")


def math_table(model, vocab, data_dir, modules, limit: int | None = None,
               batch_size: int = 256, download: bool = False,
               templates=None) -> dict[str, Any]:
    """Greedy exact match % per module of a TP-Transformer, interpolate and extrapolate.

    Args:
        model: A :class:`~tpr_keras.models.TPTransformer` or a ``RoutedTPTransformer``.
        vocab: Its :class:`~tpr_keras.data.mathematics.CharVocabulary`.
        data_dir: Where the Mathematics Dataset is.
        modules: Module names or globs (their training files are not read).
        limit: Only the first N questions of every file.
        templates: The preset's ``ModuleTemplates``: a routed model needs them (each
            question goes to the decoder of the module its wording has).

    Returns:
        ``{"interpolate_accuracy_percent": {module: ...}, "extrapolate_accuracy_percent":
        {...}, "summary": {regime: {"modules", "mean", "above_95"}}}``.
    """
    from tpr_keras.data import mathematics

    if not isinstance(modules, str):
        modules = tuple(modules)
    data = mathematics.load_mathematics(data_dir, modules=modules, vocab=vocab,
                                        difficulties=(), limit_per_file=limit,
                                        download=download)
    if callable(getattr(model, "routes", None)):
        if templates is None:
            raise ValueError("a routed model answers by module: pass the preset's module "
                             "templates")
        scorers = [greedy_scorer(d, model.max_decode_length) for d in model.decoders()]

        def accuracy(split):
            return routed_accuracy(model, scorers, templates, vocab, split, batch_size)
    else:
        scorer = greedy_scorer(model, model.max_decode_length)

        def accuracy(split):
            return greedy_accuracy(scorer, mathematics.make_dataset(split, batch_size))
    table: dict[str, Any] = {}
    summary = {}
    for regime in ("interpolate", "extrapolate"):
        scores = {module: accuracy(split) for module, split in getattr(data, regime).items()}
        table[f"{regime}_accuracy_percent"] = scores
        if scores:
            summary[regime] = {"modules": len(scores),
                               "mean": float(np.mean(list(scores.values()))),
                               "above_95": sum(s > 95 for s in scores.values())}
    table["summary"] = summary
    return table


def data_files(task, data_dir, options):
    """``(root, [paths])``: the data files a preset's run read, for their SHA-256."""
    if task == "babi":
        from tpr_keras.data.babi import files

        root = files.find_babi_dir(data_dir, download=False)
        return root, [p for t in options["tasks"] for p in files.task_files(root, t)]
    if task == "entailment":
        from tpr_keras.data import entailment
        from tpr_keras.training.evaluation import ENTAILMENT_SPLITS

        root = entailment.find_entailment_dir(data_dir)
        return root, [os.path.join(root, f"{s}.txt") for s in ("train",) + ENTAILMENT_SPLITS]
    from tpr_keras.data import mathematics

    root = mathematics.find_mathematics_dir(data_dir, download=False)
    selected = mathematics.select_modules(options["modules"], mathematics.list_modules(root))
    folders = {"train": mathematics.TRAIN_DIFFICULTIES}
    return root, sorted({p for regime, modules in selected.items() for m in modules
                         for folder in folders.get(regime, (regime,))
                         for p in glob.glob(os.path.join(root, folder, f"{m}.txt"))})


def changed_data_files(recorded: dict[str, str], root: str | os.PathLike) -> list[str]:
    """The files of ``recorded`` (``{path under root: SHA-256}``, a preset's data) that
    exist under ``root`` with other bytes: a table computed on them may differ."""
    from tpr_keras.presets.preset_files import sha256_file

    return [relative for relative, digest in sorted(recorded.items())
            if os.path.isfile(os.path.join(root, relative))
            and sha256_file(os.path.join(root, relative)) != digest]


def files_sha256(paths: Sequence[str | os.PathLike], root: str | os.PathLike) -> dict[str, str]:
    """``{path relative to root: SHA-256}`` of data files, for a preset's metadata."""
    from tpr_keras.presets.preset_files import sha256_file

    return {os.path.relpath(p, root): sha256_file(p) for p in sorted(map(os.fspath, paths))}


# ------------------------------------------------------------------- trained presets
#: The model classes of each task, as a preset's config.json names them.
TASK_OF_CLASS = {"TPRRNN": "babi", "MemN2N": "babi", "PlainEntailmentModel": "entailment",
                 "BiDAFEntailmentModel": "entailment", "TPTransformer": "math",
                 "RoutedTPTransformer": "math"}


def preset_vocabulary(preset):
    """The vocabulary object a preset's model reads (bAbI words, math characters), or
    None for entailment (a fixed character set)."""
    task = preset.metadata["task"]
    if task == "babi":
        from tpr_keras.data.babi import Vocabulary

        return Vocabulary.load(preset.asset_path("vocab.txt"))
    if task == "math":
        from tpr_keras.data.mathematics import CharVocabulary

        return CharVocabulary.load(preset.asset_path("vocab.txt"))
    return None


def preset_templates(preset):
    """A math preset's ``ModuleTemplates`` (``assets/modules.json``), or None: a preset of
    another task or without them."""
    from tpr_keras.data.mathematics.templates import TEMPLATES_ASSET, ModuleTemplates

    if TEMPLATES_ASSET not in preset.metadata.get("assets", []):
        return None
    return ModuleTemplates.load(preset.asset_path(TEMPLATES_ASSET))


def evaluate_model(task: str, model, vocab, data_dir, options, limit: int | None = None,
                   download: bool = False, templates=None) -> dict[str, Any]:
    """The table of ``task`` (``"babi"``, ``"entailment"``, ``"math"``) for ``model``.

    ``options`` are the preset's ``evaluation_options``: ``tasks``,
    ``max_story_sentences`` and ``keep_sentence_ends`` (bAbI), ``modules`` (math).
    """
    if task == "babi":
        limits = options.get("max_story_sentences")
        if isinstance(limits, dict):
            limits = {int(k): v for k, v in limits.items()}
        return babi_table(model, vocab, data_dir, tasks=options.get("tasks", range(1, 21)),
                          limit=limit, max_story_sentences=limits, download=download,
                          keep_sentence_ends=options.get("keep_sentence_ends", True))
    if task == "entailment":
        return entailment_table(model, data_dir, limit=limit)
    if task == "math":
        return math_table(model, vocab, data_dir, options["modules"], limit=limit,
                          download=download, templates=templates)
    raise ValueError(f"unknown task {task!r}; expected babi, entailment or math")


def table_numbers(table: dict[str, Any]) -> dict[str, float]:
    """``{row label: number}`` of a table: what :func:`compare_tables` compares."""
    out: dict[str, float] = {}
    if "test_error_percent" in table:
        out.update({f"task {t} test error %": v for t, v in table["test_error_percent"].items()})
        if "test_error_percent_mean" in table:
            out["mean test error %"] = table["test_error_percent_mean"]
        if "failed_tasks" in table:
            out["failed tasks"] = float(table["failed_tasks"])
    for split, v in table.get("accuracy_percent", {}).items():
        out[f"{split} accuracy %"] = v
    for regime in ("interpolate", "extrapolate"):
        for module, v in table.get(f"{regime}_accuracy_percent", {}).items():
            out[f"{regime} {module} %"] = v
        if regime in table.get("summary", {}):
            out[f"{regime} mean %"] = table["summary"][regime]["mean"]
    return out


def compare_tables(measured: dict[str, Any], recorded: dict[str, Any],
                   tolerance: float = 0.05) -> list[tuple[str, float | None, float | None, bool]]:
    """``[(row, measured, recorded, within tolerance)]`` over the rows of both tables; a
    row that only one table has is a difference."""
    a, b = table_numbers(measured), table_numbers(recorded)
    rows = list(b) + [k for k in a if k not in b]

    def close(x, y):  # both NaN (an empty split) agree; 1e-9 absorbs float rounding
        return (np.isnan(x) and np.isnan(y)) or abs(x - y) <= tolerance + 1e-9

    return [(k, a.get(k), b.get(k), k in a and k in b and close(a[k], b[k])) for k in rows]
