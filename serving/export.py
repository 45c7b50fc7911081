"""``python -m serving.export``: export a saved ``.keras`` bAbI model for TF Serving.

``python -m serving.export --model model.keras --vocab vocab.txt --export_dir DIR`` writes
``DIR/<model_name>/<next version>/`` (TF Serving's layout: SavedModel, warm-up request,
``export_info.json``).

This is the export side of ``serving/``, the one module here that imports ``tpr_keras``'s
exporters and models (the server imports of it only the file names,
:mod:`tpr_keras.export.layout`). The exporter itself is the bAbI family's
(:func:`tpr_keras.export.babi.export_babi_model`) and TF Serving's layout is written by
:mod:`tpr_keras.export.versions`, so that ``train.babi`` exports without importing
``serving``; import the layout's helpers (``next_version``, ``read_export_info``, ...)
from there.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from tpr_keras.data.babi.truncation import DEFAULT_MAX_STORY_SENTENCES
from tpr_keras.export.babi import DEFAULT_TOP_K, export_babi_model

__all__ = ["export_babi_model", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m serving.export``: export a saved ``.keras`` model."""
    from serving.command_flags import Command

    parser = Command("python -m serving.export",
                     "Export a bAbI model.keras (written by train.babi) as a TF Serving "
                     "SavedModel: <export_dir>/<model_name>/<version>/.")
    parser.string("model", None, "model.keras written by train.babi", required=True)
    parser.string("vocab", None, "vocab.txt (default: next to --model)")
    parser.string("export_dir", None, "TF Serving base folder", required=True)
    parser.string("model_name", "babi")
    parser.integer("version", None, "default: next free number")
    parser.integer("max_story_sentences", DEFAULT_MAX_STORY_SENTENCES,
                   "keep the last N sentences (70; use 130 for task 3; 0 = all)")
    parser.integer("top_k", DEFAULT_TOP_K)
    args = parser.parse(argv)

    import keras

    import tpr_keras.models.all_families  # noqa: F401  (registers the classes for load_model)

    model = keras.models.load_model(args.model)
    vocab = args.vocab or os.path.join(os.path.dirname(os.path.abspath(args.model)), "vocab.txt")
    path = export_babi_model(model, vocab, args.export_dir, args.model_name,
                             version=args.version,
                             max_story_sentences=args.max_story_sentences or None,
                             top_k=args.top_k)
    print(f"Exported {args.model} to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
