"""The README's shown outputs are what its commands printed (``python -m tools.readme_outputs``
ran them and recorded them in results/readme_outputs.json): the blocks and the code before
them match the record, a changed command or output is caught, the README waits long enough
for the start-up measured then, and its servers do not share ports. When this fails, run
``python -m tools.readme_outputs`` (it exports the presets, serves them and asks them)."""

import pathlib
import re

from tools import readme_outputs

REPO = pathlib.Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_readme_outputs_are_what_its_commands_printed():
    """Every output block is what ``python -m tools.readme_outputs`` recorded when it ran the
    code block before it, and that code is still the README's (else: run that command)."""
    problems = readme_outputs.stale(README, readme_outputs.load_record(REPO))
    assert not problems, "".join(problems)[-3000:]
    names = [name for name, _, _ in readme_outputs.blocks_of(README)]
    assert {"serve-babi", "serve-math", "serve-entailment", "serve-timing",
            "python-task-models"} <= set(names), names


def test_a_changed_command_or_output_is_stale():
    record = readme_outputs.load_record(REPO)
    edited = README.replace('--question "What is 12 + 30?"', '--question "What is 12 + 31?"')
    assert edited != README
    assert any("output:serve-math" in p for p in readme_outputs.stale(edited, record))
    babi = record["blocks"]["serve-babi"]["output"]
    record["blocks"]["serve-babi"]["output"] = babi.replace("kitchen", "garden", 1)
    assert readme_outputs.stale(README, record)


def test_readme_waits_longer_than_the_measured_start_up():
    """Each ``--wait_seconds`` of the README covers three times the start-up measured when
    its outputs were made."""
    measured = readme_outputs.load_record(REPO)["timing"]["server_start_seconds"]
    waits = [float(w) for w in re.findall(r"--wait_seconds[ =](\d+)", README)]
    assert waits and min(waits) >= 3 * measured, (waits, measured)


def test_each_readme_server_has_its_own_ports_and_its_clients_ask_it():
    """A second server would fail on a port the first holds; a client asks its block's one."""
    ports = []
    for block in re.findall(r"```bash\n(.*?)```", README, re.S):
        lines = readme_outputs.shell_lines(block)
        servers = [line for line in lines if line.startswith("python -m serving.server")]
        for server in servers:
            grpc_port = int(re.search(r"--port=(\d+)", server).group(1))
            rest = re.search(r"--rest_api_port=(\d+)", server)
            assert rest, f"no REST port: {server}"
            ports += [grpc_port, int(rest.group(1))]
            for client in (c for c in lines if c.startswith("python -m serving.client")):
                asked = re.search(r"--server[ =]\S+:(\d+)", client)
                assert int(asked.group(1) if asked else 8500) == grpc_port, client
    assert len(ports) >= 4 and len(ports) == len(set(ports)), ports
