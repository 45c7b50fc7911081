"""docs/layers.md is what ``python -m tools.layer_reference`` writes from the docstrings,
and every documented layer's docstring has the sections the reference shows."""

import importlib
import inspect
import os

import keras
import pytest

from tools import layer_reference

DOC = os.path.join(layer_reference.ROOT, layer_reference.OUTPUT)


def test_docs_layers_md_is_generated_from_the_docstrings():
    with open(DOC, encoding="utf-8") as f:
        committed = f.read()
    assert committed == layer_reference.generate(), (
        "docs/layers.md is stale: run python -m tools.layer_reference")


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
                assert name in documented, f"{name} is missing from tools.layer_reference.LAYERS"
                assert getattr(layers, name) is value  # importable from tpr_keras.layers


def test_check_fails_on_a_stale_file_and_passes_after_writing(tmp_path, capsys):
    output = str(tmp_path / "layers.md")
    assert layer_reference.main(["--check", f"--output={output}"]) == 1  # missing
    with open(output, "w", encoding="utf-8") as f:
        f.write("# stale\n")
    assert layer_reference.main(["--check", f"--output={output}"]) == 1
    assert "is stale" in capsys.readouterr().err
    assert layer_reference.main([f"--output={output}"]) == 0
    assert layer_reference.main(["--check", f"--output={output}"]) == 0
    with open(output, encoding="utf-8") as f:
        assert f.read() == layer_reference.generate()


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
