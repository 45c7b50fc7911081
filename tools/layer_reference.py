"""Write docs/layers.md and its family pages, the layer reference, from the docstrings.

    python -m tools.layer_reference           # rewrite docs/layers.md and docs/layers_*.md
    python -m tools.layer_reference --check   # rewrite nothing; exit 1 with a diff if stale

docs/layers.md is the index: a table per family of :data:`FAMILIES`, each layer linked to
its section on the family's page, ``docs/layers_<family>.md``. There each layer gets a
section: its constructor's signature, then its docstring (keras-hub style: a one-line
summary, the paper and its equations, ``Args:``, ``Call arguments:`` / ``Masking:``,
``Example:``) turned into Markdown. The turning is small on purpose: a section header
(:data:`SECTIONS`) becomes a bold line, the entries of an argument section a list, ``::``
blocks and examples fenced code, and Sphinx roles (``:class:`~a.B```) plain code.
``tests/tools/test_layer_reference.py`` fails when a page is not what this writes, when a
page has over 400 lines, and when a layer's docstring lacks a section.
"""

import difflib
import importlib
import inspect
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT_DIR = "docs"
INDEX = "layers.md"

#: (slug, title, one sentence on the family, ((module, class), ...)) of every family, in
#: the order of the index; a family's page is ``layers_<slug>.md``, its layers in its order.
FAMILIES = (
    ("tpr_rnn", "TPR-RNN",
     "The blocks of TPR-RNN, from Schlag & Schmidhuber (2018), \"Learning to Reason with "
     "Third-Order Tensor Products\", in `tpr_keras.layers`.", (
         ("tpr_keras.layers.sentence_encoder", "SentenceEncoder"),
         ("tpr_keras.layers.mlp", "TanhMLP"),
         ("tpr_keras.layers.scalar_layer_norm", "ScalarLayerNorm"),
         ("tpr_keras.layers.tpr_update", "TPRUpdate"),
         ("tpr_keras.layers.tpr_inference", "TPRInference"),
     )),
    ("tpru", "TPRU",
     "The TPR recurrent unit, from Tang, Smolensky & de Sa (2018), \"Learning Distributed "
     "Representations of Symbolic Structure Using Binding and Unbinding Operations\", in "
     "`tpr_keras.layers`.", (
         ("tpr_keras.layers.tpru_cell", "TPRUCell"),
         ("tpr_keras.layers.tpru", "TPRU"),
     )),
    ("tp_attention", "TP-Transformer attention",
     "The TP-Transformer's attention and the layer norm around it, from Schlag et al. "
     "(2019), \"Enhancing the Transformer with Explicit Relational Encoding for Math "
     "Problem Solving\", in `tpr_keras.layers`.", (
         ("tpr_keras.layers.tp_attention", "TPMultiHeadAttention"),
         ("tpr_keras.layers.layer_norm", "LayerNorm"),
     )),
    ("tp_transformer", "TP-Transformer",
     "The TP-Transformer's other layers, from Schlag et al. (2019): feed-forward, encoder "
     "and decoder layers and the embedding, in `tpr_keras.models.tp_transformer`; its "
     "attention and layer norm are on [their own page](layers_tp_attention.md).", (
         ("tpr_keras.models.tp_transformer.tp_transformer_layers", "PositionwiseFeedForward"),
         ("tpr_keras.models.tp_transformer.tp_transformer_layers",
          "TPTransformerEncoderLayer"),
         ("tpr_keras.models.tp_transformer.tp_transformer_layers",
          "TPTransformerDecoderLayer"),
         ("tpr_keras.models.tp_transformer.tp_transformer_embedding",
          "TPTransformerEmbedding"),
     )),
    ("memn2n", "MemN2N",
     "The layers of the MemN2N baseline, from Sukhbaatar et al. (2015), \"End-To-End "
     "Memory Networks\", in `tpr_keras.models.memn2n`.", (
         ("tpr_keras.models.memn2n.memn2n_embedding", "MemN2NEmbedding"),
         ("tpr_keras.models.memn2n.memn2n_hop", "MemN2NHop"),
         ("tpr_keras.models.memn2n.memn2n_network", "MemN2NNetwork"),
     )),
)

#: (module, class) of every layer documented, family by family.
LAYERS = tuple(layer for _, _, _, layers in FAMILIES for layer in layers)

#: Section headers of a docstring (a whole line at the docstring's indentation, ending in
#: ":"); the first three hold ``name: description`` entries.
ARGUMENT_SECTIONS = ("Args", "Arguments", "Call arguments")
SECTIONS = ARGUMENT_SECTIONS + ("Masking", "Example", "Examples", "Returns",
                                "Implementation notes")
#: What every documented layer's docstring must have (the test checks it).
REQUIRED = ("Args", "Masking", "Example")

HEADER = re.compile(r"^(%s)\b[^:]*:$" % "|".join(re.escape(s) for s in SECTIONS))
ROLE = re.compile(r":(?:class|func|meth|mod|data|attr):`(~?)([^`]+)`")
ENTRY = re.compile(r"^([\w*][\w*, ]*):(?:\s+(.*))?$")


def _roles(text):
    """``:class:`~a.b.C``` -> ```C```; ``:func:`a.b``` -> ```a.b```."""
    return ROLE.sub(lambda m: "``%s``" % (m.group(2).rsplit(".", 1)[-1] if m.group(1)
                                          else m.group(2)), text)


def _indent(line):
    return len(line) - len(line.lstrip())


def _dedent(lines):
    width = min((_indent(line) for line in lines if line.strip()), default=0)
    return [line[width:] for line in lines]


def _text(lines):
    """Plain docstring text; a line ending in ``::`` opens a fenced block of the lines
    indented below it."""
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip().endswith("::"):
            out.append(line.rstrip()[:-1])
            base, block, i = _indent(line), [], i + 1
            while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > base):
                block.append(lines[i])
                i += 1
            while block and not block[0].strip():
                block.pop(0)
            while block and not block[-1].strip():
                block.pop()
            out += ["", "```"] + _dedent(block) + ["```", ""]
            continue
        out.append(line)
        i += 1
    return out


def _entries(lines):
    """``name: description`` entries (continuations indented below) as a list."""
    out, current = [], None
    for line in _dedent(lines):
        match = ENTRY.match(line) if line and not line[0].isspace() else None
        if match:
            current = ["- `%s`: %s" % (match.group(1), (match.group(2) or "").strip())]
            out.append(current)
        elif line.strip() and current is not None:
            current.append(line.strip())
        elif line.strip():
            out.append([line.strip()])
    return [" ".join(entry).rstrip() for entry in out]


def _sections(doc):
    """``[(header or None, lines)]`` of a cleaned docstring: a section is its header line
    and the lines indented below it."""
    sections, name, body = [], None, []
    for line in doc.splitlines():
        if HEADER.match(line):
            sections.append((name, body))
            name, body = line[:-1], []
        elif (name is not None and not name.startswith("Example") and line.strip()
              and not line[0].isspace()):
            # Back at the docstring's margin: the section is over, plain text again (an
            # example's doctest lines may sit at the margin; it runs to the next header).
            sections.append((name, body))
            name, body = None, [line]
        else:
            body.append(line)
    sections.append((name, body))
    return sections


def section_names(cls):
    """The section headers of ``cls``'s docstring (``"Call arguments (...)"`` as written)."""
    return [name for name, _ in _sections(inspect.cleandoc(cls.__doc__)) if name]


def _signature(module, cls):
    """``package.Class(arg=default, ...)``, named from the package that exports it."""
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return "%s.%s%s" % (module.rsplit(".", 1)[0], cls.__name__, inspect.Signature(parameters))


def layer_markdown(module, name):
    """The Markdown section of one layer."""
    cls = getattr(importlib.import_module(module), name)
    doc = _roles(inspect.cleandoc(cls.__doc__))
    out = ["## %s" % name, "", "```python", _signature(module, cls), "```", ""]
    for header, body in _sections(doc):
        if header is not None:
            out += ["**%s**" % header.replace("``", "`"), ""]
        body = _dedent(body)
        while body and not body[0].strip():
            body.pop(0)
        while body and not body[-1].strip():
            body.pop()
        if header and header.split(" (")[0] in ARGUMENT_SECTIONS:
            out += _entries(body)
        elif header in ("Example", "Examples"):
            out += ["```python"] + body + ["```"]
        else:
            out += _text(body)
        out.append("")
    return out


def _summary(module, name):
    cls = getattr(importlib.import_module(module), name)
    return _roles(inspect.cleandoc(cls.__doc__).splitlines()[0])


GENERATED = ("<!-- Generated by `python -m tools.layer_reference` from the layers' "
             "docstrings: edit those, then run it. -->")


def page_name(slug):
    """The file name of a family's page."""
    return "layers_%s.md" % slug


def anchor(name):
    """The anchor of a layer's section (GitHub's slug of its ``## Name`` heading)."""
    return name.lower()


def _tidy(lines):
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).rstrip() + "\n"


def index_markdown():
    """The text of docs/layers.md, the index."""
    lines = [
        GENERATED,
        "",
        "# Layer reference",
        "",
        "The Keras 3 layers of tpr-keras, on TensorFlow and JAX. The shared TPR blocks are in "
        "`tpr_keras.layers`; the TP-Transformer's own layers in "
        "`tpr_keras.models.tp_transformer` and MemN2N's in `tpr_keras.models.memn2n` (all "
        "also importable from `tpr_keras.layers`). Each "
        "section is the layer's docstring: what it computes, with the paper's equation "
        "numbers, its arguments, how it treats Keras masks (e.g. from "
        "`keras.layers.Embedding(mask_zero=True)`) and an example.",
        "",
        "The sections are on one page per family; the tables below link to each.",
        "",
    ]
    for slug, title, blurb, layers in FAMILIES:
        page = page_name(slug)
        lines += ["## %s" % title, "", "[%s](%s): %s" % (page, page, blurb), "",
                  "| layer | what it is |", "|---|---|"]
        for module, name in layers:
            summary = _summary(module, name).replace("``", "`").replace("|", "\\|")
            lines.append("| [%s](%s#%s) | %s |" % (name, page, anchor(name), summary))
        lines.append("")
    return _tidy(lines)


def family_markdown(slug, title, blurb, layers):
    """The text of one family's page."""
    lines = [GENERATED, "", "# Layer reference: %s" % title, "", blurb, "",
             "The other families are listed in the index, [%s](%s)." % (INDEX, INDEX), ""]
    for module, name in layers:
        lines += layer_markdown(module, name)
    return _tidy(lines)


def generate():
    """``{file name: text}`` of every page, relative to docs/: the index, then the
    family pages."""
    pages = {INDEX: index_markdown()}
    for family in FAMILIES:
        pages[page_name(family[0])] = family_markdown(*family)
    return pages


def _read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def main(argv=None):
    from serving.command_flags import Command

    parser = Command("python -m tools.layer_reference", __doc__.split("\n\n")[0])
    parser.boolean("check", False, "rewrite nothing; exit 1 and print a diff per stale page")
    parser.string("output_dir", OUTPUT_DIR,
                  "the folder of the pages to write or check (relative: to the repository)")
    args = parser.parse(argv)
    stale = []
    for name, text in generate().items():
        path = os.path.join(ROOT, args.output_dir, name)
        current = _read(path)
        if current == text:
            continue
        if args.check:
            sys.stdout.writelines(difflib.unified_diff(
                current.splitlines(True), text.splitlines(True), path, "generated"))
            stale.append(path)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    for path in stale:
        print(f"{path} is stale: run python -m tools.layer_reference", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
