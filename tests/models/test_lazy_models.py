"""``tpr_keras.models`` loads its families on first use: one family's import
does not import the others.

Each check's code runs with a clean ``tpr_keras``: every ``tpr_keras`` module is dropped
from ``sys.modules`` before it, so what it imports is imported afresh. The checks share one
interpreter (started once for the module, from the repo root): Keras and its backend,
imported once, are the slow part of a fresh interpreter and are not what is checked.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: Runs each ``[name, code]`` of the JSON list in argv[1] after dropping every ``tpr_keras``
#: module; prints ``{name: {"stdout": ..., "error": traceback or None}}`` as JSON.
DRIVER = textwrap.dedent("""
    import contextlib, io, json, sys, traceback

    results = {}
    for name, code in json.loads(sys.argv[1]):
        for module in [m for m in sys.modules if m.split(".")[0] == "tpr_keras"]:
            del sys.modules[module]
        buffer, error = io.StringIO(), None
        try:
            with contextlib.redirect_stdout(buffer):
                exec(code, {"__name__": "__main__"})
        except BaseException:
            error = traceback.format_exc()
        results[name] = {"stdout": buffer.getvalue(), "error": error}
    print(json.dumps(results))
""")


FAMILIES = ("tpr_rnn", "memn2n", "entailment", "tp_transformer")
FAMILY_OF = {"TPRRNN": "tpr_rnn", "MemN2N": "memn2n", "PlainEntailmentModel": "entailment",
             "TPTransformer": "tp_transformer"}

#: ``{name: code}`` of the checks, run in this order: the registration check first, so
#: that no check before it registered a class.
CHECKS = {
    "all_families": """
        import keras
        import tpr_keras.models.all_families  # noqa: F401
        names = ["TPRRNN", "MemN2N", "PlainEntailmentModel", "BiDAFEntailmentModel",
                 "TPTransformer", "MemN2NNetwork"]
        print(all(keras.saving.get_registered_object(f"tpr_keras>{n}") for n in names))
    """,
    **{name: f"""
        import sys
        from tpr_keras.models import {name}
        print(sorted(f for f in {FAMILIES!r} if f"tpr_keras.models.{{f}}" in sys.modules))
    """ for name in FAMILY_OF},
    "package": """
        import sys
        import tpr_keras.models as models
        print(sorted(m for m in sys.modules if m.startswith("tpr_keras.models.")))
        assert models.MEMN2N_PAPER_SIZES is models.memn2n.PAPER_SIZES
        assert models.TP_TRANSFORMER_PAPER_SIZES is models.tp_transformer.PAPER_SIZES
        assert models.TPR_RNN_PAPER_SIZES is models.tpr_rnn.PAPER_SIZES
        assert set(models.__all__) <= set(dir(models))
        for name in models.__all__:
            getattr(models, name)
        print("ok")
    """,
    "shared_layers": """
        import sys
        import tpr_keras.layers as layers
        print(sorted(m for m in sys.modules if m.startswith("tpr_keras.models.")))
        from tpr_keras.models import memn2n, tp_transformer
        assert layers.MemN2NNetwork is memn2n.MemN2NNetwork
        assert layers.TPTransformerEmbedding is tp_transformer.TPTransformerEmbedding
        assert layers.TPTransformerEncoderLayer is tp_transformer.TPTransformerEncoderLayer
        print("ok")
    """,
}


@pytest.fixture(scope="module")
def outputs():
    """``{name: output}`` of every check in :data:`CHECKS`, run by :data:`DRIVER` in one
    subprocess."""
    checks = [[name, textwrap.dedent(code)] for name, code in CHECKS.items()]
    result = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(checks)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().split("\n")[-1])


def run(outputs, name):
    """The stdout of check ``name``, which must have raised nothing."""
    assert outputs[name]["error"] is None, outputs[name]["error"][-3000:]
    return outputs[name]["stdout"]


@pytest.mark.parametrize("name, family", list(FAMILY_OF.items()))
def test_one_family_imports_only_that_family(outputs, name, family):
    out = run(outputs, name)
    assert out.split("\n")[-2] == repr([family])


def test_package_import_loads_no_family_and_names_resolve(outputs):
    out = run(outputs, "package")
    assert out.split("\n")[-3] == "[]" and out.split("\n")[-2] == "ok"


def test_all_families_registers_every_model_class(outputs):
    out = run(outputs, "all_families")
    assert out.split("\n")[-2] == "True"


def test_shared_layers_import_no_family_and_keep_the_family_names(outputs):
    out = run(outputs, "shared_layers")
    assert out.split("\n")[-3] == "[]" and out.split("\n")[-2] == "ok"


@pytest.mark.tensorflow_backend  # the exporters import TensorFlow
def test_the_families_keep_the_names_of_their_exporters_and_tokenizers():
    """``tpr_keras.models.babi.export_babi_model`` and the other names a family kept are the
    objects of ``tpr_keras.export``, and each task model's exporter resolves there."""
    import importlib

    import tpr_keras.export as export
    from tpr_keras.models import (BabiAnswerer, EntailmentClassifier, MathAnswerer, babi,
                                  entailment, tp_transformer)

    kept = {name for family in (babi, entailment, tp_transformer)
            for name in family._TENSORFLOW_EXPORTS}
    assert {"export_babi_model", "EntailmentTokenizer", "MathTokenizer"} <= kept
    for family in (babi, entailment, tp_transformer):
        for name in family._TENSORFLOW_EXPORTS:
            assert getattr(family, name) is getattr(export, name), (family.__name__, name)
    for task in (BabiAnswerer, EntailmentClassifier, MathAnswerer):
        module, _, function = task.exporter.partition(":")
        assert module.startswith("tpr_keras.export."), task.exporter
        assert getattr(importlib.import_module(module), function) is getattr(export, function)
