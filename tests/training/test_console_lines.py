"""The loop's console lines and history file on their own."""

from tpr_keras.training.console import (epoch_line, progress_line, read_history,
                                        seconds_left_at_pace, write_history)


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


def test_time_left_is_paced_per_step_so_a_resumed_partial_epoch_counts_as_a_part():
    # A call resumed 5,000 steps into an epoch of 7,000: its first epoch ran 2,000 steps
    # in 250 s, so the 11 epochs left take 11 * 7,000 * 0.125 s, not 11 * 250 s.
    assert seconds_left_at_pace([(250.0, 2000)], 7000, epochs_left=11) == 9625.0
    # max_steps nearer than the epochs: the steps left at the same pace
    assert seconds_left_at_pace([(250.0, 2000)], 7000, 11, steps_left=800) == 100.0
    # once an epoch after the (tracing) first has run, only those count
    assert seconds_left_at_pace([(900.0, 7000), (700.0, 7000)], 7000, 2) == 1400.0
    # without a known epoch length the pace is per epoch, as before
    assert seconds_left_at_pace([(30.0, 5), (20.0, 5)], None, 3) == 60.0
    assert seconds_left_at_pace([], 7000, 3) is None
