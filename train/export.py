"""Export a trained preset (or a ``train.*`` run's ``model.keras``) as a TF Serving
SavedModel, to serve it without training: ``python -m train.export --preset NAME``.

Writes the preset's model as the same TF Serving SavedModel the ``train.*`` commands
write at the end of a run: ``<export_dir>/<model_name>/<version>/saved_model.pb`` with
its vocabulary, a warm-up request and ``export_info.json``. Then::

    python -m serving.server --model_name babi --model_base_path exports/babi

``--keras_model PATH`` exports a ``model.keras`` written by a ``train.*`` run instead
(its ``vocab.txt`` beside it): what a run on the JAX backend calls, in a TensorFlow
process, to write its SavedModel.

Both build the task model first (``BabiAnswerer``, ``EntailmentClassifier``,
``MathAnswerer``: what answers in Python) and write it with its ``export``, so the served
model and the Python one are the same object.
"""

import os

from train import backend, cli
from train.tensorflow_export import SAVED_MODEL_LINE

EXAMPLE = "python -m train.export --preset tpr_rnn_babi_all_tasks --export_dir exports"


def export_preset(preset, export_dir, model_name=None, version=None):
    """Exports a loaded :class:`~tpr_keras.presets.TrainedPreset` through its task model
    (``TaskModel.from_preset(preset).export(...)``, what the Python answers come from);
    returns the version folder."""
    from tpr_keras.models.task_models import TaskModel

    return TaskModel.from_preset(preset).export(export_dir, model_name, version=version)


def task_model_of(model, vocab_path, max_story_sentences=None, keep_sentence_ends=True):
    """The task model of a bare model of a ``train.*`` run and the ``vocab.txt`` beside it.

    Raises:
        ValueError: a model of no tpr-keras family that has a task model.
    """
    from tpr_keras import models

    if isinstance(model, (models.TPRRNN, models.MemN2N)):
        from tpr_keras.data.babi import Vocabulary
        from tpr_keras.data.babi.truncation import DEFAULT_MAX_STORY_SENTENCES

        limit = DEFAULT_MAX_STORY_SENTENCES if max_story_sentences is None else (
            max_story_sentences or None)  # 0: no limit
        return models.BabiAnswerer(model, models.BabiPreprocessor(
            Vocabulary.load(vocab_path), model.max_words, limit, keep_sentence_ends))
    if isinstance(model, models.TPTransformer):
        from tpr_keras.data.mathematics import CharVocabulary

        return models.MathAnswerer(model, models.MathPreprocessor(
            CharVocabulary.load(vocab_path)))
    if isinstance(model, (models.PlainEntailmentModel, models.BiDAFEntailmentModel)):
        return models.EntailmentClassifier(model, models.EntailmentPreprocessor())
    raise ValueError(f"a {type(model).__name__}, not a tpr-keras model of bAbI, math or "
                     "entailment; nothing to export.")


def export_keras_model(path, export_dir, model_name=None, version=None,
                       max_story_sentences=None, keep_sentence_ends=True):
    """Exports the ``model.keras`` of a ``train.*`` run (written under any backend) with
    the vocabulary beside it, through its task model; returns the version folder. The
    family comes from the model's class; any other model is an error."""
    import keras

    import tpr_keras.models.all_families  # noqa: F401  (registers the classes for load_model)

    model = keras.models.load_model(path)
    try:
        task_model = task_model_of(model, os.path.join(os.path.dirname(path), "vocab.txt"),
                                   max_story_sentences, keep_sentence_ends)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
    return task_model.export(export_dir, model_name, version=version)


def command():
    """``python -m train.export``'s flags (a fresh :class:`~train.cli.TrainCommand`)."""
    command = cli.TrainCommand("python -m train.export", __doc__, EXAMPLE)
    command.group("What to export")
    cli.define_preset_flag(command)
    command.string("keras_model", None, "Export this model.keras of a train.* run (any "
                   "backend) instead of a preset; its vocab.txt is read from beside it.")
    command.integer("max_story_sentences", None, "bAbI with --keras_model: the served "
                    "model keeps the last N sentences of a story (0: all; default: the "
                    "exporter's).")
    command.boolean("keep_sentence_ends", True, "bAbI with --keras_model: '. ? !' stay "
                    "tokens (off: dropped, as the run's data did; MemN2N joint_paper).")
    command.group("Where the SavedModel goes")
    command.string("export_dir", "exports", "Base folder of the export.")
    command.string("model_name", None, "Served model name (default: the preset's, e.g. "
                   "babi, math, entailment).")
    command.integer("version", None, "Version number (default: one more than the largest "
                    "under <export_dir>/<model_name>).")
    cli.define_output_flags(command)
    return command


def main(args):
    if args.keras_model:
        backend.import_tensorflow(args)
        served = export_keras_model(args.keras_model, args.export_dir, args.model_name,
                                    args.version, args.max_story_sentences,
                                    args.keep_sentence_ends)
    else:
        preset = cli.load_flagged_preset(args)
        served = export_preset(preset, args.export_dir, args.model_name, args.version)
    base = os.path.abspath(os.path.dirname(served))
    print(f"{SAVED_MODEL_LINE}{served}\n"
          f"Serve it: python -m serving.server --model_name={os.path.basename(base)} "
          f"--model_base_path={base}")


if __name__ == "__main__":
    cli.run(command, main)
