"""``python -m tools.analysis.roles`` end to end: Figures 2 and 3 and the cluster listing of a
saved TP-Transformer on a tiny data folder (the analysis itself is tested in
``tests/analysis/test_roles.py``)."""

import numpy as np
import pytest

from tools.analysis import roles as command


def test_command_end_to_end(tmp_path):
    pytest.importorskip("matplotlib")
    import keras

    from tpr_keras.data.mathematics import CharVocabulary
    from tpr_keras.models import TPTransformer

    vocab = CharVocabulary.build("What is the units digit of 0123456789?")
    keras.utils.set_random_seed(0)
    model = TPTransformer(vocabulary_size=len(vocab), model_dim=16, num_heads=2,
                          num_encoder_layers=2, num_decoder_layers=1, feed_forward_dim=32)
    export = tmp_path / "run" / "export"
    export.mkdir(parents=True)
    model.save(str(export / "model.keras"))
    vocab.save(str(export / "vocab.txt"))
    data = tmp_path / "data" / "interpolate"
    data.mkdir(parents=True)
    rng = np.random.default_rng(1)
    numbers = rng.integers(10, 100000, size=12)
    (data / "numbers__place_value.txt").write_text(
        "".join(f"What is the units digit of {n}?\n{n % 10}\n" for n in numbers))
    out = tmp_path / "out"
    assert command.main(["--model_dir", str(tmp_path / "run"), "--data_dir",
                         str(tmp_path / "data"), "--out", str(out), "--samples", "10",
                         "--clusters", "5", "--figure_rows", "4", "--attention_maps", "2"]) == 0
    assert (out / "roles.png").stat().st_size > 2000
    assert (out / "attention.png").stat().st_size > 2000
    text = (out / "roles.txt").read_text()
    assert "10 interpolate problems" in text and "encoder layer 1, head 0" in text
    problems = text.split("## problems (symbol:cluster), answer\n")[1].strip().split("\n")
    assert len(problems) == 10 and all(line.startswith("#:") for line in problems)
