"""MemN2N paper sizes: Sukhbaatar et al. (2015), §4.4.

The §4.2 training recipe of each size is :mod:`tpr_keras.training.recipes.memn2n`'s,
keyed by the same names.
"""

from tpr_keras.models.presets import PaperSize

# §4.4: "joint training used an embedding dimension of d=50, while independent
# training used d=20". Everything else is the §4.1/§4.2 default.
PAPER_SIZES = {
    "single_task": PaperSize({"embedding_dim": 20}, "§4.4, independent training: d = 20."),
    "all_tasks": PaperSize({"embedding_dim": 50}, "§4.4, joint training: d = 50."),
    # The authors' code as it ran: their coded PE, empty memory slots in the softmax, the
    # nil word's gradient counted by the per-matrix clipping.
    "joint_paper": PaperSize({"embedding_dim": 50, "sentence_encoding": "position_code",
                              "mask_empty_memories": False, "pad_gradient": True},
                             "§4.4 joint, d = 50, as the authors' MATLAB code builds it "
                             "(its position encoding; empty memory slots in the softmax; "
                             "the nil word's gradient in each table's clipping norm)."),
}
