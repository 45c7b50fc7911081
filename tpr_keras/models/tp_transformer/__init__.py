"""TP-Transformer (Schlag et al., 2019) for the Mathematics Dataset: model, sizes,
preprocessor, task model.

* :class:`TPTransformer`, its layers (:mod:`.tp_transformer_embedding`,
  :mod:`.tp_transformer_layers`) and its decoding (:mod:`.decoding`: greedy with a key/value
  cache, beam search); :func:`sequence_compute_fn`, the teacher-forcing loss for the
  Trainer (:func:`tpr_keras.losses.sequence_cross_entropy`, which stands below the models);
* §4.1's sizes and CPU sizes (:data:`PAPER_SIZES`; their training recipes are
  :mod:`tpr_keras.training.recipes.tp_transformer`'s);
* from :mod:`tpr_keras.export` (TensorFlow's; loaded on first use):
  :class:`MathTokenizer`, the in-graph tokenizer, built from the same specification as
  the data's Python one (``CharVocabulary.encode_question``); :func:`export_math_answerer`
  (``MathAnswerer.export``): the string-in/string-out SavedModel in TF Serving's layout;
  :func:`export_math_model`: the same for a bare model and its vocabulary, through their
  task model;
* :class:`RoutedTPTransformer`: several trained TP-Transformers behind one model, each
  question answered by the decoder of its module (one preset from several:
  ``python -m train.route_presets``), and :class:`VocabularyMappedDecoder`, an expert
  trained on fewer symbols reading and writing the routed model's ids;
* :class:`MathAnswerer`: the task model, questions in and greedy answers out
  (``.from_preset("tp_transformer_math_focus").generate(questions)``), with its NumPy
  :class:`MathPreprocessor`.
"""

from tpr_keras.lazy import lazy_getattr
from tpr_keras.losses import sequence_cross_entropy as sequence_compute_fn  # noqa: F401
from tpr_keras.models.tp_transformer.tp_transformer_answerer import MathAnswerer  # noqa: F401
from tpr_keras.models.tp_transformer.decoding import MASK_VALUE  # noqa: F401
from tpr_keras.models.tp_transformer.tp_transformer_embedding import (  # noqa: F401
    TPTransformerEmbedding,
)
from tpr_keras.models.tp_transformer.tp_transformer_layers import (  # noqa: F401
    PositionwiseFeedForward,
    TPTransformerDecoderLayer,
    TPTransformerEncoderLayer,
)
from tpr_keras.models.tp_transformer.tp_transformer_model import (  # noqa: F401
    END_ID,
    PAD_ID,
    START_ID,
    UNK_ID,
    TPTransformer,
)
from tpr_keras.models.tp_transformer.tp_transformer_sizes import PAPER_SIZES  # noqa: F401
from tpr_keras.models.tp_transformer.routed_tp_transformer import (  # noqa: F401
    RoutedTPTransformer,
)
from tpr_keras.models.tp_transformer.vocabulary_mapped_decoder import (  # noqa: F401
    VocabularyMappedDecoder,
)

from tpr_keras.models.tp_transformer.tp_transformer_preprocessor import (  # noqa: F401
    MathPreprocessor,
)

# The SavedModel export and in-graph tokenizers are TensorFlow's, in tpr_keras.export; the
# family keeps their names, loaded on first use (never imported here), so the models load
# on a machine with Keras and JAX alone.
_TENSORFLOW_EXPORTS = {
    "BEAM_SIGNATURE_KEY": "tpr_keras.export.tp_transformer",
    "MathServingModule": "tpr_keras.export.tp_transformer",
    "export_math_answerer": "tpr_keras.export.tp_transformer",
    "export_math_model": "tpr_keras.export.tp_transformer",
    "save_math_servable": "tpr_keras.export.tp_transformer",
    "MathTokenizer": "tpr_keras.export.tp_transformer_tokenizer",
}


__getattr__ = lazy_getattr(__name__, _TENSORFLOW_EXPORTS)
