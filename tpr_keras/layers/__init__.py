"""Keras layers of tpr-keras (importing this module registers them for load_model)."""

from tpr_keras.layers.memn2n import MemN2NEmbedding, MemN2NHop, MemN2NNetwork  # noqa: F401
from tpr_keras.layers.mlp import TanhMLP  # noqa: F401
from tpr_keras.layers.scalar_layer_norm import ScalarLayerNorm  # noqa: F401
from tpr_keras.layers.sentence_encoder import SentenceEncoder  # noqa: F401
from tpr_keras.layers.tp_attention import TPMultiHeadAttention  # noqa: F401
from tpr_keras.layers.tp_transformer_layers import (  # noqa: F401
    PositionwiseFeedForward,
    TPTransformerDecoderLayer,
    TPTransformerEmbedding,
    TPTransformerEncoderLayer,
)
from tpr_keras.layers.tpr_inference import TPRInference  # noqa: F401
from tpr_keras.layers.tpr_update import TPRUpdate  # noqa: F401
from tpr_keras.layers.tpru_cell import TPRUCell  # noqa: F401
from tpr_keras.layers.tpru import TPRU  # noqa: F401
