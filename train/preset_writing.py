"""What a ``train.*`` command that writes a preset adds to the library's writer
(:func:`tpr_keras.presets.preset_writer.write_preset`, which the checkpoint converters call
too): the headline of what the preset scores, and the line printed once it is written.

Importing this module imports neither TensorFlow nor Keras.
"""

from __future__ import annotations

from tpr_keras.presets import preset_writer


def headline(task, table):
    """One line of what the preset scores."""
    if task == "babi":
        n = len(table["test_error_percent"])
        return (f"mean test error {table['test_error_percent_mean']:.2f} % over {n} tasks, "
                f"{table['failed_tasks']} failed (> 5 %)")
    if task == "entailment":
        acc = table["accuracy_percent"]
        return "accuracy % " + ", ".join(f"{k.replace('test_', '')} {v:.1f}"
                                         for k, v in acc.items())
    summary = table["summary"]
    return ", ".join(f"{regime} mean exact match {s['mean']:.1f} % over {s['modules']} modules"
                     for regime, s in summary.items())


def write_preset(model, output, assets, *, task, model_name, description, headline,
                 overwrite=False, **sections):
    """:func:`tpr_keras.presets.preset_writer.write_preset` at ``output``, then one line of
    the preset's size and its headline; returns its path."""
    path = preset_writer.write_preset(
        model, output, task=task, model_name=model_name, description=description,
        headline=headline, assets=assets, overwrite=overwrite, **sections)
    print(f"Preset: {path} ({preset_writer.folder_bytes(path) / 1e6:.2f} MB)\n{headline}")
    return path
