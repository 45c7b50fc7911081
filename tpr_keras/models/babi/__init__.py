"""bAbI text in and out of the two bAbI model families (TPR-RNN and MemN2N).

Both families read the same ``{"story": int32[B, S, W], "question": int32[B, W]}``
ids, so they share one preprocessor and one exporter:

* :func:`babi_inputs`: the models' symbolic story and question inputs;
* :class:`BabiTokenizer`: the in-graph tokenizer, built from the same
  specification (:mod:`tpr_keras.data.babi.text`) as the data loader's Python
  tokenizer and tested to give the same ids;
* :class:`BabiServingModule` / :func:`save_babi_servable`: a trained model and
  its vocabulary as a SavedModel with ``serving_default`` and ``tokenize``
  signatures; :func:`export_babi_model` publishes it in TF Serving's layout.
"""

from tpr_keras.models.babi.babi_exporter import (  # noqa: F401
    DEFAULT_TOP_K,
    SIGNATURE_KEY,
    TOKENIZE_SIGNATURE_KEY,
    BabiServingModule,
    export_babi_model,
    save_babi_servable,
)
from tpr_keras.models.babi.babi_inputs import babi_inputs  # noqa: F401
from tpr_keras.models.babi.babi_tokenizer import BabiTokenizer, join_story  # noqa: F401
