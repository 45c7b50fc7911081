"""tpr_keras.runtime: the malloc arena cap, checked in a fresh process."""

import os
import subprocess
import sys

import pytest

CODE = "from tpr_keras import runtime; print(runtime.limit_malloc_arenas(2))"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_sets_the_cap_unless_the_user_did():
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "True", out.stderr
    env["MALLOC_ARENA_MAX"] = "4"
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr
