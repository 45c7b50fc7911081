"""Early stopping on its own: the improvement rule and the stop conditions."""

from tpr_keras.training import EarlyStopping, TrainConfig
from tpr_keras.training.early_stopping import stop_reason
from tpr_keras.training.stop_reasons import STOP_REASONS


def test_improvement_is_a_lower_error_or_an_equal_one_with_a_clearly_lower_loss():
    stopping = EarlyStopping(min_delta_loss=1e-3)
    assert stopping.improves(1.0, 9.0, best_error=2.0, best_loss=0.1)
    assert stopping.improves(1.0, 0.0980, best_error=1.0, best_loss=0.1)
    assert not stopping.improves(1.0, 0.0995, best_error=1.0, best_loss=0.1)
    assert not stopping.improves(2.0, 0.01, best_error=1.0, best_loss=0.1)
    # with no margin any decrease counts, and the first validation always improves
    assert EarlyStopping(min_delta_loss=0.0).improves(1.0, 0.0999, 1.0, 0.1)
    assert stopping.improves(50.0, 3.0, best_error=float("inf"), best_loss=float("inf"))


def test_patience_patience_at_zero_and_target_error():
    stopping = EarlyStopping(patience=3, patience_at_zero=1, target_error=None)
    assert stopping.reason(best_error=5.0, bad_validations=2) is None
    assert stopping.reason(best_error=5.0, bad_validations=3) == "early_stopping"
    assert stopping.reason(best_error=0.0, bad_validations=1) == "early_stopping"
    assert EarlyStopping(patience=None).reason(5.0, 1000) is None
    assert EarlyStopping(target_error=1.0).reason(1.0, 0) == "target_error"


def test_limits_come_before_early_stopping():
    config = TrainConfig(epochs=5, max_steps=50, patience=3)
    assert stop_reason(config, 50, 5, 5.0, 3) == "steps"
    assert stop_reason(config, 10, 5, 5.0, 3) == "epochs"
    assert stop_reason(config, 10, 4, 5.0, 3) == "early_stopping"
    assert set(STOP_REASONS) == {"epochs", "steps", "target_error", "early_stopping",
                                 "time_budget", "callback"}


def test_every_stop_reason_has_a_table_label():
    """The results tables label each stop reason from one place: every key is a reason the
    loop writes and none is missing, so a table never prints a raw key."""
    from tpr_keras.training.stop_reasons import STOP_LABELS

    assert set(STOP_LABELS) == set(STOP_REASONS)
    assert all(label and label != key for key, label in STOP_LABELS.items())
