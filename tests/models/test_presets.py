"""The two ways a model is built by name: paper sizes (untrained) and trained presets; the
training recipes live in the training layer, not on the models."""

import dataclasses

import pytest

from tpr_keras.models import (TPRRNN, BiDAFEntailmentModel, MemN2N, PlainEntailmentModel,
                              TPTransformer)
from tpr_keras.models.presets import PaperSize, paper_size_config
from tpr_keras.training import recipes

#: Every model class with paper sizes, and its family in :mod:`tpr_keras.training.recipes`.
FAMILIES = [(TPRRNN, "tpr_rnn"), (MemN2N, "memn2n"), (PlainEntailmentModel, "entailment"),
            (BiDAFEntailmentModel, "entailment"), (TPTransformer, "tp_transformer")]


def test_paper_size_config_applies_overrides_that_are_not_none():
    sizes = {"a": PaperSize({"x": 1, "y": 2}), "plain": {"x": 5}}
    assert paper_size_config(sizes, "a", {"y": None, "z": 3}) == {"x": 1, "y": 2, "z": 3}
    assert paper_size_config(sizes, "plain", {}) == {"x": 5}  # a dict works as a size
    with pytest.raises(ValueError, match=r"Unknown paper size 'b'; choose from \['a', 'plain'\]"):
        paper_size_config(sizes, "b", {})


def test_paper_sizes_are_read_only():
    size = PaperSize({"x": 1})
    with pytest.raises(TypeError):
        size.config["x"] = 2


@pytest.mark.parametrize("model_class, family", FAMILIES,
                         ids=[c.__name__ for c, _ in FAMILIES])
def test_models_hold_sizes_only_and_every_size_has_a_recipe(model_class, family):
    assert not hasattr(model_class, "preset_recipe") and not hasattr(model_class, "presets")
    assert [f.name for f in dataclasses.fields(PaperSize)] == ["config", "description"]
    assert model_class.paper_sizes and all(
        isinstance(size, PaperSize) for size in model_class.paper_sizes.values())
    for name in model_class.paper_sizes:
        assert recipes.recipe(family, name)["batch_size"] > 0


def test_every_recipe_names_a_paper_size():
    sizes = {}
    for model_class, family in FAMILIES:
        sizes.setdefault(family, set()).update(model_class.paper_sizes)
    assert {family: set(table) for family, table in recipes.RECIPES.items()} == sizes


def test_recipe_is_a_copy_and_unknown_names_are_errors():
    single = recipes.recipe("tpr_rnn", "single_task")
    single["learning_rate"] = 1.0
    assert recipes.recipe("tpr_rnn", "single_task")["learning_rate"] != 1.0
    with pytest.raises(ValueError, match=r"memn2n has no recipe for size 'all_tasks_code'"):
        recipes.recipe("memn2n", "all_tasks_code")
    with pytest.raises(ValueError, match="Unknown model family 'babi'"):
        recipes.recipe("babi", "all_tasks")


def test_from_paper_size_takes_positional_sizes_and_overrides():
    model = TPRRNN.from_paper_size("all_tasks_code", 30, 6, entity_dim=None, relation_dim=7)
    assert (model.vocabulary_size, model.max_words) == (30, 6)
    assert (model.entity_dim, model.relation_dim, model.hidden_dim) == (90, 7, 40)
    assert MemN2N.from_paper_size("single_task", vocabulary_size=30, max_words=6,
                                  embedding_dim=None).embedding_dim == 20


def test_has_gpu_reads_device_objects_and_strings():
    from tpr_keras.backend.devices import has_gpu

    class Device:  # the attribute tf.config.PhysicalDevice has
        def __init__(self, kind):
            self.device_type = kind

    assert has_gpu([Device("CPU"), Device("GPU")]) and has_gpu(["cpu", "gpu"])
    assert not has_gpu([Device("CPU")]) and not has_gpu([])
