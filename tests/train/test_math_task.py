"""``train.math``'s task in process: ``--module_weights`` and ``--init_from``."""

import types

import numpy as np
import pytest

from tpr_keras.data.mathematics import CharVocabulary
from train.tasks.math import MathTask, load_initial_weights, parse_module_weights

MODULES = ["arithmetic__add_or_sub", "comparison__pair", "numbers__place_value"]


def test_module_weights_parse_to_module_ids_and_refuse_bad_entries():
    assert parse_module_weights("comparison__pair=3", MODULES) == {1: 3.0}
    assert parse_module_weights(" numbers__place_value=0.5,arithmetic__add_or_sub=2",
                                MODULES) == {2: 0.5, 0: 2.0}
    assert parse_module_weights(None, MODULES) is None
    for text, message in [("comparison__pair", "not module=weight"),
                          ("comparison__pairs=2", "not a trained module.*comparison__pair"),
                          ("comparison__pair=0", "positive number, got '0'"),
                          ("comparison__pair=x", "positive number"),
                          ("comparison__pair=inf", "positive number"),
                          ("comparison__pair=2,comparison__pair=3", "twice")]:
        with pytest.raises(ValueError, match=message):
            parse_module_weights(text, MODULES)


#: The tests' models: the tiny size with one encoder and one decoder layer. What they check
#: (weights copied, a vocabulary or a shape that differs refused) does not depend on the
#: depth, and building a TP-Transformer costs about its layer count (tracing each layer's
#: call); the file builds about fifteen.
ONE_LAYER = dict(num_encoder_layers=1, num_decoder_layers=1)


def tiny(vocab, **overrides):
    from tpr_keras.models.tp_transformer import TPTransformer

    return TPTransformer.from_paper_size("tiny", vocabulary_size=len(vocab),
                                         vocabulary=vocab.tokens, **{**ONE_LAYER, **overrides})


def weights_equal(a, b):
    return all(np.array_equal(x, y) for x, y in zip(a.get_weights(), b.get_weights()))


def test_init_from_starts_the_model_at_a_presets_weights(tmp_path, monkeypatch):
    import keras
    from tpr_keras.models import TPTransformer
    from tpr_keras.models.presets import PaperSize

    # the task builds its --size by name: here "tiny" with the tests' one layer a side
    tiny_size = TPTransformer.paper_sizes["tiny"]
    monkeypatch.setitem(TPTransformer.paper_sizes, "tiny", PaperSize(
        {**tiny_size.config, **ONE_LAYER}, tiny_size.description))
    vocab = CharVocabulary.build("0123456789+-= ?abc")
    keras.utils.set_random_seed(1)
    trained = tiny(vocab)
    trained.save_to_preset(str(tmp_path / "preset"), assets={"vocab.txt": vocab.save},
                           metadata={"training": {
                               "command": "python -m train.math --steps 80", "source": {
                                   "commit": "abc", "dirty": False},
                               "results_json": "results/math/x/results.json"}})
    keras.utils.set_random_seed(2)
    fresh = tiny(vocab)
    assert not weights_equal(fresh, trained)
    # the task's model_fn: the size's fresh model, then the preset's weights
    flags = types.SimpleNamespace(init_from=str(tmp_path / "preset"), model="tp_transformer")
    task = MathTask(flags)
    task.preset, task.data = "tiny", types.SimpleNamespace(vocab=vocab)
    model = task.model_fn()
    assert weights_equal(model, trained) and len(model.weights) == len(trained.weights)
    from tpr_keras.presets.preset_files import sha256_file

    assert task.init_record == {"preset": "preset", "command": "python -m train.math --steps 80",
                      "commit": "abc", "results_json": "results/math/x/results.json",
                      "weights_sha256": sha256_file(tmp_path / "preset" / "model.weights.h5")}
    flags.init_from = None
    assert not weights_equal(task.model_fn(), trained)
    # another vocabulary, another size: refused by name
    other = CharVocabulary.build("0123456789+-= ?abd")
    with pytest.raises(ValueError, match="vocabulary differs"):
        load_initial_weights(tiny(other), str(tmp_path / "preset"))
    with pytest.raises(ValueError, match="do not fit"):
        load_initial_weights(tiny(vocab, feed_forward_dim=32), str(tmp_path / "preset"))


def test_init_from_reads_the_data_with_the_presets_vocabulary(tiny_math, tmp_path):
    """A run continuing a preset on a subset of its modules (fewer characters) reads with the
    preset's vocabulary, so the preset's weights fit; characters it lacks are refused."""
    wide = CharVocabulary.build("What is the units digit of 0123456789?+-<>=TrueFalse/")
    narrow = CharVocabulary.build("0123456789 ?")
    for name, vocab in [("wide", wide), ("narrow", narrow)]:
        tiny(vocab).save_to_preset(str(tmp_path / name), assets={"vocab.txt": vocab.save},
                                   metadata={"task": "math"})

    def task(init_from):
        flags = types.SimpleNamespace(
            init_from=init_from, modules="numbers__place_value", data_dir=str(tiny_math),
            limit_per_file=None, download=False, module_weights=None, balance_modules=True,
            validation_source="heldout_train", validation_questions=1000, validation_dir=None)
        return MathTask(flags)

    fresh = task(None)
    fresh.load_data()
    assert fresh.data.vocab.tokens != wide.tokens
    continued = task(str(tmp_path / "wide"))
    continued.load_data()
    assert continued.data.vocab.tokens == wide.tokens
    assert continued.data.stats["unknown_characters"] == {}
    with pytest.raises(ValueError, match="outside the preset's vocabulary"):
        task(str(tmp_path / "narrow")).load_data()


def test_init_from_a_routed_preset_is_refused_by_name(tmp_path):
    from tpr_keras.models import RoutedTPTransformer

    vocab = CharVocabulary.build("0123456789+-= ?abc")
    routed = RoutedTPTransformer(tiny(vocab), {"comparison__pair": tiny(vocab)})
    routed.save_to_preset(str(tmp_path / "routed"), assets={"vocab.txt": vocab.save},
                          metadata={"task": "math"})
    with pytest.raises(ValueError, match="RoutedTPTransformer preset; .*training.parts"):
        load_initial_weights(tiny(vocab), str(tmp_path / "routed"))


def test_length_groups_split_the_training_steps_model_call(monkeypatch):
    """``--length_groups N``: the step's loss calls the model on N length-sorted parts of
    the batch, each cut to its own longest question and answer (the loss and gradient
    equal the whole batch's: tests/training/test_length_groups.py), and ``--target_groups
    M`` cuts each again by answer length; both refused on JAX."""
    import keras
    import train.math
    from train import backend
    from train.errors import UsageError

    def task(*argv):
        task = MathTask(train.math.command().parse(["--size", "tiny", *argv]))
        task.resolve_recipe()
        return task

    calls = []

    def model(features, training):  # logits of the right shape; records what it was given
        calls.append({k: tuple(v.shape) for k, v in features.items()})
        return keras.ops.zeros(tuple(features["target_in"].shape) + (5,))

    source = np.zeros((6, 9), "int32")
    target = np.zeros((6, 4), "int32")
    for row, (question, answer) in enumerate([(9, 4), (2, 1), (3, 2), (8, 3), (1, 1), (4, 2)]):
        source[row, :question], target[row, :answer] = 4, 4
    features, labels = {"source": source, "target_in": target}, {"target_out": target}
    out = task("--length_groups", "3").compute_fn(False)(model, features, labels, True)
    assert calls == [{"source": (2, 2), "target_in": (2, 1)},
                             {"source": (2, 4), "target_in": (2, 2)},
                             {"source": (2, 9), "target_in": (2, 4)}]
    assert tuple(out["loss"].shape) == (6,)
    calls.clear()
    # --target_groups 2: each of 2 question-length parts cut again by answer length
    task("--length_groups", "2", "--target_groups", "2").compute_fn(False)(
        model, features, labels, True)
    assert calls == [{"source": (2, 2), "target_in": (2, 1)},
                     {"source": (2, 4), "target_in": (2, 2)},
                     {"source": (1, 8), "target_in": (1, 3)},
                     {"source": (1, 9), "target_in": (1, 4)}]
    calls.clear()
    task().compute_fn(False)(model, features, labels, True)
    assert calls == [{"source": (6, 9), "target_in": (6, 4)}]
    monkeypatch.setattr(backend, "keras_backend", lambda: "jax")
    with pytest.raises(UsageError, match="--length_groups 2 needs TensorFlow"):
        task("--length_groups", "2")
    with pytest.raises(UsageError, match="--target_groups 2 needs TensorFlow"):
        task("--target_groups", "2")
    assert task().flags.length_groups == 1  # the default runs on JAX


def _training_lengths(split, *argv):
    """``[(question lengths, answer lengths)]`` of the batches of one pass of ``train.math
    --size tiny --batch_size 8 ARGV``'s TensorFlow training data over ``split``."""
    import train.math

    task = MathTask(train.math.command().parse(["--size", "tiny", "--batch_size", "8",
                                                *argv]))
    task.resolve_recipe()
    task.data, task.validation, task.module_weights = (
        types.SimpleNamespace(train=split), split, None)
    return [((f["source"].numpy() != 0).sum(1), (f["target_in"].numpy() != 0).sum(1))
            for f, _ in task.training_data(None, on_jax=False)[0](0)]


def test_answer_buckets_batch_the_training_data_by_the_length_grid(monkeypatch):
    """``--answer_buckets``: each training batch holds one cell of the (question length,
    answer length) grid; without it a batch's answers span the grid's cells. Refused on
    JAX."""
    from tests.data.tiny_math import random_split
    from tpr_keras.data.mathematics import GRID_ANSWER_BOUNDARIES, GRID_BUCKET_BOUNDARIES
    from train import backend
    from train.errors import UsageError

    split = random_split(200, (3, 60), (1, 20))

    def cells(*argv):
        return [len(set(zip(np.digitize(questions, GRID_BUCKET_BOUNDARIES),
                            np.digitize(answers, GRID_ANSWER_BOUNDARIES))))
                for questions, answers in _training_lengths(split, *argv)]

    assert set(cells("--answer_buckets")) == {1}
    assert max(cells()) > 1
    monkeypatch.setattr(backend, "keras_backend", lambda: "jax")
    with pytest.raises(UsageError, match="--answer_buckets batches by a grid"):
        cells("--answer_buckets")


def test_nolength_buckets_batch_the_training_data_plainly(monkeypatch):
    """``--nolength_buckets``: shuffled batches, each padded to its own longest question,
    whose questions span the length buckets (with the default a batch's questions fall in
    one bucket); every example once a pass. Refused with ``--answer_buckets`` and on
    JAX."""
    from tests.data.tiny_math import random_split
    from tpr_keras.data.mathematics import DEFAULT_BUCKET_BOUNDARIES
    from train import backend
    from train.errors import UsageError

    split = random_split(200, (3, 120), (1, 20))

    def buckets(*argv):
        return [(len(questions), len(set(np.digitize(questions, DEFAULT_BUCKET_BOUNDARIES))))
                for questions, _ in _training_lengths(split, *argv)]

    plain, bucketed = buckets("--nolength_buckets"), buckets()
    assert max(count for _, count in plain) > 1
    assert {count for _, count in bucketed} == {1}
    assert sum(size for size, _ in plain) == sum(size for size, _ in bucketed) == 200
    with pytest.raises(UsageError, match="--answer_buckets batches by a grid"):
        buckets("--nolength_buckets", "--answer_buckets")
    monkeypatch.setattr(backend, "keras_backend", lambda: "jax")
    with pytest.raises(UsageError, match="whose batches pad to a few fixed shapes"):
        buckets("--nolength_buckets")


def test_the_curve_and_the_final_table_share_one_compiled_decoder(monkeypatch):
    """``_accuracy`` makes one scorer per model for the run (the curve's after every
    epoch, the final table's): the same model gets the same one, another model its own."""
    import tpr_keras.evaluation.mathematics as evaluation

    made = []
    monkeypatch.setattr(evaluation, "greedy_scorer",
                        lambda model, max_length: made.append(model) or (lambda s, t: None))
    task = MathTask.__new__(MathTask)
    task.flags = types.SimpleNamespace(eval_batch_size=4)
    model, other = (types.SimpleNamespace(max_decode_length=5) for _ in range(2))
    first = task._accuracy(model, on_jax=False)
    assert task._accuracy(model, on_jax=False) is first and made == [model]
    assert task._accuracy(other, on_jax=False) is not first and made == [model, other]
