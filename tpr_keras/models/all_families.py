"""Every model family, imported: importing this module registers all model classes (and
their layers) for ``keras.saving.load_model``.

:mod:`tpr_keras.models` loads its families on first use; code that loads a ``.keras``
file of any family imports this module first.

Example:
>>> import tpr_keras.models.all_families  # noqa: F401
>>> import keras
>>> keras.saving.get_registered_object("tpr_keras>TPRRNN").__name__
'TPRRNN'
"""

from tpr_keras.models import babi, entailment, memn2n, tp_transformer, tpr_rnn  # noqa: F401

FAMILIES = (tpr_rnn, memn2n, babi, entailment, tp_transformer)
