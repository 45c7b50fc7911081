"""Logical entailment (Tang, Smolensky & de Sa, 2018): models, sizes, preprocessor, exporter.

* :class:`PlainEntailmentModel`, :class:`BiDAFEntailmentModel` and their layers
  (:mod:`~tpr_keras.models.entailment.entailment_layers`, where
  ``make_recurrent_layer`` lives);
* the paper's sizes (:data:`PLAIN_PAPER_SIZES`, :data:`BIDAF_PAPER_SIZES`; their §5.1
  training recipe is :mod:`tpr_keras.training.recipes.entailment`'s);
* :class:`EntailmentTokenizer`: the in-graph tokenizer, built from the same text
  specification as the data's Python ``tokenize`` (:mod:`tpr_keras.data.entailment`);
* :func:`export_entailment_classifier` (``EntailmentClassifier.export``): the
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

# TensorFlow's part (SavedModel export, in-graph tokenizers) is imported on first use,
# so the models load on a machine with Keras and JAX alone.
_TENSORFLOW_EXPORTS = {
    "EntailmentServingModule": "entailment_exporter",
    "export_entailment_classifier": "entailment_exporter",
    "export_entailment_model": "entailment_exporter",
    "save_entailment_servable": "entailment_exporter",
    "EntailmentTokenizer": "entailment_tokenizer",
}


__getattr__ = lazy_getattr(__name__, _TENSORFLOW_EXPORTS)
