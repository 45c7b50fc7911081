"""``serving.model_server.server_process``: a server child that cannot start is reported
with its exit status and the end of its log; one that is not serving in time is killed; a
stale info file is never taken for the new server's. (A server that starts is what
``bench.serving_soak``'s test and the fuzz run use it for.)"""

import json

import pytest

from serving.model_server.server_process import ServerDidNotStart, start_server_process


def test_a_server_that_exits_is_reported_with_its_status_and_log(tmp_path):
    with open(tmp_path / "server.log", "w+", encoding="utf-8") as log:
        with pytest.raises(ServerDidNotStart) as failed:
            start_server_process(["--no_such_flag=1"], tmp_path / "server.json", log,
                                 timeout_s=600)
    message = str(failed.value)
    assert message.startswith("server did not start (exit status 2):"), message
    assert "no_such_flag" in message.split("\n", 1)[1], message


def test_a_stale_info_file_is_removed_and_a_slow_server_killed(tmp_path):
    info = tmp_path / "server.json"
    info.write_text(json.dumps({"pid": 1, "ports": {"grpc": 1}, "models": []}))
    with pytest.raises(ServerDidNotStart, match=r"not serving after 0\.5 s"):
        start_server_process(["--model_base_path=/nonexistent"], info, None, timeout_s=0.5)
    assert not info.exists()
