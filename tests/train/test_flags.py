"""The shared train flags' defaults that depend on the machine."""

import os

import pytest

from train import flags as train_flags
from train.backend import enable_jax_cache, jax_cache_dir, xla_default


def test_xla_is_on_by_default_on_a_gpu_and_as_given_otherwise():
    gpu = ["PhysicalDevice(name='/physical_device:GPU:0', device_type='GPU')"]
    assert xla_default(False, given=False, gpus=gpu) is True
    assert xla_default(False, given=False, gpus=[]) is False
    assert xla_default(False, given=True, gpus=gpu) is False  # --nojit_compile wins
    assert xla_default(True, given=False, gpus=[]) is True  # a recipe's choice stays


def test_verbose_auto_is_a_bar_only_on_a_terminal():
    class Stream:
        def __init__(self, tty):
            self.tty = tty

        def isatty(self):
            return self.tty

    assert train_flags.verbose_level("auto", Stream(True)) == 1
    assert train_flags.verbose_level("auto", Stream(False)) == 2
    assert train_flags.verbose_level("0", Stream(True)) == 0
    assert train_flags.verbose_level("2", Stream(True)) == 2


def test_the_jax_cache_is_the_flag_else_the_environment_else_the_users_cache():
    home = os.path.expanduser("~")
    assert jax_cache_dir(None, environ={}) == os.path.join(home, ".cache", "tpr_keras", "jax")
    assert jax_cache_dir(None, environ={"JAX_COMPILATION_CACHE_DIR": "/c/jax"}) == "/c/jax"
    assert jax_cache_dir("rel", environ={"JAX_COMPILATION_CACHE_DIR": "/c/jax"}) == (
        os.path.abspath("rel"))
    assert jax_cache_dir(None, environ={"JAX_COMPILATION_CACHE_DIR": ""}) is None
    assert jax_cache_dir("none", environ={"JAX_COMPILATION_CACHE_DIR": "/c/jax"}) is None


def test_the_jax_cache_keeps_every_program_unless_the_user_said_otherwise(monkeypatch):
    jax = pytest.importorskip("jax")
    calls = {}
    monkeypatch.setattr(jax.config, "update", lambda name, value: calls.update({name: value}))
    monkeypatch.delenv("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", raising=False)
    enable_jax_cache("/c/jax")
    assert calls == {"jax_compilation_cache_dir": "/c/jax",
                     "jax_persistent_cache_min_compile_time_secs": 0}
    calls.clear()
    monkeypatch.setenv("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "1")
    enable_jax_cache("/c/jax")
    assert calls == {"jax_compilation_cache_dir": "/c/jax"}
