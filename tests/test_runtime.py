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


# TensorFlow 2.21's start-up lines on a machine without a GPU, as it writes them to fd 2.
NOISE = (
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
    "I0000 00:00:1795921828.033963   19152 port.cc:153] oneDNN custom operations are on. "
    "You may see slightly different numerical results.\n"
    "I0000 00:00:1795921828.034329   19152 cudart_stub.cc:31] Could not find cuda drivers on "
    "your machine, GPU will not be used.\n"
    "I0000 00:00:1795921828.105485   19152 cpu_feature_guard.cc:227] This TensorFlow binary is "
    "optimized to use available CPU instructions in performance-critical operations.\n"
    "To enable the following instructions: AVX2 AVX512F FMA, in other operations, rebuild "
    "TensorFlow with the appropriate compiler flags.\n"
    "E0000 00:00:1795921833.232802   19152 cuda_platform.cc:52] failed call to cuInit: "
    "INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\n")
KEPT = "E0000 00:00:1795921833.3   19152 op_kernel.cc:1] Not found: a real error\n"

#: Writes NOISE and KEPT to fd 2 inside the block, as TensorFlow's C++ logging does, then
#: prints TF_CPP_MIN_LOG_LEVEL as the block left it.
WRITE_IN_BLOCK = f"""
import os
from tpr_keras import runtime
with runtime.quiet_tensorflow_start():
    os.write(2, {(NOISE + KEPT).encode()!r})
print(os.environ.get("TF_CPP_MIN_LOG_LEVEL"))
"""


def run_block(tf_logs):
    env = {k: v for k, v in os.environ.items()
           if k not in ("TPR_KERAS_TF_LOGS", "TF_CPP_MIN_LOG_LEVEL")}
    if tf_logs is not None:
        env["TPR_KERAS_TF_LOGS"] = tf_logs
    out = subprocess.run([sys.executable, "-c", WRITE_IN_BLOCK], env=env,
                         capture_output=True, text=True, check=True)
    return out.stderr, out.stdout.strip()


def test_the_noise_lines_are_all_start_up_noise_and_the_kept_line_is_not():
    from tpr_keras import runtime

    assert all(runtime.STARTUP_NOISE.search(line) for line in NOISE.splitlines())
    assert not runtime.STARTUP_NOISE.search(KEPT)


@pytest.mark.parametrize("tf_logs", [None, "", "0", "false", "No", "off"])
def test_the_start_up_block_drops_the_noise_and_keeps_other_lines(tf_logs):
    stderr, level = run_block(tf_logs)
    assert stderr == KEPT
    assert level == "2"


@pytest.mark.parametrize("tf_logs", ["1", "true", "yes", "ON"])
def test_tpr_keras_tf_logs_keeps_every_line_and_the_log_level(tf_logs):
    stderr, level = run_block(tf_logs)
    assert stderr == NOISE + KEPT
    assert level == "None"


def test_the_argument_overrides_the_environment(monkeypatch):
    from tpr_keras import runtime

    monkeypatch.setenv("TPR_KERAS_TF_LOGS", "1")
    assert runtime.tf_logs_enabled()
    monkeypatch.setenv("TPR_KERAS_TF_LOGS", "false")
    assert not runtime.tf_logs_enabled()
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    with runtime.quiet_tensorflow_start(tf_logs=True):  # no filter, no log level
        pass
    assert "TF_CPP_MIN_LOG_LEVEL" not in os.environ


def test_the_onednn_cache_is_sized_unless_the_user_did(monkeypatch):
    from tpr_keras import runtime

    monkeypatch.delenv(runtime.ONEDNN_CACHE_ENV, raising=False)
    assert runtime.size_onednn_cache(4096) is True
    assert os.environ[runtime.ONEDNN_CACHE_ENV] == "4096"
    monkeypatch.setenv(runtime.ONEDNN_CACHE_ENV, "512")
    assert runtime.size_onednn_cache() is False
    assert os.environ[runtime.ONEDNN_CACHE_ENV] == "512"


@pytest.mark.parametrize("multiple,expected", [(8, "16384"), (1, None)])
def test_train_math_sizes_the_onednn_cache_for_rounded_shapes_only(monkeypatch, multiple,
                                                                   expected):
    import types

    from tpr_keras import runtime
    from train import math as train_math

    class Started(Exception):
        pass

    def start(args):
        raise Started(os.environ.get(runtime.ONEDNN_CACHE_ENV))

    monkeypatch.delenv(runtime.ONEDNN_CACHE_ENV, raising=False)
    monkeypatch.setattr(train_math.backend, "start", start)
    with pytest.raises(Started) as started:
        train_math.main(types.SimpleNamespace(group_multiple=multiple))
    assert started.value.args[0] == expected


@pytest.mark.parametrize("flags, named", [
    ("fpu sse2 avx avx2 fma avx512f avx512bw", "AVX-512"),
    ("fpu sse2 avx avx2 fma", "AVX2"),
    ("fpu sse2 avx", "AVX"),
    ("fp asimd evtstrm", ""),  # an Arm processor's features line
])
def test_the_widest_vector_extension_is_named_from_cpuinfo(tmp_path, flags, named):
    from tpr_keras.runtime import cpu_vector_extension

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: {flags}\n\n"
                       f"processor\t: 1\nflags\t\t: {flags}\n")
    assert cpu_vector_extension(str(cpuinfo)) == named


def test_an_unreadable_cpuinfo_names_no_extension(tmp_path):
    from tpr_keras.runtime import cpu_vector_extension

    assert cpu_vector_extension(str(tmp_path / "absent")) == ""


def test_the_machine_line_carries_the_vector_extension(monkeypatch):
    from train import machine

    monkeypatch.setattr(machine, "cpu_vector_extension", lambda: "AVX2")
    line = machine.machine_description(accelerators=0)
    assert line.split(",")[0].endswith(" (AVX2)")
    assert ", no GPU, " in line
    monkeypatch.setattr(machine, "cpu_vector_extension", lambda: "")
    assert "(" not in machine.machine_description(accelerators=0).split(",")[0]
