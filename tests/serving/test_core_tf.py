"""serving.core._tf imports TensorFlow through tpr_keras.runtime's start-up filter: the same
lines are dropped as for the training commands, and ``TPR_KERAS_TF_LOGS`` means the same."""

import os
import subprocess
import sys

import pytest

from tpr_keras.runtime import STARTUP_NOISE

CODE = "import serving.core._tf"


def server_start_stderr(tf_logs):
    """stderr of a fresh process that imports the server's TensorFlow with every C++ log
    level shown (``TF_CPP_MIN_LOG_LEVEL=0``), so only the filter can drop lines."""
    env = {k: v for k, v in os.environ.items() if k != "TPR_KERAS_TF_LOGS"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "0"
    env["TPR_KERAS_TF_LOGS"] = tf_logs
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True,
                         text=True, check=True)
    return [line for line in out.stderr.splitlines() if line.strip()]


def test_the_servers_tensorflow_start_is_filtered_unless_tf_logs_are_asked_for():
    loud = server_start_stderr("1")
    noise = [line for line in loud if STARTUP_NOISE.search(line)]
    if not noise:
        pytest.skip("TensorFlow wrote no start-up lines on this machine")
    quiet = server_start_stderr("false")  # false means off, as for the training commands
    assert not [line for line in quiet if STARTUP_NOISE.search(line)], quiet
    assert len(quiet) == len(loud) - len(noise), (quiet, loud)  # nothing else is dropped
