"""TPR algebra as pure tensor functions."""

from tpr_keras.ops.tpr import (  # noqa: F401
    backlink,
    bind,
    bind3,
    inner_product,
    move,
    unbind,
    unbind3,
    unbind_entity,
    write,
)
