"""Keras layers of tpr-keras."""

from tpr_keras.layers.mlp import TanhMLP  # noqa: F401
from tpr_keras.layers.scalar_layer_norm import ScalarLayerNorm  # noqa: F401
from tpr_keras.layers.sentence_encoder import SentenceEncoder  # noqa: F401
from tpr_keras.layers.tpr_inference import TPRInference  # noqa: F401
from tpr_keras.layers.tpr_update import TPRUpdate  # noqa: F401
from tpr_keras.layers.tpru_cell import TPRUCell  # noqa: F401
