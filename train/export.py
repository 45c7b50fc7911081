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

from tpr_keras import cli

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


def export_preset(preset, export_dir, model_name=None, version=None):
    """Exports a loaded :class:`~tpr_keras.presets.TrainedPreset`; returns the version
    folder."""
    from tpr_keras.training.evaluation import SERVED_MAX_STORY_SENTENCES, preset_vocabulary

    meta = preset.metadata
    task = meta["task"]
    name = model_name or meta.get("model_name") or task
    model = preset.build_model()
    if task == "babi":
        from tpr_keras.models.babi import export_babi_model

        options = meta.get("serving_options", {})
        return export_babi_model(model, preset_vocabulary(preset), export_dir, name,
                                 version=version,
                                 max_story_sentences=options.get("max_story_sentences",
                                                                 SERVED_MAX_STORY_SENTENCES))
    if task == "entailment":
        from tpr_keras.models.entailment import export_entailment_model

        return export_entailment_model(model, export_dir, name, version=version)
    if task == "math":
        from tpr_keras.models.tp_transformer import export_math_model

        return export_math_model(model, preset_vocabulary(preset), export_dir, name,
                                 version=version)
    raise ValueError(f"{preset.path}: unknown task {task!r}")


def export_keras_model(path, export_dir, model_name=None, version=None,
                       max_story_sentences=None):
    """Exports the ``model.keras`` of a ``train.*`` run (written under any backend) with
    the vocabulary beside it; returns the version folder. The family comes from the
    model's class."""
    import keras

    from tpr_keras import models

    model = keras.models.load_model(path)
    vocab_path = os.path.join(os.path.dirname(path), "vocab.txt")
    if isinstance(model, (models.TPRRNN, models.MemN2N)):
        from tpr_keras.data.babi import Vocabulary
        from tpr_keras.models.babi import export_babi_model

        extra = {} if max_story_sentences is None else {  # 0: no limit
            "max_story_sentences": max_story_sentences or None}
        return export_babi_model(model, Vocabulary.load(vocab_path), export_dir,
                                 model_name or "babi", version=version, **extra)
    if isinstance(model, models.TPTransformer):
        from tpr_keras.data.mathematics import CharVocabulary
        from tpr_keras.models.tp_transformer import export_math_model

        return export_math_model(model, CharVocabulary.load(vocab_path), export_dir,
                                 model_name or "math", version=version)
    from tpr_keras.models.entailment import export_entailment_model

    return export_entailment_model(model, export_dir, model_name or "entailment",
                                   version=version)


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
    print(f"SavedModel for TF Serving: {served}\n"
          f"Serve it: python -m serving.server --model_name={os.path.basename(base)} "
          f"--model_base_path={base}")


if __name__ == "__main__":
    cli.run(main, "python -m train.export", __doc__, HELP_GROUPS)
