"""bAbI text in and out of the two bAbI model families (TPR-RNN and MemN2N).

Both families read the same ``{"story": int32[B, S, W], "question": int32[B, W]}``
ids, so they share one preprocessor and one exporter:

* :func:`babi_inputs`: the models' symbolic story and question inputs;
* :class:`BabiAnswerer`: the task model, strings in and answers out
  (``BabiAnswerer.from_preset("tpr_rnn_babi_all_tasks").predict(stories, questions)``),
  with its NumPy :class:`BabiPreprocessor`;
* :class:`BabiTokenizer`: the in-graph tokenizer, built from the same
  specification (:mod:`tpr_keras.data.babi.text`) as the data loader's Python
  tokenizer and tested to give the same ids;
* :class:`BabiServingModule` / :func:`save_babi_servable`: a :class:`BabiAnswerer`
  as a SavedModel with ``serving_default``, ``classify`` and ``tokenize``
  signatures; :func:`export_babi_answerer` (``BabiAnswerer.export``) publishes it in
  TF Serving's layout, :func:`export_babi_model` a bare model and its vocabulary
  through the task model it builds of them.
"""

from tpr_keras.lazy import lazy_getattr
from tpr_keras.models.babi.babi_answerer import DEFAULT_TOP_K, BabiAnswerer  # noqa: F401
from tpr_keras.models.babi.babi_inputs import babi_inputs  # noqa: F401
from tpr_keras.models.babi.babi_preprocessor import BabiPreprocessor  # noqa: F401

# TensorFlow's part (SavedModel export, in-graph tokenizers) is imported on first use,
# so the models load on a machine with Keras and JAX alone.
_TENSORFLOW_EXPORTS = {
    "SIGNATURE_KEY": "babi_exporter",
    "TOKENIZE_SIGNATURE_KEY": "babi_exporter",
    "BabiServingModule": "babi_exporter",
    "export_babi_answerer": "babi_exporter",
    "export_babi_model": "babi_exporter",
    "save_babi_servable": "babi_exporter",
    "BabiTokenizer": "babi_tokenizer",
    "join_story": "babi_tokenizer",
}


__getattr__ = lazy_getattr(__name__, _TENSORFLOW_EXPORTS)
