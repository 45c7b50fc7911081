"""SavedModel export for TF Serving: the TensorFlow-only side of tpr-keras.

The models (:mod:`tpr_keras.models`) are backend-neutral Keras; this package turns a
trained task model into a string-in/string-out SavedModel in TF Serving's layout, with
the text handling done by in-graph tokenizers (``tf.Module`` s, no ``tf.py_function``, so
stock ``tensorflow_model_server`` loads the export). One module per concept:

* :mod:`~tpr_keras.export.layout`: the layout's file names (``assets.extra``, the warm-up
  file, ``export_info.json``), the one definition that the server reads too; it imports
  no TensorFlow;
* :mod:`~tpr_keras.export.versions`: one version folder, published atomically, with its
  warm-up request and ``export_info.json``;
* the families' exporters, :mod:`~tpr_keras.export.babi` (TPR-RNN and MemN2N),
  :mod:`~tpr_keras.export.tp_transformer` and :mod:`~tpr_keras.export.entailment`, what
  ``TaskModel.export`` calls;
* their in-graph tokenizers, :mod:`~tpr_keras.export.babi_tokenizer`,
  :mod:`~tpr_keras.export.tp_transformer_tokenizer`,
  :mod:`~tpr_keras.export.entailment_tokenizer`, and the in-graph twins of the task
  models' reports, :mod:`~tpr_keras.export.unknown_tokens` and
  :mod:`~tpr_keras.export.entailment_grammar`; each is tested to give the ids and reports
  of the NumPy preprocessor it mirrors.

The names below are loaded on first use (PEP 562), so importing this package (or
:mod:`~tpr_keras.export.layout`) imports no TensorFlow.

Example:
>>> from tpr_keras.export import export_babi_model  # doctest: +SKIP
>>> export_babi_model(model, vocab, "/tmp/exports", "babi")  # doctest: +SKIP
"""

from tpr_keras.lazy import lazy_getattr

_EXPORTS = {
    # TF Serving's layout.
    "SIGNATURE_KEY": "versions",
    "CLASSIFY_SIGNATURE_KEY": "versions",
    "export_version": "versions",
    "publish_version": "versions",
    "next_version": "versions",
    "read_export_info": "versions",
    "write_warmup_requests": "versions",
    # bAbI: TPR-RNN and MemN2N.
    "TOKENIZE_SIGNATURE_KEY": "babi",
    "BabiServingModule": "babi",
    "export_babi_answerer": "babi",
    "export_babi_model": "babi",
    "save_babi_servable": "babi",
    "BabiTokenizer": "babi_tokenizer",
    "join_story": "babi_tokenizer",
    # Entailment.
    "EntailmentServingModule": "entailment",
    "export_entailment_classifier": "entailment",
    "export_entailment_model": "entailment",
    "save_entailment_servable": "entailment",
    "EntailmentTokenizer": "entailment_tokenizer",
    # Mathematics: the TP-Transformer.
    "BEAM_SIGNATURE_KEY": "tp_transformer",
    "MathServingModule": "tp_transformer",
    "export_math_answerer": "tp_transformer",
    "export_math_model": "tp_transformer",
    "save_math_servable": "tp_transformer",
    "MathTokenizer": "tp_transformer_tokenizer",
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
