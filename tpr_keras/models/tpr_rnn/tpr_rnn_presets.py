"""TPR-RNN presets: the sizes and training recipes of Schlag & Schmidhuber (2018), Appendix A."""

from tpr_keras.models.presets import Preset

#: Appendix A, single task: Nadam (Dozat) with lr 0.008, β1 0.6, β2 0.4, batch 128;
#: gradients clipped to global norm 5; warm-up at a tenth of the rate for 50 steps;
#: the rate halved once when the validation loss falls below 0.1. The paper gives no
#: epoch count: training runs until early stopping, capped at 200 epochs.
SINGLE_TASK_RECIPE = {
    "optimizer": "nadam", "learning_rate": 0.008, "beta_1": 0.6, "beta_2": 0.4,
    "batch_size": 128, "clip_norm": 5.0, "warmup_steps": 50, "halve_lr_below": 0.1,
    "decay_every_epochs": None, "epochs": 200,
}
#: Appendix A, all tasks jointly: lr 0.001 with the default betas and batch 32.
ALL_TASKS_RECIPE = dict(SINGLE_TASK_RECIPE, learning_rate=0.001, beta_1=0.9, beta_2=0.999,
                        batch_size=32)

# ``None`` means "the vocabulary size" (dim V_Symbol = vocab).
PRESETS = {
    "single_task": Preset(
        {"hidden_dim": None, "entity_dim": 15, "relation_dim": 10}, SINGLE_TASK_RECIPE,
        "Appendix A, one task: dim V_Symbol = dim V_Hidden = vocabulary, entity 15, "
        "relation 10."),
    "all_tasks": Preset(
        {"hidden_dim": 90, "entity_dim": 40, "relation_dim": 20}, ALL_TASKS_RECIPE,
        "Appendix A, all tasks, as printed: hidden 90, entity 40, relation 20."),
    "all_tasks_code": Preset(
        {"hidden_dim": 40, "entity_dim": 90, "relation_dim": 20}, ALL_TASKS_RECIPE,
        "All tasks, the sizes of the authors' published configuration: entity 90, "
        "relation 20, hidden 40 (the appendix's names look swapped relative to it)."),
    "all_tasks_authors": Preset(
        {"hidden_dim": 40, "entity_dim": 90, "relation_dim": 20, "initialization": "code"},
        ALL_TASKS_RECIPE,
        "All tasks as the authors' published code builds it: all_tasks_code's sizes and "
        "its initialisation (embeddings U(±0.1), positions ones / k, layer-norm ε 1e-7)."),
}
