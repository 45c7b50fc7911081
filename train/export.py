"""Serve a trained preset without training: ``python -m train.export --preset NAME``.

Writes the preset's model as the same TF Serving SavedModel the ``train.*`` commands
write at the end of a run: ``<export_dir>/<model_name>/<version>/saved_model.pb`` with
its vocabulary, a warm-up request and ``export_info.json``. Then::

    python -m serving.server --model_name babi --model_base_path exports/babi

``--keras_model PATH`` exports a ``model.keras`` written by a ``train.*`` run instead
(its ``vocab.txt`` beside it): what a run on the JAX backend calls, in a TensorFlow
process, to write its SavedModel.
"""

import os

from absl import flags

from train import cli
from train.outputs import SAVED_MODEL_LINE

FLAGS = flags.FLAGS
cli.define_preset_flags()
flags.DEFINE_string("export_dir", "exports", "Base folder of the export.")
flags.DEFINE_string("model_name", None, "Served model name (default: the preset's, e.g. "
                    "babi, math, entailment).")
flags.DEFINE_integer("version", None, "Version number (default: one more than the largest "
                     "under <export_dir>/<model_name>).")
flags.DEFINE_string("keras_model", None, "Export this model.keras of a train.* run (any "
                    "backend) instead of a preset; its vocab.txt is read from beside it.")
flags.DEFINE_integer("max_story_sentences", None, "bAbI with --keras_model: the served "
                     "model keeps the last N sentences of a story (0: all; default: the "
                     "exporter's).")

HELP_GROUPS = [("Preset", ["preset", "keras_model", "max_story_sentences"]),
               ("Export", ["export_dir", "model_name", "version"]),
               ("Output", ["list_presets", "debug", "tf_logs"])]


def export_model(task, model, vocab, export_dir, model_name, version=None, **options):
    """Exports ``model`` of ``task`` (``babi``, ``math``, ``entailment``) through its
    family's exporter; returns the version folder. ``options``: bAbI's
    ``max_story_sentences``."""
    if task == "babi":
        from tpr_keras.models.babi import export_babi_model

        return export_babi_model(model, vocab, export_dir, model_name, version=version,
                                 **options)
    if task == "entailment":
        from tpr_keras.models.entailment import export_entailment_model

        return export_entailment_model(model, export_dir, model_name, version=version)
    if task == "math":
        from tpr_keras.models.tp_transformer import export_math_model

        return export_math_model(model, vocab, export_dir, model_name, version=version)
    raise ValueError(f"unknown task {task!r}")


def export_preset(preset, export_dir, model_name=None, version=None):
    """Exports a loaded :class:`~tpr_keras.presets.TrainedPreset`; returns the version
    folder."""
    from tpr_keras.training.evaluation import SERVED_MAX_STORY_SENTENCES, preset_vocabulary

    meta = preset.metadata
    task = meta["task"]
    if task not in ("babi", "math", "entailment"):
        raise ValueError(f"{preset.path}: unknown task {task!r}")
    options = {}
    if task == "babi":
        options["max_story_sentences"] = meta.get("serving_options", {}).get(
            "max_story_sentences", SERVED_MAX_STORY_SENTENCES)
    return export_model(task, preset.build_model(), preset_vocabulary(preset), export_dir,
                        model_name or meta.get("model_name") or task, version, **options)


def export_keras_model(path, export_dir, model_name=None, version=None,
                       max_story_sentences=None):
    """Exports the ``model.keras`` of a ``train.*`` run (written under any backend) with
    the vocabulary beside it; returns the version folder. The family comes from the
    model's class; any other model is an error."""
    import keras

    import tpr_keras.models.all_families  # noqa: F401  (registers the classes for load_model)
    from tpr_keras import models

    model = keras.models.load_model(path)
    vocab_path = os.path.join(os.path.dirname(path), "vocab.txt")
    options = {}
    if isinstance(model, (models.TPRRNN, models.MemN2N)):
        from tpr_keras.data.babi import Vocabulary

        task, vocab = "babi", Vocabulary.load(vocab_path)
        if max_story_sentences is not None:  # 0: no limit
            options["max_story_sentences"] = max_story_sentences or None
    elif isinstance(model, models.TPTransformer):
        from tpr_keras.data.mathematics import CharVocabulary

        task, vocab = "math", CharVocabulary.load(vocab_path)
    elif isinstance(model, (models.PlainEntailmentModel, models.BiDAFEntailmentModel)):
        task, vocab = "entailment", None
    else:
        raise ValueError(f"{path}: a {type(model).__name__}, not a tpr-keras model of "
                         "bAbI, math or entailment; nothing to export.")
    return export_model(task, model, vocab, export_dir, model_name or task, version,
                        **options)


def main(argv):
    del argv
    if FLAGS.keras_model:
        cli.import_tensorflow()
        served = export_keras_model(FLAGS.keras_model, FLAGS.export_dir, FLAGS.model_name,
                                    FLAGS.version, FLAGS.max_story_sentences)
    else:
        preset = cli.load_flagged_preset()
        served = export_preset(preset, FLAGS.export_dir, FLAGS.model_name, FLAGS.version)
    base = os.path.abspath(os.path.dirname(served))
    print(f"{SAVED_MODEL_LINE}{served}\n"
          f"Serve it: python -m serving.server --model_name={os.path.basename(base)} "
          f"--model_base_path={base}")


if __name__ == "__main__":
    cli.run(main, "python -m train.export", __doc__, HELP_GROUPS)
