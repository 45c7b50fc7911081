"""Logical entailment (Tang, Smolensky & de Sa, 2018): models, sizes, preprocessor, task.

* :class:`PlainEntailmentModel`, :class:`BiDAFEntailmentModel` and their layers
  (:mod:`~tpr_keras.models.entailment.entailment_layers`, where
  ``make_recurrent_layer`` lives);
* the paper's sizes (:data:`PLAIN_PAPER_SIZES`, :data:`BIDAF_PAPER_SIZES`; their §5.1
  training recipe is :mod:`tpr_keras.training.recipes.entailment`'s);
* from :mod:`tpr_keras.export` (TensorFlow's; loaded on first use):
  :class:`EntailmentTokenizer`, the in-graph tokenizer, built from the same text
  specification as the data's Python ``tokenize`` (:mod:`tpr_keras.data.entailment`);
  :func:`export_entailment_classifier` (``EntailmentClassifier.export``): the
  string-pair SavedModel in TF Serving's layout; :func:`export_entailment_model`: the
  same for a bare model, through its task model;
* :class:`EntailmentClassifier`: the task model, formulas in and entailment
  probabilities out (``.from_preset("tpru32_entailment").predict(premises,
  hypotheses)``), with its NumPy :class:`EntailmentPreprocessor`.
"""

from tpr_keras.lazy import lazy_getattr
from tpr_keras.models.entailment.entailment_classifier import (  # noqa: F401
    EntailmentClassifier,
)
from tpr_keras.models.entailment.entailment_layers import (  # noqa: F401
    BatchToPair,
    BiDAFAttention,
    MaskedMaxPooling1D,
    PairFeatures,
    PairToBatch,
)
from tpr_keras.models.entailment.entailment_model import (  # noqa: F401
    BiDAFEntailmentModel,
    PlainEntailmentModel,
)
from tpr_keras.models.entailment.entailment_preprocessor import (  # noqa: F401
    EntailmentPreprocessor,
)
from tpr_keras.models.entailment.entailment_sizes import (  # noqa: F401
    BIDAF_PAPER_SIZES,
    PLAIN_PAPER_SIZES,
)

# The SavedModel export and in-graph tokenizers are TensorFlow's, in tpr_keras.export; the
# family keeps their names, loaded on first use (never imported here), so the models load
# on a machine with Keras and JAX alone.
_TENSORFLOW_EXPORTS = {
    "EntailmentServingModule": "tpr_keras.export.entailment",
    "export_entailment_classifier": "tpr_keras.export.entailment",
    "export_entailment_model": "tpr_keras.export.entailment",
    "save_entailment_servable": "tpr_keras.export.entailment",
    "EntailmentTokenizer": "tpr_keras.export.entailment_tokenizer",
}


__getattr__ = lazy_getattr(__name__, _TENSORFLOW_EXPORTS)
