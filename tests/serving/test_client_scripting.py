"""``python -m serving.client`` as a script uses it: inputs from files and stdin, ``--top_k``,
``--strict`` and its exit status, one ``error:`` line for every failure (message sizes
naming the limit to raise), and unknown words counted as they are listed.

One server for the module (the conftest export), with a 1 MiB message limit so that the
size errors need no large requests; most cases call ``main`` in-process, those about the
process itself (stdin, exit statuses, Ctrl-C) run the command."""

import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import time

import grpc
import pytest

from serving import client
from serving.client import cli
from serving.client.model_clients import BabiClient, ReplyError, agreeing

REPO = pathlib.Path(__file__).resolve().parents[2]
STORY = "Mary went to the kitchen.\nJohn went to the garden."
QUESTION = "Where is Mary?"
LIMIT = 2**20


@pytest.fixture(scope="module")
def small(babi_server):
    return babi_server(max_message_bytes=LIMIT)


def run(capsys, *argv):
    """``main(argv)``: (status, stdout, stderr); a usage error's SystemExit is its status."""
    try:
        status = client.main([str(a) for a in argv])
    except SystemExit as stop:
        status = stop.code
    out, err = capsys.readouterr()
    return status, out, err


def command(*argv, stdin=None, **kwargs):
    return subprocess.run([sys.executable, "-m", "serving.client", *map(str, argv)],
                          cwd=REPO, input=stdin, capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), **kwargs)


#: A line of gRPC's own C-core log ("E1205 02:02:35.925832   25927 ev_epoll1_linux.cc:373]
#: ..."): the child forked from this test process (``preexec_fn`` runs Python between fork
#: and exec) may write one when other threads of the parent were inside gRPC; it is not
#: the client's output.
GRPC_LOG_LINE = re.compile(r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w.]+:\d+\] ")


def default_sigint():
    """In the client's process before it starts: SIGINT's default action, as a terminal's
    Ctrl-C finds it. A suite started in the background (``nohup pytest ... &``) passes SIGINT
    on ignored, and Python then installs no KeyboardInterrupt handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def grpc_at(server):
    return ["--server", f"127.0.0.1:{server.port}"]


def test_inputs_from_files_and_stdin_ask_what_the_flags_ask(small, capsys, tmp_path):
    status, by_flag, _ = run(capsys, *grpc_at(small), "--story", STORY, "--question",
                             QUESTION, "--json")
    assert status == 0
    story_file, question_file = tmp_path / "story.txt", tmp_path / "question.txt"
    story_file.write_text(STORY + "\n")
    question_file.write_text(QUESTION + "\r\n\n")  # trailing newlines are dropped
    assert run(capsys, *grpc_at(small), "--story_file", story_file, "--question_file",
               question_file, "--json")[1] == by_flag
    done = command(*grpc_at(small), "--story_file", "-", "--question", QUESTION, "--json",
                   stdin=STORY)
    assert (done.returncode, done.stdout, done.stderr) == (0, by_flag, "")
    done = command(*grpc_at(small), "--story", STORY, "--question_file", "-", "--json",
                   stdin=QUESTION + "\n")
    assert (done.returncode, done.stdout) == (0, by_flag)
    # usage errors: status 2, one line
    for argv, says in (
            (["--story", STORY, "--story_file", story_file, "--question", QUESTION],
             "give --story or --story_file, not both"),
            (["--story_file", "-", "--question_file", "-"],
             "--story_file and --question_file both read standard input"),
            (["--story_file", tmp_path / "nope.txt", "--question", QUESTION],
             f"--story_file={tmp_path / 'nope.txt'}: cannot read it: No such file"),
            (["--question", QUESTION, "--top_k", "3"], "--top_k applies to bAbI")):
        status, out, err = run(capsys, *grpc_at(small), *argv)
        assert (status, out, err.count("\n")) == (2, "", 1) and says in err, err


def test_premise_and_hypothesis_files_reach_the_entailment_inputs(small, capsys, tmp_path):
    """The babi model has no premise input: the request shows what was sent."""
    (tmp_path / "p.txt").write_text("(p&q)\n")
    status, _, err = run(capsys, *grpc_at(small), "--model_name", "babi", "--premise_file",
                         tmp_path / "p.txt", "--hypothesis", "p")
    assert status == 1 and err.startswith("error: INVALID_ARGUMENT: ") and "premise" in err


def test_a_story_longer_than_the_argument_limit_goes_through_stdin(small):
    story = "Mary went to the kitchen. " * 30_000  # 780 kB: more than one argument may hold
    done = command(*grpc_at(small), "--story_file", "-", "--question", QUESTION, "--json",
                   stdin=story)
    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout)
    assert reply["story_sentences"] == 30_000 and reply["dropped_sentences"] > 0


def test_top_k(small, capsys):
    base = [*grpc_at(small), "--story", STORY, "--question", QUESTION]
    status, default, _ = run(capsys, *base)
    assert status == 0 and len(default.splitlines()) == 6  # the answer and 5 candidates
    assert run(capsys, *base, "--top_k", "5")[1] == default
    assert run(capsys, *base, "--top_k", "2")[1].splitlines() == default.splitlines()[:3]
    assert run(capsys, *base, "--top_k", "0")[1].splitlines() == default.splitlines()[:1]
    status, out, err = run(capsys, *base, "--top_k", "9")
    assert (status, out) == (0, default)
    assert err == ("note: the model returns 5 candidates (the k of its export), fewer than "
                   "--top_k 9\n")
    status, out, _ = run(capsys, *base, "--top_k", "1", "--json", "--rest", "--server",
                         f"127.0.0.1:{small.rest_api_port}")
    assert len(json.loads(out)["candidates"]) == 1
    assert run(capsys, *base, "--top_k", "-1")[0] == 2


def test_strict_exits_3_on_any_warning_and_still_prints_the_answer(small, capsys):
    base = [*grpc_at(small), "--question", QUESTION, "--strict"]
    assert run(capsys, *base, "--story", STORY)[::2] == (0, "")
    for story in ("", "Zork went to Paris.", "Mary went to the kitchen. " * 200):
        status, out, err = run(capsys, *base, "--story", story)
        assert status == cli.WARNED == 3 and out.splitlines()[0], story
        assert err.startswith("warning: ")
        assert run(capsys, *[a for a in base if a != "--strict"], "--story", story)[0] == 0


def test_unknown_words_are_counted_as_listed_and_punctuation_is_no_word(small, capsys):
    story, question = "Zork, zork went to Paris; Zork went home.", "Where is Zork?"
    with BabiClient(f"127.0.0.1:{small.port}") as babi:
        reply = babi.ask(story, question)
        raw, _ = babi.predict({"story": [story], "question": [question]})
    # the export counts occurrences (punctuation included); the client counts what it lists
    assert raw["unknown_words"][0] >= 6 and "," in raw["unknown_tokens"][0].split()
    assert (reply.unknown_words, reply.unknown_tokens) == (3, "zork paris home")
    status, _, err = run(capsys, *grpc_at(small), "--story", story, "--question", question)
    assert status == 0 and err.startswith(
        "warning: 3 word(s) of the story and question are not in the model's vocabulary "
        "(zork, paris, home); it read them as <unk>")


def test_agreeing_counts_distinct_tokens_and_drops_punctuation_from_words():
    assert agreeing(7, "zork , paris ; ?", words=True) == (2, "zork paris")
    assert agreeing(0, "", words=True) == (0, "")
    assert agreeing(4, None, words=True) == (4, None)  # an export without the list
    assert agreeing(5, "@ ÷ ,") == (3, "@ ÷ ,")  # characters: punctuation counts


def test_message_sizes_name_the_limit_and_how_to_raise_it(small, capsys):
    story = "Mary went to the kitchen. " * 50_000  # 1.3 MB
    base = ["--story", story, "--question", QUESTION]
    status, _, err = run(capsys, *grpc_at(small), *base, "--max_message_mb", "1")
    assert status == 1 and err.count("\n") == 1
    assert err.startswith("error: RESOURCE_EXHAUSTED: the request is ")
    assert "over this client's limit of 1048576 bytes (--max_message_mb 1): raise it, e.g. " \
           "--max_message_mb 3" in err and "--max_message_bytes" in err
    status, _, err = run(capsys, *grpc_at(small), *base, "--max_message_mb", "8")
    assert status == 1 and err.count("\n") == 1
    assert err.startswith("error: RESOURCE_EXHAUSTED: the server refused a request of ")
    assert "its limit is 1048576 bytes (1.0 MiB); start it with a larger " \
           "--max_message_bytes" in err
    status, _, err = run(capsys, "--rest", "--server", f"127.0.0.1:{small.rest_api_port}",
                         *base)
    assert status == 1 and err.count("\n") == 1
    assert err.startswith("error: RESOURCE_EXHAUSTED: request body of ") and \
        "exceeds the limit of 1048576 bytes (the server's --max_message_bytes)" in err
    assert run(capsys, *grpc_at(small), *base, "--max_message_mb", "4096")[0] == 2


class FakeRpcError(grpc.RpcError):
    def __init__(self, code, details):
        self._code, self._details = code, details

    def code(self):
        return self._code

    def details(self):
        return self._details


def test_every_grpc_status_is_one_line_starting_with_its_name():
    args = type("Args", (), {"max_message_mb": 64, "timeout": 30.0, "rest": False})()
    for code in grpc.StatusCode:
        for details in ("", "line one\nline two", "x" * 3000):
            line = cli.error_line(FakeRpcError(code, details), args, "localhost:8500")
            assert "\n" not in line and line.startswith(f"{code.name}: "), line
    sent = cli.error_line(FakeRpcError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                       "CLIENT: Sent message larger than max (72800107 vs. "
                                       "67108864)"), args, "h:1")
    assert "the request is 72800107 bytes (69.4 MiB)" in sent and "--max_message_mb 71" in sent
    received = cli.error_line(FakeRpcError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                           "CLIENT: Received message larger than max (9 vs. "
                                           "8)"), args, "h:1")
    assert received.startswith("RESOURCE_EXHAUSTED: the reply is 9 bytes")
    assert "--timeout 30 s" in cli.error_line(
        FakeRpcError(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded"), args, "h:1")


def test_a_reply_of_another_kind_of_model_is_one_line(small, capsys):
    with BabiClient(f"127.0.0.1:{small.port}", signature_name="tokenize") as babi:
        with pytest.raises(ReplyError) as caught:
            babi.ask(STORY, QUESTION)
    assert str(caught.value) == (
        "model 'babi' answered without the output(s) answer, candidates, scores (its "
        "outputs: question_ids, story_ids): it is not a bAbI model; --model_name names the "
        "model to ask")


def test_exit_statuses_of_the_command(small, tmp_path):
    base = [*grpc_at(small), "--question", QUESTION]
    assert command(*base, "--story", STORY, "--strict").returncode == 0
    warned = command(*base, "--story", "", "--strict")
    assert warned.returncode == 3 and warned.stdout and "Traceback" not in warned.stderr
    failed = command(*base, "--story", STORY, "--model_name", "nope")
    assert failed.returncode == 1 and failed.stderr.startswith("error: NOT_FOUND: ")
    assert command(*base, "--story_file", tmp_path / "nope").returncode == 2
    # Ctrl-C while it waits for a server: 130, one line, no traceback
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "serving.client", "--server",
                             f"127.0.0.1:{port}", "--wait_seconds", "60", "--story", STORY,
                             "--question", QUESTION], cwd=REPO, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, PYTHONPATH=str(REPO)),
                            preexec_fn=default_sigint)
    deadline = time.monotonic() + 30
    line = proc.stderr.readline()  # "waiting for model 'babi' ...": it is in the retry loop
    while GRPC_LOG_LINE.match(line):
        line = proc.stderr.readline()
    assert line.startswith("waiting for model") and time.monotonic() < deadline
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    err = "".join(x for x in err.splitlines(keepends=True) if not GRPC_LOG_LINE.match(x))
    assert proc.returncode == 130 and err == "error: interrupted\n", err
