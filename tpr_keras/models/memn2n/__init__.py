"""MemN2N (Sukhbaatar et al., 2015): the model and its presets (sizes and recipe).

bAbI text goes in through :mod:`tpr_keras.models.babi` (the preprocessor and the
exporter that TPR-RNN and MemN2N share: both read the same story/question ids).
"""

from tpr_keras.models.memn2n.memn2n_model import MemN2N  # noqa: F401
from tpr_keras.models.memn2n.memn2n_presets import PRESETS  # noqa: F401
