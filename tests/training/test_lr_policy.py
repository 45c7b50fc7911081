"""The learning-rate policy on its own: warm-up, one-time halving, step decay, phase factor."""

import pytest

from tpr_keras.training import LearningRatePolicy, TrainConfig


def test_warmup_scales_the_rate_until_its_steps_are_done():
    policy = LearningRatePolicy(0.008, warmup_steps=50, warmup_factor=0.1)
    assert policy.rate(warmup_done=False, epoch_factor=1.0) == pytest.approx(0.0008)
    assert policy.rate(warmup_done=True, epoch_factor=1.0) == pytest.approx(0.008)
    assert not policy.warmup_done(49) and policy.warmup_done(50)
    assert LearningRatePolicy(0.1, warmup_steps=0).warmup_done(0)


def test_halving_happens_once_below_the_threshold():
    policy = LearningRatePolicy(0.008, halve_lr_below=0.1)
    assert not policy.halves_now(0.1, lr_halved=False)  # strictly below
    assert policy.halves_now(0.09, lr_halved=False)
    assert not policy.halves_now(0.01, lr_halved=True)  # already halved
    assert not LearningRatePolicy(0.008).halves_now(0.0, lr_halved=False)  # disabled
    assert policy.epoch_factor(epoch=3, lr_halved=True) == 0.5


def test_step_decay_and_phase_factor_multiply():
    # MemN2N §4.2: halved every 25 epochs; linear start trains at half the rate.
    policy = LearningRatePolicy(0.32, decay_every_epochs=25, decay_factor=0.5)
    assert [policy.epoch_factor(e, False) for e in (0, 24, 25, 50, 74)] == [
        1.0, 1.0, 0.5, 0.25, 0.25]
    assert policy.epoch_factor(25, lr_halved=True, phase_factor=0.5) == 0.125
    assert policy.rate(True, policy.epoch_factor(50, False)) == pytest.approx(0.08)


def test_from_config_takes_the_trainers_fields():
    config = TrainConfig(learning_rate=0.001, warmup_steps=7, warmup_factor=0.2,
                         halve_lr_below=None, decay_every_epochs=30, decay_factor=0.1)
    assert LearningRatePolicy.from_config(config) == LearningRatePolicy(
        0.001, 7, 0.2, None, 30, 0.1)


def test_cooldown_falls_linearly_to_zero_over_the_last_steps():
    policy = LearningRatePolicy(0.001, cooldown_steps=4, max_steps=10)
    assert [policy.step_factor(step) for step in (0, 5, 6, 7, 8, 9, 10)] == [
        1.0, 1.0, 1.0, 0.75, 0.5, 0.25, 0.0]
    assert policy.rate(True, 1.0, global_step=8) == pytest.approx(0.0005)
    assert LearningRatePolicy(0.001).step_factor(10**6) == 1.0  # off by default
    with pytest.raises(ValueError, match="max_steps"):
        LearningRatePolicy(0.001, cooldown_steps=4)
