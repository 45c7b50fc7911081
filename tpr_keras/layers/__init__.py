"""The shared TPR blocks of tpr-keras (importing this module registers them for load_model).

A family's own layers live in its package (MemN2N's in :mod:`tpr_keras.models.memn2n`, the
TP-Transformer's embedding, feed-forward, encoder and decoder layers in
:mod:`tpr_keras.models.tp_transformer`); their names are still importable from here,
loaded on first use so that the shared blocks do not import a model family.
"""

from tpr_keras.lazy import lazy_getattr
from tpr_keras.layers.layer_norm import LayerNorm  # noqa: F401
from tpr_keras.layers.mlp import TanhMLP  # noqa: F401
from tpr_keras.layers.scalar_layer_norm import ScalarLayerNorm  # noqa: F401
from tpr_keras.layers.sentence_encoder import SentenceEncoder  # noqa: F401
from tpr_keras.layers.tp_attention import TPMultiHeadAttention  # noqa: F401
from tpr_keras.layers.tpr_inference import TPRInference  # noqa: F401
from tpr_keras.layers.tpr_update import TPRUpdate  # noqa: F401
from tpr_keras.layers.tpru_cell import TPRUCell  # noqa: F401
from tpr_keras.layers.tpru import TPRU  # noqa: F401

__getattr__ = lazy_getattr(
    __name__,
    {
        "MemN2NEmbedding": "tpr_keras.models.memn2n",
        "MemN2NHop": "tpr_keras.models.memn2n",
        "MemN2NNetwork": "tpr_keras.models.memn2n",
        "PositionwiseFeedForward": "tpr_keras.models.tp_transformer.tp_transformer_layers",
        "TPTransformerDecoderLayer": "tpr_keras.models.tp_transformer.tp_transformer_layers",
        "TPTransformerEncoderLayer": "tpr_keras.models.tp_transformer.tp_transformer_layers",
        "TPTransformerEmbedding": "tpr_keras.models.tp_transformer.tp_transformer_embedding",
    },
)
