"""README numbers that cannot go stale silently (issue 17): the test count and the flag
tables must match the code. When this fails, update README.md (and the results/ file its
sentence names), not this test."""

import os
import pathlib
import re
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
FLAG = re.compile(r"`--([a-z_0-9]+)`")


def section(title):
    start = README.index(title)
    end = README.find("\n## ", start + len(title))
    return README[start:end if end >= 0 else None]


def table_rows(text):
    """``[(flags, default cell)]`` of the ``| flag | default | meaning |`` rows."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `--") and len(cells) >= 3:
            rows.append((FLAG.findall(cells[0]), cells[1]))
    return rows


def python(code):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def babi_flags():
    """``{name: default}`` of every flag ``python -m train.babi`` accepts (no TensorFlow)."""
    out = python("import train.babi; from tpr_keras import cli\n"
                 "for name, flag in sorted(cli.command_flags().items()):\n"
                 "    print(name, repr(flag.default))")
    return {name: eval(value) for name, value in (line.split(" ", 1)  # noqa: S307
                                                  for line in out.splitlines())}


def same_default(cell, value):
    cell = cell.strip().strip("`")
    if cell in ("–", "-", ""):
        return value is None
    if cell in ("on", "off"):
        return value is (cell == "on")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return float(cell) == float(value)
        except ValueError:
            return False
    return cell == str(value)


def test_test_count_matches_the_suite():
    match = re.search(r"`python -m pytest tests` \(([\d,]+) tests", README)
    assert match, "README: '`python -m pytest tests` (N tests' not found"
    done = subprocess.run([sys.executable, "-m", "pytest", "tests", "--collect-only", "-q"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    collected = re.search(r"(\d+) tests? collected", done.stdout)
    assert collected, done.stdout[-2000:] + done.stderr[-2000:]
    assert int(match.group(1).replace(",", "")) == int(collected.group(1)), (
        "README's test count is stale: update it (and results/tests.md)")


def test_babi_flag_table_lists_every_flag_with_its_default():
    rows = table_rows(section("## Training bAbI"))
    listed = [name for names, _ in rows for name in names]
    flags = babi_flags()
    assert len(listed) == len(set(listed)), "a flag appears twice in the table"
    assert sorted(listed) == sorted(flags), (
        f"missing from the README table: {sorted(set(flags) - set(listed))}; "
        f"not flags of train.babi: {sorted(set(listed) - set(flags))}")
    checked = 0
    for names, cell in rows:
        parts = [p.strip() for p in cell.split(",")] if len(names) > 1 else [cell]
        if len(parts) != len(names) or any(c in cell for c in "/()"):
            continue  # defaults that depend on the model or the task: described in words
        for name, part in zip(names, parts):
            assert same_default(part, flags[name]), (name, part, flags[name])
            checked += 1
    assert checked >= 30


def test_server_flag_table_lists_every_flag():
    source = (REPO / "serving" / "server.py").read_text()
    options = set(re.findall(r'add_argument\("--([a-z_0-9]+)"', source))
    text = README[README.index("### The server"):]
    text = text[:text.index("\n### ", 5)]
    listed = [name for names, _ in table_rows(text) for name in names]
    assert sorted(listed) == sorted(options)
