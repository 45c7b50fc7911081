"""Logical entailment (Tang, Smolensky & de Sa, 2018): models, presets, preprocessor, exporter.

* :class:`PlainEntailmentModel`, :class:`BiDAFEntailmentModel` and their layers
  (:mod:`~tpr_keras.models.entailment.entailment_layers`, where
  ``make_recurrent_layer`` lives);
* presets with the §5.1 recipe (:data:`PLAIN_PRESETS`, :data:`BIDAF_PRESETS`) and
  :func:`resolve_recipe` (§5.1 as published, or under a CPU time budget);
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
from tpr_keras.models.entailment.entailment_presets import (  # noqa: F401
    BIDAF_PRESETS,
    PLAIN_PRESETS,
    resolve_recipe,
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
