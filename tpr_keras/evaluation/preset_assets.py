"""What a trained preset's model reads besides its weights: its task (from the model
class), its vocabulary and a routed math model's module templates, loaded from the preset's
assets."""

from tpr_keras.data.babi import Vocabulary
from tpr_keras.data.mathematics import CharVocabulary
from tpr_keras.data.mathematics.templates import ModuleTemplates, templates_asset

#: The model classes of each task, as a preset's config.json names them.
TASK_OF_CLASS = {"TPRRNN": "babi", "MemN2N": "babi", "PlainEntailmentModel": "entailment",
                 "BiDAFEntailmentModel": "entailment", "TPTransformer": "math",
                 "RoutedTPTransformer": "math"}


def preset_vocabulary(preset):
    """The vocabulary object a preset's model reads (bAbI words, math characters), or
    None for entailment (a fixed character set)."""
    task = preset.metadata["task"]
    if task == "babi":
        return Vocabulary.load(preset.asset_path("vocab.txt"))
    if task == "math":
        return CharVocabulary.load(preset.asset_path("vocab.txt"))
    return None


def preset_templates(preset):
    """A math preset's ``ModuleTemplates`` (``assets/modules.json.gz``, or
    ``assets/modules.json`` in a preset written before it), or None: a preset of another task
    or without them."""
    name = templates_asset(preset.metadata.get("assets", []))
    return None if name is None else ModuleTemplates.load(preset.asset_path(name))
