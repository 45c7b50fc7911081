"""TP-Transformer sizes: Schlag et al. (2019), §4.1, and smaller ones for CPUs.

* ``tp_transformer``: the Transformer's sizes (d_z 512, d_f 2048, H 8, L 6), §4.1;
  ``tp_transformer_b`` shrinks to multiples of 60 (d_z 480, d_f 1920);
  ``tp_transformer_c`` keeps d_z 512 with d_f 512; ``transformer`` is the authors'
  baseline (standard attention, additive embedding).
* ``tiny`` / ``small`` (and their ``*_transformer`` baselines) are CPU sizes (not from
  the paper) for tests and quick runs on single modules such as
  ``numbers__place_value``.

The training recipe of each size (§4.1's for the paper's, a CPU one for the others) is
:mod:`tpr_keras.training.recipes.tp_transformer`'s, keyed by the same names.
"""

from tpr_keras.models.presets import PaperSize


def _sizes(model_dim, feed_forward_dim, num_heads, num_layers, use_role):
    return dict(model_dim=model_dim, num_heads=num_heads, num_encoder_layers=num_layers,
                num_decoder_layers=num_layers, feed_forward_dim=feed_forward_dim,
                use_role=use_role, multiplicative_embedding=use_role)


_PAPER = "Schlag et al. (2019) §4.1"
#: ``{name: PaperSize}``; :class:`TPTransformer.paper_sizes <TPTransformer>`.
PAPER_SIZES = {
    "tp_transformer": PaperSize(_sizes(512, 2048, 8, 6, True),
                                f"{_PAPER}: TP-Transformer, d_z 512, d_f 2048, H 8, L 6."),
    "tp_transformer_b": PaperSize(_sizes(480, 1920, 8, 6, True),
                                  f"{_PAPER}: TP-Transformer B, d_z 480, d_f 1920."),
    "tp_transformer_c": PaperSize(_sizes(512, 512, 8, 6, True),
                                  f"{_PAPER}: TP-Transformer C, d_z 512, d_f 512."),
    "transformer": PaperSize(_sizes(512, 2048, 8, 6, False),
                             f"{_PAPER}: the Transformer baseline, d_z 512, d_f 2048."),
    "small": PaperSize(_sizes(128, 512, 4, 3, True),
                       "CPU size: TP-Transformer, d_z 128, d_f 512, H 4, L 3."),
    "tiny": PaperSize(_sizes(64, 256, 4, 2, True),
                      "CPU size: TP-Transformer, d_z 64, d_f 256, H 4, L 2."),
    "small_transformer": PaperSize(_sizes(128, 512, 4, 3, False),
                                   "CPU size: Transformer baseline, d_z 128, d_f 512."),
    "tiny_transformer": PaperSize(_sizes(64, 256, 4, 2, False),
                                  "CPU size: Transformer baseline, d_z 64, d_f 256."),
}
