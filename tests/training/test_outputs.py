import json
import os

import keras
import numpy as np

from tpr_keras.training import save_run


def test_save_run_writes_results_model_and_vocabulary(tmp_path):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    written = []

    def save_vocabulary(path):
        written.append(path)
        with open(path, "w") as f:
            f.write("<pad>\n<unk>\n")

    run = tmp_path / "run"
    path = save_run(str(run), None, {"error": 0.5, "when": np.float32(1.5)}, model,
                    save_vocabulary)
    assert path == os.path.join(run, "export", "model.keras")
    assert json.loads((run / "results.json").read_text()) == {"error": 0.5, "when": "1.5"}
    assert written == [os.path.join(run, "export", "vocab.txt")]
    x = np.ones((1, 3), "float32")
    np.testing.assert_array_equal(keras.models.load_model(path)(x), model(x))
    other = tmp_path / "elsewhere"
    assert save_run(str(run), str(other), {}, model, save_vocabulary) == str(
        other / "model.keras")
