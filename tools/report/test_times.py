"""The test command's time per folder of ``tests/`` and its slowest tests (block
``tests-times`` of ``results/tests.md``), from ``results/tests/durations.json``, which
``python -m tools.test_times`` writes from the log of one run of the README's test command.
"""

import os

from tools.report.common import load_json

RECORD = os.path.join("results", "tests", "durations.json")
SHOWN = 12


def markdown(root):
    """Per half of the command: its minutes, then a row per folder and the slowest tests."""
    record = load_json(root, RECORD)
    lines = [f"Measured on {record['machine']}"
             + (f" ({record['note']})" if record.get("note") else "")
             + f": `{record['command']}`, then `python -m tools.test_times LOG "
               f"--json {RECORD}`.", ""]
    if record.get("baseline"):
        lines += [baseline_sentence(record), ""]
    for half in record["halves"]:
        counts = ", ".join(f"{n:,} {kind}" for kind, n in half["counts"].items())
        total = sum(f["seconds"] for f in half["folders"].values()) or 1.0
        lines += [f"**{half['name']}**: {half['seconds'] / 60:.1f} min of wall time "
                  f"({counts}); its tests' own times add up to {total / 60:.1f} min (the "
                  "workers run test files side by side).", "",
                  "| folder | tests | test minutes | share |", "|---|---:|---:|---:|"]
        for name, folder in half["folders"].items():
            lines.append(f"| `{name}` | {folder['tests']:,} | {folder['seconds'] / 60:.1f} | "
                         f"{100 * folder['seconds'] / total:.0f} % |")
        lines += ["", "| slowest test | seconds |", "|---|---:|"]
        lines += [f"| `{t['test']}` | {t['seconds']:.0f} |" for t in half["slowest"][:SHOWN]]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def baseline_sentence(record):
    """This command's time against the baseline's, both summed over their pytest sessions."""
    base = record["baseline"]
    then = sum(h["seconds"] for h in base["halves"])
    now = sum(h["seconds"] for h in record["halves"])
    tests = " + ".join(f"{h['counts'].get('passed', 0):,}" for h in base["halves"])
    return (f"Side by side on the same machine, the README's test command of "
            f"`{base['commit']}` (`{base['command']}`; {tests} tests passed) took "
            f"{then / 60:.1f} min and this one {now / 60:.1f} min (both halves' pytest time, "
            f"without the install): **{now / then:.2f}** of that time.")
