"""Where the test command's time goes: per folder of ``tests/`` and the slowest tests, read
from the log of one run of the README's test command made with ``--durations=0``.

    PYTEST_ADDOPTS=--durations=0 CI=true bash .ci/run > ci.log 2>&1
    python -m tools.test_times ci.log --json results/tests/durations.json

``.ci/run`` runs the command's two halves (the whole suite on TensorFlow, then the layer,
op and model tests on JAX); each half prints its own durations and summary line, read here
in order. A test's time is its setup, call and teardown together, so a module- or
session-scoped fixture counts for the test that first asked for it. The folder table in
``results/tests.md`` (block ``tests-times``) is made from the JSON by ``python -m
tools.report``.

``--baseline_log`` adds another run of a README's test command (another commit's, run on the
same machine just before or after; durations not needed): machines of one name differ up to
4x in speed, so what a measurement can be compared with is a ratio measured side by side.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict

from serving.command_flags import Command
from train.machine import machine_description

#: The two halves of the README's test command, in the order ``.ci/run`` runs them.
HALVES = ("TensorFlow: tests", "JAX: tests/layers tests/ops tests/models -m every_backend")
DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s (setup|call|teardown)\s+(\S+)\s*$")
SUMMARY = re.compile(r"^=+ (.*?) in (\d+(?:\.\d+)?)s(?: \([0-9:]+\))? =+\s*$")
COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|deselected|xfailed|xpassed)")
SLOWEST = 25


class LogError(ValueError):
    """A log without the durations or summary this reads."""


def folder_of(node_id: str) -> str:
    """``tests/train`` of ``train/test_babi.py::test_x`` (pytest's ids are relative to
    ``tests/``, where ``pytest.ini`` is) or of ``tests/train/...``; ``tests`` for the files
    at the top."""
    path = node_id.split("::", 1)[0]
    parts = path.split("/")
    if parts[0] == "tests":
        parts = parts[1:]
    return "tests" if len(parts) == 1 else "tests/" + parts[0]


def read_halves(text: str) -> list[dict]:
    """One record per pytest session in ``text``: its summary counts, wall seconds, the
    seconds per folder and its slowest tests."""
    halves, times = [], defaultdict(float)
    for number, line in enumerate(text.splitlines(), 1):
        match = DURATION.match(line)
        if match:
            times[match.group(3)] += float(match.group(1))
            continue
        match = SUMMARY.match(line)
        if match and COUNT.search(match.group(1)):
            if not times:
                raise LogError(f"line {number}: a session ended without durations; run it "
                               "with PYTEST_ADDOPTS=--durations=0")
            halves.append(session_record(match, times))
            times = defaultdict(float)
    if not halves:
        raise LogError("no pytest summary line found")
    return halves


def read_totals(text: str) -> list[dict]:
    """Each pytest session's wall seconds and counts in ``text`` (no durations needed)."""
    totals = []
    for line in text.splitlines():
        match = SUMMARY.match(line)
        if match and COUNT.search(match.group(1)):
            totals.append({"seconds": float(match.group(2)),
                           "counts": summary_counts(match)})
    if not totals:
        raise LogError("no pytest summary line found")
    return totals


def summary_counts(summary: re.Match) -> dict[str, int]:
    """``{"passed": 3, "error": 1}`` of a summary line."""
    return {kind.rstrip("s") if kind.startswith("error") else kind: int(n)
            for n, kind in COUNT.findall(summary.group(1))}


def session_record(summary: re.Match, times: dict[str, float]) -> dict:
    """The record of one session from its summary line and its tests' seconds."""
    counts = summary_counts(summary)
    folders = defaultdict(lambda: [0.0, 0])
    for node_id, seconds in times.items():
        folders[folder_of(node_id)][0] += seconds
        folders[folder_of(node_id)][1] += 1
    slowest = sorted(times.items(), key=lambda item: -item[1])[:SLOWEST]
    return {"seconds": float(summary.group(2)), "counts": counts,
            "folders": {name: {"seconds": round(s, 2), "tests": n}
                        for name, (s, n) in sorted(folders.items(), key=lambda f: -f[1][0])},
            "slowest": [{"test": node, "seconds": round(s, 2)} for node, s in slowest]}


def command() -> Command:
    parser = Command("python -m tools.test_times", __doc__.split("\n\n")[0],
                     example="python -m tools.test_times ci.log --json "
                             "results/tests/durations.json")
    parser.positional("log", "the log of the README's test command run with "
                             "PYTEST_ADDOPTS=--durations=0")
    parser.string("json", None, "write the record here")
    parser.string("machine", None, "the machine the log comes from (default: this one)")
    parser.string("note", "", "what else ran on the machine meanwhile")
    parser.string("baseline_log", None, "the log of another commit's test command run on "
                                        "the same machine beside this one")
    parser.string("baseline_commit", None, "the commit of --baseline_log")
    parser.string("baseline_command", None, "the test command of --baseline_log (that "
                                            "commit's README command)")
    return parser


def main(argv=None) -> int:
    args = command().parse(argv)
    with open(args.log, encoding="utf-8", errors="replace") as f:
        halves = read_halves(f.read())
    if args.machine is None:
        args.machine = machine_description()
    record = {"machine": args.machine, "note": args.note,
              "command": "PYTEST_ADDOPTS=--durations=0 CI=true bash .ci/run",
              "halves": [dict(name=name, **half) for name, half in zip(HALVES, halves)]}
    if args.baseline_log:
        record["baseline"] = baseline_record(args)
    for half in record["halves"]:
        print(f"{half['name']}: {half['seconds'] / 60:.1f} min, {half['counts']}")
        for name, folder in half["folders"].items():
            print(f"  {name:<20} {folder['seconds'] / 60:6.1f} min  {folder['tests']} tests")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1)
            f.write("\n")
    return 0


def baseline_record(args) -> dict:
    """``{"commit", "command", "halves": [{"seconds", "counts"}]}`` of ``--baseline_log``."""
    if not (args.baseline_commit and args.baseline_command):
        raise LogError("--baseline_log needs --baseline_commit and --baseline_command")
    with open(args.baseline_log, encoding="utf-8", errors="replace") as f:
        halves = read_totals(f.read())
    seconds = sum(h["seconds"] for h in halves)
    print(f"baseline {args.baseline_commit}: {seconds / 60:.1f} min in {len(halves)} sessions")
    return {"commit": args.baseline_commit, "command": args.baseline_command,
            "halves": halves}


if __name__ == "__main__":
    raise SystemExit(main())
