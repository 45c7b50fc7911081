"""MemN2N (Sukhbaatar et al., 2015): the model, its layers and its paper sizes.

The layers: :mod:`~tpr_keras.models.memn2n.memn2n_embedding` (position encodings and
one embedding table, §4.1), :mod:`~tpr_keras.models.memn2n.memn2n_hop` (one hop,
eq. 1, 2, 4) and :mod:`~tpr_keras.models.memn2n.memn2n_network` (K hops, eq. 3,
weight tying). bAbI text goes in through :mod:`tpr_keras.models.babi` (the
preprocessor that TPR-RNN and MemN2N share, as they share the exporter
:mod:`tpr_keras.export.babi`: both read the same story/question ids).
"""

from tpr_keras.models.memn2n.memn2n_embedding import MemN2NEmbedding  # noqa: F401
from tpr_keras.models.memn2n.memn2n_hop import MemN2NHop  # noqa: F401
from tpr_keras.models.memn2n.memn2n_model import MemN2N  # noqa: F401
from tpr_keras.models.memn2n.memn2n_network import MemN2NNetwork  # noqa: F401
from tpr_keras.models.memn2n.memn2n_sizes import PAPER_SIZES  # noqa: F401
