"""Whether a string is a formula of the entailment models' grammar (its in-graph twin, for
the SavedModel, is :func:`tpr_keras.export.entailment_grammar.well_formed`).

The grammar of the DeepMind logical entailment dataset (every formula of its splits
follows it): ``F := v | ~(F) | (F c F)``, a variable ``v`` in ``a``-``z``, a binary
connective ``c`` in ``& | >``; whitespace (``IGNORED_CHARACTERS``) is ignored. The
check reduces the formula, innermost first, ``~(v)`` and ``(v c v)`` to ``v``, one
nesting level a pass (every innermost match of a pass at once), until nothing changes: a
formula is well formed iff it ends as one variable. At most :data:`MAX_DEPTH` passes: a
formula nested deeper is reported as not well formed (the dataset nests far less).
"""

from __future__ import annotations

import re

from tpr_keras.data.entailment import IGNORED_CHARACTERS

#: Passes (nesting levels) checked; deeper formulas count as not well formed.
MAX_DEPTH = 256
#: The reductions (RE2 and Python ``re`` alike) and what a reduced formula is.
NOT_PATTERN = r"~\([a-z]\)"
BINARY_PATTERN = r"\([a-z][&|>][a-z]\)"
VARIABLE_PATTERN = r"[a-z]"
#: The ignored characters as one class (RE2 and Python ``re``), each written as ``\\xHH``.
IGNORED_PATTERN = "[" + "".join(f"\\x{ord(c):02x}" for c in IGNORED_CHARACTERS) + "]"
_NOT, _BINARY = re.compile(NOT_PATTERN), re.compile(BINARY_PATTERN)
_DROP = re.compile(IGNORED_PATTERN)


def is_well_formed(formula: str) -> bool:
    """Whether ``formula`` (whitespace ignored) is a formula of the grammar.

    >>> is_well_formed("((a&b)>~(c))"), is_well_formed("p AND q"), is_well_formed("")
    (True, False, False)
    """
    text = _DROP.sub("", formula)
    for _ in range(MAX_DEPTH):
        reduced = _BINARY.sub("a", _NOT.sub("a", text))
        if reduced == text:
            break
        text = reduced
    return re.fullmatch(VARIABLE_PATTERN, text) is not None
