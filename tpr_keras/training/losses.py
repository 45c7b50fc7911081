"""The trainers' per-example losses under their older path: :mod:`tpr_keras.losses`.

The losses stand below the models (a model family names its loss), so they live in
:mod:`tpr_keras.losses`; ``from tpr_keras.training.losses import ...`` keeps working.
"""

from tpr_keras.losses import (  # noqa: F401
    SEQUENCE_REDUCTIONS,
    binary_classification,
    sequence_cross_entropy,
    sparse_classification,
)
