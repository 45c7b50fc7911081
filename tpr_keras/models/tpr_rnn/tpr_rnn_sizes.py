"""TPR-RNN paper sizes: Schlag & Schmidhuber (2018), Appendix A, and the authors' code.

The training recipe of each size (Nadam, learning rate, batch, ...) is
:mod:`tpr_keras.training.recipes.tpr_rnn`'s, keyed by the same names.
"""

from tpr_keras.models.presets import PaperSize

# ``None`` means "the vocabulary size" (dim V_Symbol = vocab).
PAPER_SIZES = {
    "single_task": PaperSize(
        {"hidden_dim": None, "entity_dim": 15, "relation_dim": 10},
        "Appendix A, one task: dim V_Symbol = dim V_Hidden = vocabulary, entity 15, "
        "relation 10."),
    "all_tasks": PaperSize(
        {"hidden_dim": 90, "entity_dim": 40, "relation_dim": 20},
        "Appendix A, all tasks, as printed: hidden 90, entity 40, relation 20."),
    "all_tasks_code": PaperSize(
        {"hidden_dim": 40, "entity_dim": 90, "relation_dim": 20},
        "All tasks, the sizes of the authors' published configuration: entity 90, "
        "relation 20, hidden 40 (the appendix's names look swapped relative to it)."),
    "all_tasks_authors": PaperSize(
        {"hidden_dim": 40, "entity_dim": 90, "relation_dim": 20, "initialization": "code"},
        "All tasks as the authors' published code builds it: all_tasks_code's sizes and "
        "its initialisation (embeddings U(±0.1), positions ones / k, layer-norm ε 1e-7)."),
}
