"""``python -m tools.analysis.similarity`` end to end: Figure 4's similarity maps and the
cluster listing of a saved TPR-RNN on tiny bAbI files (the analysis itself is tested in
``tests/analysis/test_similarity.py``)."""

import struct

import keras
import numpy as np
import pytest

from tools.analysis import similarity as command
from tpr_keras.analysis import similarity as sim

pytest.importorskip("scipy")
pytest.importorskip("matplotlib")


def test_command_writes_a_png_per_representation_and_the_listing(tmp_path, babi_task1_writer):
    from tpr_keras.data import babi
    from tpr_keras.models import TPRRNN

    root = tmp_path / "data" / "en-10k"
    root.mkdir(parents=True)
    babi_task1_writer(root / "qa1_single-supporting-fact_train.txt", 30, 0)
    babi_task1_writer(root / "qa1_single-supporting-fact_test.txt", 5, 1)
    data = babi.load_babi(root.parent, tasks=(1,), download=False)
    model = TPRRNN.from_paper_size("single_task", len(data.vocab), data.max_words)
    export = tmp_path / "run" / "export"
    export.mkdir(parents=True)
    model.save(export / "model.keras")
    data.vocab.save(export / "vocab.txt")

    out = tmp_path / "figures"
    assert command.main(["--model_dir", str(tmp_path / "run"), "--task", "1", "--data_dir",
                         str(root.parent), "--out", str(out), "--clusters", "3"]) == 0
    for name in sim.REPRESENTATIONS:
        png = (out / f"{name}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = struct.unpack(">II", png[16:24])
        assert width > 300 and height > 300
    listing = (out / "clusters.txt").read_text()
    assert listing.count("purity by first word ") == len(sim.REPRESENTATIONS)
    sentences = {" ".join(data.vocab.decode(r)) for r in np.unique(data.valid.sentences, axis=0)}
    for name in sim.REPRESENTATIONS:
        section = listing.split(f"## {name} ")[1].split("\n## ")[0]
        listed = {line.strip() for line in section.splitlines() if line.startswith("  ")}
        assert listed == sentences  # every unique statement in exactly one cluster listing
    keras.backend.clear_session()
