"""Expression rules: a module recognised by the shape of its questions, not by a list
of their wordings.

A *wide* module (:mod:`tpr_keras.data.mathematics.templates`) writes nearly every question
in a wording of its own, because the expression itself is the wording: every question of
``arithmetic__add_sub_multiple`` is an expression of numbers, ``+``, ``-`` and parentheses
("What is 4 - (-2 - 7) + 1?"), and 300,000 of its training questions have 15,276
templates. A list of templates cannot recognise its unseen questions; a regular
expression over the template (numbers already replaced by ``N``) can. A module's rule is
consulted only for a question whose template no module's list holds, so a module recorded
by its templates keeps all of its questions.

:data:`EXPRESSION_PATTERNS` holds the rules, written in the syntax RE2 and Python's ``re``
read alike (no look-arounds, no back-references), so the same rule runs in a SavedModel
(``tf.strings.regex_full_match``). Measured on the twenty-module project data:

* ``arithmetic__add_sub_multiple``: one of the four openings the generator writes ("What
  is", "What is the value of" with ``?``; "Calculate", "Evaluate" with ``.``; or none),
  then at least three numbers joined by `` + `` and `` - ``, each number optionally
  opening parentheses (``(``, ``-(``) before it and closing them after. It holds every
  question of the module's training files (6,000 in the shared data) and of a fresh
  generator sample (1,000). Of the 1.1 million questions of every other file of the
  shared data (training, interpolate, extrapolate) and the fresh sample it takes only its
  own extrapolation module's (``arithmetic__add_sub_multiple_longer``, all 1,000), 178 of
  ``arithmetic__mixed`` and one of ``arithmetic__mixed_longer`` (expressions with no
  ``*`` or ``/``: sums and differences all the same).
  ``arithmetic__add_or_sub`` (two numbers, one operator) never matches: the module's
  questions have at least three operators, the rule asks for two.
* ``algebra__linear_1d``: "Solve", an equation whose sides are terms (a number, a
  variable, a number times a variable: ``N*x``) joined by `` + `` and `` - ``, "for", a
  variable, ``.``. It holds every question of the module's training files, interpolate
  file and fresh sample (8,000), and no question of any other file
  (``algebra__linear_1d_composed``'s begin with another sentence;
  ``algebra__linear_2d``'s hold a comma; ``algebra__polynomial_roots``' a power).

* ``arithmetic__mul_div_multiple``: the same four openings, then at least three numbers
  joined by ``*`` and ``/`` written with no spaces, each number optionally opening
  parentheses before it and closing them after (``(-5)`` is a number in parentheses: the
  minus belongs to the number). It holds every question of the module's training and
  interpolate files (7,000), of a fresh generator sample (1,000) and of its extrapolation
  module (``arithmetic__mul_div_multiple_longer``, 1,000). Of every other file it takes
  only ``arithmetic__mixed`` questions with no ``+`` or ``-`` between numbers (1,610 of
  7,000; 203 of a fresh 1,000; 7 of ``arithmetic__mixed_longer``'s 1,000): a fifth of ``mixed``
  is worded exactly as ``mul_div_multiple`` is, so no rule on the wording could tell them
  apart, and a product of quotients is the same computation whichever module asked it.
  ``arithmetic__mul``'s ``N*N`` (one operator) never matches, and its questions keep
  their module by their templates anyway.

``arithmetic__mixed`` has no rule of its own: its questions mix all four operators in
any shape, and its pure sums and pure products go to the two rules above.
"""

from __future__ import annotations

#: One number of an expression: opening parentheses (each may be negated) before it,
#: closing ones after.
_OPERAND = r"(?:-?\()*N\)*"
#: At least three numbers joined by `` + `` and `` - ``.
_SUM = rf"{_OPERAND}(?: [-+] {_OPERAND}){{2,}}"

#: One factor of a product: opening parentheses before a number, closing ones after.
_FACTOR = r"\(*N\)*"
#: At least three numbers joined by ``*`` and ``/`` (no spaces, as the generator writes).
_PRODUCT = rf"{_FACTOR}(?:[*/]{_FACTOR}){{2,}}"

#: One term of a linear equation: a number, a variable or a number times a variable.
_TERM = r"(?:N\*)?[a-z]|N"
#: One side of a linear equation: terms joined by `` + `` and `` - ``.
_SIDE = rf"-?(?:{_TERM})(?: [-+] (?:{_TERM}))*"


def _asked(expression: str) -> str:
    """``expression`` in the generator's four openings of an arithmetic question: "What is"
    or "What is the value of" with ``?``, "Calculate" or "Evaluate" with ``.``, or bare."""
    return (rf"(?:What is (?:the value of )?{expression}\?|(?:Calculate|Evaluate) "
            rf"{expression}\.|{expression})")


#: ``{module: pattern}``: the rules of the wide modules that have one (see above), matched
#: against a question's whole template.
EXPRESSION_PATTERNS = {
    "algebra__linear_1d": rf"Solve {_SIDE} = {_SIDE} for [a-z]\.",
    "arithmetic__add_sub_multiple": _asked(_SUM),
    "arithmetic__mul_div_multiple": _asked(_PRODUCT),
}
