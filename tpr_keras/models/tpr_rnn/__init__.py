"""TPR-RNN (Schlag & Schmidhuber, 2018): the model and its paper sizes.

bAbI text goes in through :mod:`tpr_keras.models.babi` (the preprocessor that TPR-RNN
and MemN2N share, as they share the exporter :mod:`tpr_keras.export.babi`: both read the
same story/question ids).
"""

from tpr_keras.models.tpr_rnn.tpr_rnn_model import TPRRNN  # noqa: F401
from tpr_keras.models.tpr_rnn.tpr_rnn_sizes import PAPER_SIZES  # noqa: F401
