"""The README and docs/ against the code: CI runs the README's test command, the flag tables
of docs/training.md and docs/serving_flags.md list every flag with its default, the README's Keras
example runs as written and its Python example prints what it shows (the other shown outputs:
``tests/tools/test_readme_outputs.py``), and every relative link names a file that exists. When this fails,
update README.md or docs/, not this test."""

import os
import pathlib
import re
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
DOCS = REPO / "docs"
TRAINING = (DOCS / "training.md").read_text(encoding="utf-8")
SERVER_FLAGS = (DOCS / "serving_flags.md").read_text(encoding="utf-8")
FLAG = re.compile(r"`--([a-z_0-9]+)`")


def section(text, title):
    """From the heading ``title`` to the next heading of its level or above (``#`` lines
    inside fenced code blocks are comments, not headings)."""
    start = text.index(title)
    level = title.index(" ")
    offset, fenced = start + len(title), False
    for line in text[offset:].splitlines(keepends=True):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(rf"#{{1,{level}}} ", line):
            return text[start:offset]
        offset += len(line)
    return text[start:]


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
    out = python("import train.babi; from train import cli\n"
                 "for name, flag in sorted(cli.command_flags(train.babi.command()).items()):\n"
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


def readme_test_command():
    """The README's one-line install-and-test command (the bash block that runs pytest)."""
    blocks = [b.strip() for b in re.findall(r"```bash\n(.*?)```", README, re.S)
              if "pytest" in b]
    assert len(blocks) == 1 and "\n" not in blocks[0], blocks
    return blocks[0]


def test_ci_runs_exactly_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    command = readme_test_command()
    lines = [line.strip() for line in ci.splitlines()
             if "python -m pytest" in line and not line.lstrip().startswith("#")]
    assert lines == [command], f".ci/run runs {lines}, the README {command!r}"
    assert command.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install")


def test_optional_extra_tests_skip_without_it():
    """Every test module importing an optional extra's package (setup.py's extras) skips
    when it is absent: the README's command may install fewer extras than a developer has."""
    setup = (REPO / "setup.py").read_text(encoding="utf-8")
    extras = re.search(r'"analysis": \[([^\]]*)\]', setup).group(1)
    packages = [re.match(r'"([a-zA-Z0-9_]+)', p.strip()).group(1)
                for p in extras.split(",") if p.strip()]
    offenders = []
    for path in (REPO / "tests").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for package in packages:
            top = re.search(rf"^(import|from) {package}\b", text, re.M)
            if top and f'importorskip("{package}' not in text:
                offenders.append(f"{path.relative_to(REPO)} imports {package}")
    assert not offenders, offenders


def test_babi_flag_table_lists_every_flag_with_its_default():
    rows = table_rows(section(TRAINING, "## Training bAbI"))
    listed = [name for names, _ in rows for name in names]
    flags = babi_flags()
    assert len(listed) == len(set(listed)), "a flag appears twice in the table"
    assert sorted(listed) == sorted(flags), (
        f"missing from docs/training.md's table: {sorted(set(flags) - set(listed))}; "
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
    from serving.model_server.flags import server_command

    options = set(server_command().flag_values)
    listed = [name for names, _ in table_rows(section(SERVER_FLAGS, "## Every flag"))
              for name in names]
    assert sorted(listed) == sorted(options)


def readme_python_block(title):
    """The one ``python`` code block of the README section ``title``."""
    blocks = re.findall(r"```python\n(.*?)```", section(README, title), re.S)
    assert len(blocks) == 1, f"{title!r} has {len(blocks)} python blocks"
    return blocks[0]


def test_readme_keras_example_runs_as_written(tmp_path):
    """The README's 'own Keras model' example builds, fits, predicts, saves and reloads."""
    code = readme_python_block("## Your own Keras model with a TPR layer")
    assert "from tpr_keras.layers import" in code and "model.fit(" in code
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "tpru.keras").is_file()


def test_readme_task_model_example_prints_what_the_readme_shows(tmp_path):
    """The README's 'Use it from Python' block, run again, prints its output block (made by
    ``python -m tools.readme_outputs``; ``tests/tools/test_readme_outputs.py`` checks the
    others)."""
    code = readme_python_block("## Use it from Python")
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    shown = re.search(r"<!-- output:python-task-models -->\n```text\n(.*?)```", README, re.S)
    assert shown and done.stdout == shown.group(1), done.stdout


def test_readme_is_at_most_250_lines():
    assert README.count("\n") <= 250, "trim it: link to docs/ instead"


DOC_FILES = [REPO / "README.md", *sorted(DOCS.glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def without_code(text):
    """Markdown without fenced code blocks (a ``# comment`` there is no heading)."""
    return re.sub(r"```.*?```", "", text, flags=re.S)


def anchors(path):
    """GitHub's heading anchors of a Markdown file."""
    slugs = set()
    for heading in re.findall(r"^#+ (.+)$", without_code(path.read_text(encoding="utf-8")), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        slugs.add(slug)
    return slugs


def test_relative_links_name_files_and_headings_that_exist():
    broken = []
    for path in DOC_FILES:
        for target in LINK.findall(without_code(path.read_text(encoding="utf-8"))):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto: not checked here
            file, _, anchor = target.partition("#")
            resolved = (path.parent / file).resolve() if file else path
            if not resolved.exists():
                broken.append(f"{path.relative_to(REPO)}: {target} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                broken.append(f"{path.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, broken


def test_no_machine_paths_in_readme_and_docs():
    """Commands name data as --data_dir DIR or $DATA, never this project's build machine."""
    offenders = [f"{path.relative_to(REPO)}: {match}"
                 for path in DOC_FILES
                 for match in re.findall(r"\.\./shared/\S*|/work/\S*|/home/\S*|/tmp/mdgen\S*",
                                         path.read_text(encoding="utf-8"))]
    assert not offenders, offenders
