"""``python -m serving.server`` takes ``tensorflow_model_server``'s command lines: its flag
names, forms (``--f=v``, ``--f v``, ``true/false/1/0``, bare booleans) and defaults, with
one warning line for flags that cannot apply here, and a start-up error (not a traceback)
for an unusable config file."""

import json
import os
import pathlib
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from serving.core.manager import ModelManager
from serving.model_server import main as server_main
from serving.model_server.flags import IGNORED, ignored_flags, parse_args

REPO = pathlib.Path(__file__).resolve().parents[2]

# The invocations of TF Serving's Docker and CLI documentation.
DOCUMENTED = [
    ["--port=8500", "--rest_api_port=8501", "--model_name=babi",
     "--model_base_path=/models/babi"],
    ["--model_config_file=/models/models.config", "--model_config_file_poll_wait_seconds=60"],
    ["--port=8500", "--model_name=babi", "--model_base_path=/models/babi",
     "--enable_batching=true", "--batching_parameters_file=/models/batching.config"],
    ["--rest_api_port=8501", "--model_name=babi", "--model_base_path=/models/babi",
     "--monitoring_config_file=/models/monitoring.config"],
    ["--rest_api_port=8501", "--allow_version_labels_for_unavailable_models",
     "--model_config_file=/models/models.config"],
    ["--model_base_path=/models/babi", "--rest_api_timeout_in_ms=5000",
     "--grpc_channel_arguments=grpc.max_connection_age_ms=2000", "--enable_batching",
     "--tensorflow_session_parallelism=2", "--grpc_max_threads=8"],
]


@pytest.mark.parametrize("argv", DOCUMENTED)
def test_documented_invocations_parse_without_warnings(argv):
    args = parse_args(argv)
    assert ignored_flags(args) == []
    for arg in argv:
        name, _, value = arg[2:].partition("=")
        got = getattr(args, name)
        if isinstance(got, bool):
            assert got is (value in ("", "true"))
        else:
            assert str(got) == value or float(got) == float(value)


def test_defaults_are_tf_servings():
    args = parse_args(["--model_base_path=/m"])
    assert (args.port, args.rest_api_port, args.model_name) == (8500, 0, "default")
    assert args.bind_address == "0.0.0.0"  # TF Serving listens on every interface
    assert args.file_system_poll_wait_seconds == 1 and args.max_num_load_retries == 5
    assert args.rest_api_timeout_in_ms == 30_000 and args.saved_model_tags == "serve"
    assert args.enable_batching is False and args.enable_model_warmup is True
    assert args.enable_grpc_healthcheck_service is False and args.ssl_config_file == ""


@pytest.mark.parametrize("text,value", [("true", True), ("1", True), ("FALSE", False),
                                        ("0", False)])
def test_boolean_forms(text, value):
    assert parse_args(["--model_base_path=/m", f"--enable_batching={text}"]).enable_batching \
        is value
    assert parse_args(["--model_base_path=/m", "--enable_batching", text]).enable_batching \
        is value
    assert parse_args(["--enable_batching", "--model_base_path", "/m"]).enable_batching


def test_bad_values_and_unknown_flags_exit_2(capsys):
    for argv in (["--model_base_path=/m", "--enable_batching=yes"],
                 ["--model_base_path=/m", "--port=http"], ["--model_base_path=/m", "--nope=1"],
                 ["--model_base"], []):
        with pytest.raises(SystemExit) as exit_:
            parse_args(argv)
        assert exit_.value.code == 2
    capsys.readouterr()


def test_flags_that_cannot_apply_are_listed_once():
    args = parse_args(["--model_base_path=/m", "--prefer_tflite_model=true",
                       "--per_process_gpu_memory_fraction=0.5", "--enable_profiler",
                       "--use_alts_credentials=false", "--mixed_precision=bfloat16"])
    assert ignored_flags(args) == ["--prefer_tflite_model=True", "--enable_profiler=True",
                                   "--mixed_precision=bfloat16"]
    assert set(IGNORED) <= set(vars(args))


def test_help_groups_the_flags_and_lists_the_ones_not_applied_last(capsys):
    from serving.model_server.flags import server_command

    with pytest.raises(SystemExit) as exit_:
        parse_args(["--help"])
    assert exit_.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[4].startswith("Example: python -m serving.server --port=8500")
    titles = [line for line in lines if line.endswith(":") and not line.startswith(" ")]
    assert titles[0] == "Models to serve:" and len(titles) >= 5
    last = lines.index(titles[-1])
    listed_last = [line.split("=")[0].split()[0].replace("--[no]", "").lstrip("-")
                   for line in lines[last:] if line.startswith("  --")]
    assert listed_last == list(IGNORED)  # exactly the flags this server does not apply
    assert len([line for line in lines if line.startswith("  --")]) == len(
        set(server_command().flag_values))


def test_help_starts_no_tensorflow_and_the_flags_defaults_are_the_cores():
    from serving.core.runners import DEFAULT_MAX_ROWS
    from serving.core.servable import RUNTIMES
    from serving.model_server import flags as server_flags
    from serving.model_server.server import DEFAULT_MAX_MESSAGE_BYTES

    assert server_flags.DEFAULT_MAX_ROWS == DEFAULT_MAX_ROWS
    assert tuple(server_flags.RUNTIMES) == tuple(RUNTIMES)
    assert server_flags.DEFAULT_MAX_MESSAGE_BYTES == DEFAULT_MAX_MESSAGE_BYTES
    for module in ("serving.server", "serving.model_server"):
        code = ("import runpy, sys; sys.argv = ['server', '--help']\n"
                "try:\n    runpy.run_module(%r, run_name='__main__')\n"
                "except SystemExit as exit:\n"
                "    print('EXIT', exit.code, 'tensorflow' in sys.modules)" % module)
        done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                              text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(REPO)))
        assert done.stdout.rstrip().endswith("EXIT 0 False"), done.stdout[-300:] + done.stderr
        assert "Models to serve:" in done.stdout


def test_version_prints_and_exits_0(capsys):
    assert server_main.main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("TensorFlow ModelServer: ") and "TensorFlow Library: " in out


def test_session_config_and_channel_arguments(tmp_path):
    config_file = tmp_path / "session.config"
    config_file.write_text("intra_op_parallelism_threads: 3 allow_soft_placement: true")
    args = parse_args(["--model_base_path=/m", f"--tensorflow_session_config_file={config_file}",
                       "--tensorflow_session_parallelism=2",
                       "--per_process_gpu_memory_fraction=0.25"])
    config = server_main.session_config(args)
    assert config.intra_op_parallelism_threads == 2 and config.inter_op_parallelism_threads == 2
    assert config.allow_soft_placement and config.gpu_options.per_process_gpu_memory_fraction \
        == 0.25
    assert server_main.grpc_channel_arguments("grpc.max_connection_age_ms=2000,a=b") == [
        ("grpc.max_connection_age_ms", 2000), ("a", "b")]


@pytest.mark.parametrize("flag,text,names", [
    ("monitoring_config_file", "prometheus_config { enabled: true }", "enabled"),
    ("ssl_config_file", "server_key: 'x'", "server_key"),
    ("tensorflow_session_config_file", "intra_op: 1", "intra_op"),
    ("batching_parameters_file", "max_batch_size { value: x }", "max_batch_size"),
    ("batching_parameters_file", "max_batch_size { value: 8 } allowed_batch_size: 8",
     "allowed_batch_size"),
])
def test_malformed_config_file_is_one_start_up_error(tmp_path, capsys, flag, text, names):
    path = tmp_path / "bad.config"
    path.write_text(text)
    extra = ["--enable_batching"] if flag == "batching_parameters_file" else []
    assert server_main.main(["--model_base_path=/m", f"--{flag}={path}", *extra]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"Failed to start server. Error: --{flag}={path}: "), err
    assert err[0].count(str(path)) == 1 and names in err[0]


def test_flags_applied_since_issue_35_are_not_warned_about():
    args = parse_args(["--model_base_path=/m", "--num_load_threads=8",
                       "--enable_model_warmup=false", "--num_request_iterations_for_warmup=3",
                       "--allow_version_labels_for_unavailable_models",
                       "--enable_signature_method_name_check"])
    assert ignored_flags(args) == [] and args.enable_signature_method_name_check is True


def run_until_serving(argv, info):
    """``main(argv)`` in this (the main) thread, sent SIGTERM once it has written ``info``
    (never if it returns first); pytest's signal handlers are restored afterwards."""
    done = threading.Event()

    def stop_when_serving():
        deadline = time.monotonic() + 300
        while not done.is_set() and time.monotonic() < deadline:
            if info.exists():
                os.kill(os.getpid(), signal.SIGTERM)
                return
            time.sleep(0.1)

    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    threading.Thread(target=stop_when_serving, daemon=True).start()
    try:
        return server_main.main(argv)
    finally:
        done.set()
        for s, handler in previous.items():
            signal.signal(s, handler)


def test_labels_of_unavailable_versions_need_the_flag(export_base, tmp_path, capsys,
                                                      monkeypatch):
    """TF Serving refuses a config whose label names a version that is not available,
    unless --allow_version_labels_for_unavailable_models; the manager gets the flags."""
    made = []

    class Recording(ModelManager):
        def __init__(self, *args, **kwargs):
            made.append(kwargs)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(server_main, "ModelManager", Recording)
    config = tmp_path / "models.config"
    config.write_text(f'model_config_list {{ config {{ name: "babi" base_path: '
                      f'"{export_base}/babi" model_platform: "tensorflow" '
                      f'version_labels {{ key: "canary" value: 2 }} }} }}')
    info = tmp_path / "server.json"
    argv = [f"--model_config_file={config}", "--port=0", "--bind_address=127.0.0.1",
            "--file_system_poll_wait_seconds=0", f"--server_info_file={info}"]
    assert run_until_serving(argv, info) == 1 and not info.exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("Failed to start server. Error: ") and \
        "'canary' names version 2" in err[-1], err
    assert made[-1]["allow_version_labels_for_unavailable_models"] is False
    assert made[-1]["num_load_threads"] == 4  # TF Serving's 0: still parallel here
    assert (made[-1]["model_warmup"], made[-1]["warmup_iterations"]) == (True, 1)

    assert run_until_serving([*argv, "--allow_version_labels_for_unavailable_models",
                              "--num_load_threads=2", "--enable_model_warmup=false",
                              "--num_request_iterations_for_warmup=3"], info) == 0
    assert json.loads(info.read_text())["models"] == ["babi"]
    assert made[-1]["allow_version_labels_for_unavailable_models"] is True
    assert made[-1]["num_load_threads"] == 2
    assert (made[-1]["model_warmup"], made[-1]["warmup_iterations"]) == (False, 3)


def test_tf_serving_command_line_starts_a_server(export_base, tmp_path):
    """A TF Serving command line with monitoring, batching, the health service and a flag
    that does not apply: one warning line, then Predict, metrics and health answer."""
    monitoring = tmp_path / "monitoring.config"
    monitoring.write_text('prometheus_config { enable: true path: "/monitoring/prometheus/'
                          'metrics" }')
    batching = tmp_path / "batching.config"
    batching.write_text("max_batch_size { value: 32 } batch_timeout_micros { value: 0 }")
    info = tmp_path / "server.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "serving.server", "--port", "0", "--rest_api_port=-1",
         "--model_name=babi", f"--model_base_path={export_base}/babi",
         "--enable_batching=true", f"--batching_parameters_file={batching}",
         f"--monitoring_config_file={monitoring}", "--enable_grpc_healthcheck_service=1",
         "--prefer_tflite_model=true", "--num_tflite_interpreters_per_pool=4", "--bind_address=127.0.0.1",
         f"--server_info_file={info}", "--file_system_poll_wait_seconds=0"],
        cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3"),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr],
                     daemon=True).start()
    try:
        deadline = time.monotonic() + 180
        while not info.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert info.exists(), "".join(list(lines.queue))[-3000:]
        ports = json.loads(info.read_text())["ports"]
        body = json.dumps({"instances": [{"story": "Mary went home.",
                                          "question": "Where is Mary?"}]}).encode()
        rest = f"http://127.0.0.1:{ports['rest']}"
        with urllib.request.urlopen(urllib.request.Request(
                f"{rest}/v1/models/babi:predict", body), timeout=60) as response:
            assert "predictions" in json.loads(response.read())
        with urllib.request.urlopen(f"{rest}/monitoring/prometheus/metrics",
                                    timeout=30) as response:
            page = response.read().decode()
        assert ':tensorflow:serving:request_count{model_name="babi",status="OK"} 1' in page
        version = os.path.join(export_base, "babi", "1")
        assert (f':tensorflow:cc:saved_model:load_attempt_count{{model_path="{version}",'
                'status="success"} 1') in page
        assert f':tensorflow:cc:saved_model:load_latency{{model_path="{version}"}} ' in page
        with grpc.insecure_channel(f"127.0.0.1:{ports['grpc']}") as channel:
            status = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=10).status
        assert status == health_pb2.HealthCheckResponse.SERVING
        proc.terminate()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
    time.sleep(0.2)
    log = "".join(list(lines.queue))
    warnings = [line for line in log.splitlines() if "do not apply" in line]
    assert len(warnings) == 1, log[-3000:]
    assert "--prefer_tflite_model=True --num_tflite_interpreters_per_pool=4" in warnings[0]
