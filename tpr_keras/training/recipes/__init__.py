"""Training recipes: the optimizer and schedule each paper trains each model size with.

The models carry only their architecture sizes (``TPRRNN.paper_sizes``, ...); the
recipe that goes with a size lives here, keyed by the same names, one module per model
family: :mod:`.tpr_rnn` (Appendix A), :mod:`.memn2n` (§4.2), :mod:`.entailment` (§5.1,
with ``--recipe paper|cpu``), :mod:`.tp_transformer` (§4.1 and the CPU sizes). The
``train.*`` commands, the benchmarks and the experiments read them through
:func:`recipe`. Nothing here imports Keras.
"""

from tpr_keras.training.recipes import entailment, memn2n, tp_transformer, tpr_rnn

#: ``{family: {size: recipe}}``; a family is named as its model package.
RECIPES = {"tpr_rnn": tpr_rnn.RECIPES, "memn2n": memn2n.RECIPES,
           "entailment": entailment.RECIPES, "tp_transformer": tp_transformer.RECIPES}
#: ``{family: recipe}``: the training step of the authors' released code, for every
#: size of the families whose reference code the port is compared with
#: (docs/fidelity.md; what each still leaves different: docs/authors_code.md).
AUTHORS_CODE = {"tpr_rnn": tpr_rnn.AUTHORS_CODE_RECIPE,
                "tp_transformer": tp_transformer.AUTHORS_CODE_RECIPE,
                "memn2n": memn2n.AUTHORS_CODE_RECIPE}
#: Recipe names of :func:`recipe`.
RECIPE_NAMES = ("size", "authors_code")


def recipe(family, size, name="size"):
    """The training recipe of ``family``'s size ``size`` as a new dict.

    Args:
        family: ``"tpr_rnn"``, ``"memn2n"``, ``"entailment"`` or ``"tp_transformer"``.
        size: A name of the family's model's ``paper_sizes`` (e.g. ``"all_tasks"``).
        name: ``"size"`` (the size's recipe, from the paper) or ``"authors_code"``
            (:data:`AUTHORS_CODE`: the authors' released training step, any size).

    Returns:
        ``{"optimizer": ..., "learning_rate": ..., "batch_size": ..., ...}``: the fields
        the family's ``train.*`` command reads.

    Raises:
        ValueError: an unknown family, size or name (the message lists the known ones).

    Example:
    >>> recipe("tpr_rnn", "all_tasks")["batch_size"]
    32
    >>> recipe("tp_transformer", "tiny", "authors_code")["optimizer"]
    'torch_adam'
    """
    if family not in RECIPES:
        raise ValueError(f"Unknown model family {family!r}; choose from {sorted(RECIPES)}.")
    if size not in RECIPES[family]:
        raise ValueError(f"{family} has no recipe for size {size!r}; choose from "
                         f"{sorted(RECIPES[family])}.")
    if name not in RECIPE_NAMES:
        raise ValueError(f"Unknown recipe {name!r}; choose from {list(RECIPE_NAMES)}.")
    if name == "authors_code":
        if family not in AUTHORS_CODE:
            raise ValueError(f"{family} has no authors_code recipe; choose from "
                             f"{sorted(AUTHORS_CODE)}.")
        return dict(AUTHORS_CODE[family])
    return dict(RECIPES[family][size])
