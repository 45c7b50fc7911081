"""docs/layers.md and its family pages are what ``python -m tools.layer_reference`` writes
from the docstrings, and every documented layer's docstring has the sections the reference
shows."""

import importlib
import inspect
import os
import re

import keras
import pytest

from tools import layer_reference

DOCS = os.path.join(layer_reference.ROOT, layer_reference.OUTPUT_DIR)
NAMES = [layer_reference.INDEX] + [layer_reference.page_name(family[0])
                                    for family in layer_reference.FAMILIES]
MAX_LINES = 400  # the project's rule for a page


@pytest.fixture(scope="module")
def pages():
    return layer_reference.generate()


def _headings(text):
    """GitHub's anchors of a page's headings (fenced code left out)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
            for heading in re.findall(r"^#+ (.+)$", text, re.M)}


def test_the_pages_are_the_index_and_one_per_family(pages):
    assert list(pages) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_each_page_is_generated_from_the_docstrings(name, pages):
    with open(os.path.join(DOCS, name), encoding="utf-8") as f:
        committed = f.read()
    assert committed == pages[name], (
        f"docs/{name} is stale: run python -m tools.layer_reference")


@pytest.mark.parametrize("name", NAMES)
def test_each_page_is_at_most_400_lines(name, pages):
    assert pages[name].count("\n") <= MAX_LINES, (
        f"docs/{name} has over {MAX_LINES} lines: split its family")


def test_every_layer_is_on_exactly_one_family_page_and_in_the_index(pages):
    index = pages[layer_reference.INDEX]
    family_pages = {name: text for name, text in pages.items()
                    if name != layer_reference.INDEX}
    assert len(family_pages) == len(layer_reference.FAMILIES)
    for _, name in layer_reference.LAYERS:
        on = [page for page, text in family_pages.items()
              if re.search(r"^## %s$" % name, text, re.M)]
        assert len(on) == 1, f"{name} is on {on}, not on exactly one family page"
        assert f"[{name}]({on[0]}#{layer_reference.anchor(name)})" in index, (
            f"the index does not link {name} to {on[0]}")
    assert len(set(layer_reference.LAYERS)) == len(layer_reference.LAYERS)


def test_index_links_resolve_to_anchors_on_the_family_pages(pages):
    index = pages[layer_reference.INDEX]
    links = re.findall(r"\]\((layers_\w+\.md)(?:#([\w-]+))?\)", index)
    assert sum(1 for _, anchor in links if anchor) == len(layer_reference.LAYERS)
    for page, anchor in links:
        assert page in pages, f"the index links to {page}, which is not generated"
        if anchor:
            assert anchor in _headings(pages[page]), f"{page} has no heading #{anchor}"
    for page, text in pages.items():
        if page != layer_reference.INDEX:
            assert f"]({layer_reference.INDEX})" in text, f"{page} does not link the index"


@pytest.mark.parametrize("module,name", layer_reference.LAYERS)
def test_each_docstring_is_keras_hub_style(module, name):
    cls = getattr(importlib.import_module(module), name)
    doc = inspect.cleandoc(cls.__doc__)
    sections = [s.split(" (")[0] for s in layer_reference.section_names(cls)]
    for required in layer_reference.REQUIRED:
        assert required in sections, f"{name}'s docstring has no {required}: section"
    assert sections[-1] == "Example"
    assert "eq." in doc or "eqs." in doc, f"{name}'s docstring names no equation"
    # Every constructor argument is documented in Args.
    args = next(body for header, body in layer_reference._sections(doc) if header == "Args")
    documented = " ".join(args)
    for parameter in list(inspect.signature(cls.__init__).parameters)[1:]:
        if parameter != "kwargs":
            assert parameter in documented, f"{name}: Args does not name {parameter}"


def test_every_public_layer_is_documented():
    documented = {name for _, name in layer_reference.LAYERS}
    import tpr_keras.layers as layers
    from tpr_keras.models import memn2n, tp_transformer

    # The families' packages export the layers that tpr_keras.layers loads lazily.
    for module in (layers, memn2n, tp_transformer):
        for name, value in vars(module).items():
            if (isinstance(value, type) and issubclass(value, keras.layers.Layer)
                    and not issubclass(value, keras.Model)
                    and not name.startswith("_") and value.__module__.startswith("tpr_keras")):
                assert name in documented, (
                    f"{name} is missing from tools.layer_reference.FAMILIES")
                assert getattr(layers, name) is value  # importable from tpr_keras.layers


def test_check_fails_on_stale_pages_and_passes_after_writing(tmp_path, capsys, pages):
    output_dir = str(tmp_path)
    assert layer_reference.main(["--check", f"--output_dir={output_dir}"]) == 1  # missing
    assert capsys.readouterr().err.count("is stale") == len(pages)
    assert layer_reference.main([f"--output_dir={output_dir}"]) == 0
    assert layer_reference.main(["--check", f"--output_dir={output_dir}"]) == 0
    for name, text in pages.items():
        with open(tmp_path / name, encoding="utf-8") as f:
            assert f.read() == text
    stale = tmp_path / "layers_tpru.md"
    stale.write_text("# stale\n", encoding="utf-8")
    assert layer_reference.main(["--check", f"--output_dir={output_dir}"]) == 1
    out, err = capsys.readouterr()
    assert "layers_tpru.md is stale" in err and err.count("is stale") == 1
    assert "+# Layer reference: TPRU" in out


def test_markdown_of_a_docstring():
    class Example(keras.layers.Layer):
        """One line, eq. 1.

        Text with a :class:`~tpr_keras.layers.TPRU` and a block::

            y = f(x)

        Args:
            units: the width,
                on two lines.
            a, b: two at once.

        Masking:
            Passes it on.

        Example:
        >>> Example(3)
        """

        def __init__(self, units, a=1, b=2, **kwargs):
            super().__init__(**kwargs)

    import types

    module = types.ModuleType("fake.layers.example")
    module.Example = Example
    import sys

    sys.modules["fake.layers.example"] = module
    try:
        text = "\n".join(layer_reference.layer_markdown("fake.layers.example", "Example"))
    finally:
        del sys.modules["fake.layers.example"]
    assert text == "\n".join([
        "## Example", "", "```python", "fake.layers.Example(units, a=1, b=2, **kwargs)", "```",
        "", "One line, eq. 1.", "", "Text with a ``TPRU`` and a block:", "", "```",
        "y = f(x)", "```", "", "",
        "**Args**", "", "- `units`: the width, on two lines.", "- `a, b`: two at once.", "",
        "**Masking**", "", "Passes it on.", "",
        "**Example**", "", "```python", ">>> Example(3)", "```", ""])
