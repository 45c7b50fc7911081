"""Run the README's commands and Python examples against the shipped presets and write their
outputs into the README: every output it shows comes from a run.

    python -m tools.readme_outputs           # run them (a few minutes), rewrite the blocks
    python -m tools.readme_outputs --check   # run nothing; exit 1 with a diff if stale

An output block is the text between ``<!-- output:NAME -->`` and ``<!-- /output:NAME -->``
and shows what the fenced code block before it prints: of a ``bash`` block, each
``python -m serving.client`` command, run in order against the server the README starts
(its export commands and its ``python -m serving.server ... &`` line, run as written, in a
fresh folder, on free ports: each client command gets ``--server`` for them); of a
``python`` block, the script, run as written. Standard output, then standard error (of a
script, its standard output only: TensorFlow logs on stderr).
``output:serve-timing`` is the start-up that run measured. The commands, their outputs
and the timings go to ``results/readme_outputs.json``; the blocks are made from it, and
``--check`` compares the README's blocks and code with it (``tests/test_readme.py``).
"""

import difflib
import json
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORD = os.path.join("results", "readme_outputs.json")
MARKER = re.compile(r"<!-- (/?)output:([A-Za-z0-9_.-]+) -->")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
CLIENT, SERVER = "python -m serving.client", "python -m serving.server"
TIMING = "serve-timing"


class ReadmeError(ValueError):
    """A malformed output block, or a command that failed."""


def blocks_of(text):
    """``[(name, start, end)]``: each output block's body offsets, in order."""
    found, open_block = [], None
    for match in MARKER.finditer(text):
        closing, name = match.group(1) == "/", match.group(2)
        if not closing and open_block is None:
            open_block = (name, match.end())
        elif closing and open_block and open_block[0] == name:
            found.append((name, open_block[1], match.start()))
            open_block = None
        else:
            raise ReadmeError(f"README.md:{text.count(chr(10), 0, match.start()) + 1}: "
                              f"unbalanced output marker {match.group(0)}")
    if open_block:
        raise ReadmeError(f"README.md: output block {open_block[0]!r} has no end marker")
    return found


def shell_lines(bash):
    """A bash block's lines, continuation lines joined."""
    return [line.strip() for line in bash.replace("\\\n", " ").splitlines() if line.strip()]


def sources(text):
    """``{name: {"language": "bash" | "python", "code": [client commands] | script}}``:
    what each output block shows the output of (the fenced block before its marker)."""
    out = {}
    for name, start, _ in blocks_of(text):
        if name == TIMING:
            continue
        fences = [m for m in FENCE.finditer(text, 0, start)
                  if m.group(1) in ("bash", "python")]
        if not fences:
            raise ReadmeError(f"output block {name!r} follows no bash or python block")
        language, code = fences[-1].group(1), fences[-1].group(2)
        if language == "bash":
            code = [" ".join(line.split()) for line in shell_lines(code)
                    if line.startswith(CLIENT)]
            if not code:
                raise ReadmeError(f"the bash block before {name!r} runs no {CLIENT}")
        out[name] = {"language": language, "code": code}
    return out


def server_block(text):
    """The bash block that starts the server: ``(setup script, server command)``."""
    for match in FENCE.finditer(text):
        lines = shell_lines(match.group(2))
        servers = [line for line in lines if line.startswith(SERVER) and line.endswith("&")]
        if match.group(1) == "bash" and servers and "--model_config_file" in servers[0]:
            setup = match.group(2).split(SERVER)[0]
            return setup, servers[0].rstrip("&").strip()
    raise ReadmeError(f"no bash block starts '{SERVER} ... --model_config_file=... &'")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_python(code, cwd, env):
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise ReadmeError(f"the README's python block failed:\n{done.stderr[-3000:]}")
    return done.stdout  # its stderr is TensorFlow's start-up log


def run_client(command, port, cwd, env):
    argv = shlex.split(command)
    argv = [sys.executable, *argv[1:], f"--server=localhost:{port}"]
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise ReadmeError(f"{command} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout + done.stderr


def start_server(command, work, env, info):
    """Starts the README's server command in ``work`` on free ports; returns the process,
    the gRPC and REST ports and the seconds until they opened (its info file)."""
    grpc_port, rest_port = free_port(), free_port()
    argv = [a for a in shlex.split(command)[1:]
            if not a.startswith(("--port=", "--rest_api_port="))]
    argv = [sys.executable, *argv, f"--port={grpc_port}", f"--rest_api_port={rest_port}",
            f"--server_info_file={info}"]
    log = open(os.path.join(work, "server.log"), "w")  # noqa: SIM115 - closed with the work
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    while not os.path.exists(info):
        if proc.poll() is not None or time.monotonic() - started > 900:
            proc.kill()
            with open(log.name, encoding="utf-8") as f:
                raise ReadmeError(f"{command} did not start:\n{f.read()[-3000:]}")
        time.sleep(0.2)
    return proc, grpc_port, rest_port, time.monotonic() - started


def run_all(root, text):
    """Runs everything the output blocks show; returns the record for the JSON file."""
    shown = sources(text)
    setup, server = server_block(text)
    work = tempfile.mkdtemp(prefix="readme-outputs-")
    os.makedirs(os.path.join(work, "serving"))
    shutil.copy(os.path.join(root, "serving", "models.config"), os.path.join(work, "serving"))
    env = dict(os.environ, PYTHONPATH=root, TF_CPP_MIN_LOG_LEVEL="3",
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    env.pop("KERAS_BACKEND", None)
    record = {"generated_by": "python -m tools.readme_outputs", "blocks": {}}
    proc = None
    try:
        started = time.monotonic()
        done = subprocess.run(["bash", "-e", "-c", setup], cwd=work, env=env,
                              capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            raise ReadmeError(f"the README's export commands failed:\n{done.stderr[-3000:]}")
        export_seconds = time.monotonic() - started
        proc, grpc_port, rest_port, start_seconds = start_server(
            server, work, env, os.path.join(work, "server.json"))
        for name, source in shown.items():
            if source["language"] == "python":
                output = run_python(source["code"], work, env)
            else:
                output = "".join(run_client(c, rest_port if " --rest" in c else grpc_port,
                                            work, env) for c in source["code"])
            record["blocks"][name] = {**source, "output": output}
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
        shutil.rmtree(work, ignore_errors=True)
    record["timing"] = {"export_seconds": round(export_seconds, 1),
                        "server_start_seconds": round(start_seconds, 1),
                        "cpus": os.cpu_count(), "machine": platform.machine(),
                        "python": platform.python_version()}
    return record


def load_record(root=ROOT):
    """The committed record of the last run (``results/readme_outputs.json``)."""
    with open(os.path.join(root, RECORD), encoding="utf-8") as f:
        return json.load(f)


def render(name, record):
    """An output block's Markdown, from the record."""
    if name == TIMING:
        t = record["timing"]
        return (f"Every output shown here is what these commands printed when `python -m "
                f"tools.readme_outputs` ran them ([record]({RECORD})); on its {t['cpus']}-CPU "
                f"machine the exports took {t['export_seconds']:.0f} s and the server opened "
                f"its ports {t['server_start_seconds']:.0f} s after it started.")
    if name not in record["blocks"]:
        raise ReadmeError(f"{RECORD} has no output {name!r}: run python -m tools.readme_outputs")
    return "```text\n" + record["blocks"][name]["output"].rstrip("\n") + "\n```"


def rewrite(text, record):
    pieces, position = [], 0
    for name, start, end in blocks_of(text):
        pieces += [text[position:start], "\n", render(name, record), "\n"]
        position = end
    return "".join(pieces + [text[position:]])


def stale(text, record):
    """Why the README's output blocks are not what the record gives ([] if they are)."""
    problems = []
    shown = sources(text)
    for name in sorted(set(shown) | set(record["blocks"])):
        recorded = record["blocks"].get(name, {})
        if shown.get(name) != {k: recorded.get(k) for k in ("language", "code")}:
            problems.append(f"output:{name}: the README's code differs from what ran "
                            f"({RECORD})")
    new = rewrite(text, record)
    problems += difflib.unified_diff(text.splitlines(True), new.splitlines(True),
                                     "README.md", f"README.md (from {RECORD})")
    return problems


def main(argv=None):
    from serving.command_flags import Command

    parser = Command("python -m tools.readme_outputs", __doc__.split("\n\n")[0])
    parser.boolean("check", False, "run nothing; exit 1 with a diff if the README's output "
                   "blocks or their code differ from the recorded run")
    parser.string("root", ROOT, "the repository root")
    args = parser.parse(argv)
    readme_path, record_path = (os.path.join(args.root, "README.md"),
                                os.path.join(args.root, RECORD))
    with open(readme_path, encoding="utf-8") as f:
        text = f.read()
    try:
        if args.check:
            problems = stale(text, load_record(args.root))
            if problems:
                sys.stdout.writelines(p if p.endswith("\n") else p + "\n" for p in problems)
                print("\nthe README's outputs are stale: run python -m tools.readme_outputs",
                      file=sys.stderr)
                return 1
            return 0
        record = run_all(args.root, text)
    except (ReadmeError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    with open(record_path, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, ensure_ascii=False)
        f.write("\n")
    with open(readme_path, "w", encoding="utf-8") as f:
        f.write(rewrite(text, record))
    print(f"updated README.md and {RECORD}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
