"""The loop's console lines and history file on their own."""

from tpr_keras.training.console import epoch_line, progress_line, read_history, write_history


def test_epoch_line_with_and_without_validation():
    record = {"epoch": 3, "train_loss": 0.12345, "train_accuracy": 0.5, "seconds": 2.04,
              "examples_per_second": 812.6}
    assert epoch_line(record, 10) == "epoch 3/10: loss 0.1235 acc 0.5000 | 2.0s (813 ex/s)"
    record.update(valid_loss=0.2, valid_error_percent=12.5)
    assert epoch_line(record, 10, seconds_left=3700) == (
        "epoch 3/10: loss 0.1235 acc 0.5000 | valid loss 0.2000 error 12.50% | 2.0s "
        "(813 ex/s) | at most 1h01m left")


def test_progress_line_says_when_the_epoch_ends_only_with_a_target():
    assert progress_line(2, 5, 40, None, 0.5, 0.75, 999.6) == (
        "  epoch 2/5 step 40: loss 0.5000 acc 0.7500 | 1000 ex/s")
    assert progress_line(2, 5, 40, 100, 0.5, 0.75, 999.6, steps_per_second=2.0) == (
        "  epoch 2/5 step 40/100: loss 0.5000 acc 0.7500 | 1000 ex/s | epoch ends in 30s")


def test_history_round_trip_drops_epochs_after_the_checkpoint(tmp_path):
    path = str(tmp_path / "history.json")
    assert read_history(path, 5) == []
    write_history(path, [{"epoch": 1}, {"epoch": 2}, {"epoch": 3}])
    assert read_history(path, 2) == [{"epoch": 1}, {"epoch": 2}]
    assert not (tmp_path / "history.json.tmp").exists()
