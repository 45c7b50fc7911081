"""bAbI text in and out of the two bAbI model families (TPR-RNN and MemN2N).

Both families read the same ``{"story": int32[B, S, W], "question": int32[B, W]}``
ids, so they share one preprocessor and one exporter:

* :func:`babi_inputs`: the models' symbolic story and question inputs;
* :class:`BabiAnswerer`: the task model, strings in and answers out
  (``BabiAnswerer.from_preset("tpr_rnn_babi_all_tasks").predict(stories, questions)``),
  with its NumPy :class:`BabiPreprocessor`;
* from :mod:`tpr_keras.export` (TensorFlow's; loaded on first use):
  :class:`BabiTokenizer`, the in-graph tokenizer, built from the same specification
  (:mod:`tpr_keras.data.babi.text`) as the data loader's Python tokenizer and tested to
  give the same ids; :class:`BabiServingModule` / :func:`save_babi_servable`: a
  :class:`BabiAnswerer` as a SavedModel with ``serving_default``, ``classify`` and
  ``tokenize`` signatures; :func:`export_babi_answerer` (``BabiAnswerer.export``)
  publishes it in TF Serving's layout, :func:`export_babi_model` a bare model and its
  vocabulary through the task model it builds of them.
"""

from tpr_keras.lazy import lazy_getattr
from tpr_keras.models.babi.babi_answerer import DEFAULT_TOP_K, BabiAnswerer  # noqa: F401
from tpr_keras.models.babi.babi_inputs import babi_inputs  # noqa: F401
from tpr_keras.models.babi.babi_preprocessor import BabiPreprocessor  # noqa: F401

# The SavedModel export and in-graph tokenizers are TensorFlow's, in tpr_keras.export; the
# family keeps their names, loaded on first use (never imported here), so the models load
# on a machine with Keras and JAX alone.
_TENSORFLOW_EXPORTS = {
    "SIGNATURE_KEY": "tpr_keras.export.versions",
    "TOKENIZE_SIGNATURE_KEY": "tpr_keras.export.babi",
    "BabiServingModule": "tpr_keras.export.babi",
    "export_babi_answerer": "tpr_keras.export.babi",
    "export_babi_model": "tpr_keras.export.babi",
    "save_babi_servable": "tpr_keras.export.babi",
    "BabiTokenizer": "tpr_keras.export.babi_tokenizer",
    "join_story": "tpr_keras.export.babi_tokenizer",
}


__getattr__ = lazy_getattr(__name__, _TENSORFLOW_EXPORTS)
