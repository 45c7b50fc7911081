"""Question templates: which trained module a Mathematics question's wording belongs to.

The generator of the Mathematics Dataset writes each module's questions from a fixed set
of sentences with numbers in them ("What is the tens digit of 2934?", "Calculate -5 - 17.").
A question's *template* is the question with every number replaced by ``N``
(:func:`question_template`); a module's templates are those of its training questions
(:func:`module_templates`). A model trained on some modules has seen only their
templates, so a question whose template is none of them is outside what it was trained
on (:class:`ModuleTemplates`). On this project's data the templates of the four focus
modules (10, 21, 108 and 56 of them) occur in no training question of the other 52
modules.

The rule reads the wording only, and errs both ways:

* a question of a trained module in words the generator never uses ("add 12 to 30",
  "What is 12 +30?") is reported outside, though the model may answer it;
* a question of a trained module's template with numbers unlike its training data
  (longer, more decimals) is reported inside: of the extrapolation files, every question
  of ``arithmetic__add_or_sub_big`` and ``numbers__round_number_big`` is, and 861 of
  1,000 of ``numbers__place_value_big`` (the others ask for the ten or hundred billions
  digit, which no training question names).

The rule suits modules written from few templates (the four focus modules: at most 108
each). Modules with symbols in their questions (``algebra__*``, ``polynomials__*``: a
variable name, a polynomial) have nearly one template per question, so their unseen
questions would be reported outside: :data:`MAX_TEMPLATES_PER_MODULE` is the most a
preset records of one module (``train.save_preset`` keeps such a *wide* module in the
list with no templates, :meth:`ModuleTemplates.capped`: its questions report no module,
and no preset can claim it). On this project's twenty everyday modules' training files
(30,000 questions each) the wide ones are ``arithmetic__mixed`` (17,442 templates),
``arithmetic__mul_div_multiple`` (10,065), ``algebra__linear_1d`` (6,058) and
``arithmetic__add_sub_multiple`` (5,250); ``measurement__conversion`` (3,880) and
``comparison__kth_biggest`` (2,880) are kept, and a fresh generator sample's questions
of those two have a known template 78 and 90 % of the time; the other fourteen, all
the time or nearly (``comparison__sort`` 98.7 %). A wide module with an expression rule
(:mod:`tpr_keras.data.mathematics.expression_patterns`:
``arithmetic__add_sub_multiple``, ``arithmetic__mul_div_multiple``, ``algebra__linear_1d``)
is recognised by it instead (``ModuleTemplates``' ``patterns``:
:meth:`ModuleTemplates.with_patterns`), and is not wide.

The same rule runs in a SavedModel (``tf.strings.regex_replace`` with
:data:`NUMBER_PATTERN`, then ``tf.strings.regex_full_match`` with the patterns; RE2
syntax, which Python's ``re`` reads alike).
"""

from __future__ import annotations

import gzip
import json
import os
import re
from collections.abc import Iterable, Mapping

from tpr_keras.data.mathematics.expression_patterns import EXPRESSION_PATTERNS
from tpr_keras.data.mathematics.files import TRAIN_DIFFICULTIES
from tpr_keras.data.mathematics.parsing import parse_mathematics_file

#: A number as the generator writes one: optional minus, digits, optional decimals.
NUMBER_PATTERN = r"-?[0-9]+(?:\.[0-9]+)?"
#: What a number becomes in a template.
NUMBER_MARK = "N"
#: The most templates of one module for which the rule is recorded (see above).
MAX_TEMPLATES_PER_MODULE = 5000
#: The asset file of a math preset that holds its :class:`ModuleTemplates`: their JSON,
#: gzip-compressed (the templates of ``comparison__kth_biggest`` and
#: ``measurement__conversion`` are thousands of near-equal sentences: 530 kB as JSON, 30 kB
#: compressed).
TEMPLATES_ASSET = "modules.json.gz"
#: The same JSON uncompressed, as presets written before :data:`TEMPLATES_ASSET` hold it.
PLAIN_TEMPLATES_ASSET = "modules.json"

_NUMBER = re.compile(NUMBER_PATTERN)


def question_template(question: str) -> str:
    """``question`` with every number (:data:`NUMBER_PATTERN`) replaced by ``N``.

    Example:
    >>> question_template("What is -526 plus 62558774.5?")
    'What is N plus N?'
    """
    return _NUMBER.sub(NUMBER_MARK, question)


class ModuleTemplates:
    """The templates of each module a model was trained on, and the lookup of a question.

    Args:
        templates: ``{module: templates}``; a template of several modules belongs to the
            first in sorted module order.
        patterns: ``{module: regular expression}`` over a question's template, for
            trained modules whose wording no list holds (:mod:`.expression_patterns`);
            consulted, in sorted module order, only for a question whose template is in
            no module's list.

    Raises:
        ValueError: no modules, or a pattern of a module not among ``templates``.

    Example:
    >>> known = ModuleTemplates({"numbers__place_value": ["What is the N digit of N?"],
    ...                          "arithmetic__add_or_sub": ["What is N + N?"]})
    >>> known.module_of("What is 12 + 30?"), known.module_of("Solve 3*x = 6 for x.")
    ('arithmetic__add_or_sub', '')
    """

    def __init__(self, templates: Mapping[str, Iterable[str]],
                 patterns: Mapping[str, str] | None = None) -> None:
        self.templates = {m: sorted(set(t)) for m, t in sorted(templates.items())}
        if not self.templates:
            raise ValueError("no modules: a model is trained on at least one")
        self.patterns = dict(sorted((patterns or {}).items()))
        unknown = sorted(set(self.patterns) - set(self.templates))
        if unknown:
            raise ValueError(f"patterns of module(s) {', '.join(unknown)} that are not "
                             f"trained ({', '.join(self.templates)})")
        self._compiled = [(m, re.compile(p)) for m, p in self.patterns.items()]
        self.lookup: dict[str, str] = {}
        for module, texts in self.templates.items():
            for text in texts:
                self.lookup.setdefault(text, module)

    def capped(self, limit: int = MAX_TEMPLATES_PER_MODULE) -> ModuleTemplates:
        """These templates with every module of more than ``limit`` kept with none (its
        pattern, if it has one, kept).

        Example:
        >>> ModuleTemplates({"a": ["N + N", "N - N"], "b": ["N"]}).capped(1).templates
        {'a': [], 'b': ['N']}
        """
        return ModuleTemplates({m: t if len(t) <= limit else []
                                for m, t in self.templates.items()}, self.patterns)

    def with_patterns(self, patterns: Mapping[str, str] = EXPRESSION_PATTERNS
                      ) -> ModuleTemplates:
        """These templates with the ``patterns`` of their trained modules added (replacing
        a module's own).

        Example:
        >>> wide = ModuleTemplates({"arithmetic__add_sub_multiple": [], "b": ["N"]})
        >>> wide.wide, wide.with_patterns().wide
        (['arithmetic__add_sub_multiple'], [])
        """
        return ModuleTemplates(self.templates, {
            **self.patterns, **{m: p for m, p in patterns.items() if m in self.templates}})

    @property
    def wide(self) -> list[str]:
        """The modules kept with no templates (:meth:`capped`) and no pattern: their
        questions report no module."""
        return [m for m, t in self.templates.items() if not t and m not in self.patterns]

    @property
    def modules(self) -> list[str]:
        """The trained modules, sorted."""
        return list(self.templates)

    def module_of(self, question: str) -> str:
        """The trained module whose template ``question`` has, else the first whose
        pattern its template matches, else ``""``."""
        template = question_template(question)
        module = self.lookup.get(template)
        if module is not None:
            return module
        return next((m for m, p in self._compiled if p.fullmatch(template)), "")

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ModuleTemplates) and other.templates == self.templates
                and other.patterns == self.patterns)

    def save(self, path: str | os.PathLike) -> None:
        """Writes ``{module: [templates]}`` as JSON (a preset's :data:`TEMPLATES_ASSET`),
        or, with patterns, ``{"modules": {module: [templates]}, "patterns": {module:
        pattern}}``; gzip-compressed when ``path`` ends in ``.gz`` (with no time stamp: the
        same templates give the same bytes)."""
        data = ({"modules": self.templates, "patterns": self.patterns} if self.patterns
                else self.templates)
        text = json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
        if os.fspath(path).endswith(".gz"):
            with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb",
                                                        filename="", mtime=0) as f:
                f.write(text.encode("utf-8"))
            return
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)

    @classmethod
    def load(cls, path: str | os.PathLike) -> ModuleTemplates:
        """Reads what :meth:`save` wrote (compressed when ``path`` ends in ``.gz``).

        Raises:
            ValueError: not a JSON object of module -> list of strings (with patterns:
                ``modules`` so, ``patterns`` module -> string, each a valid regular
                expression of a trained module), or a ``.gz`` file that is not gzip.
        """
        opener = gzip.open if os.fspath(path).endswith(".gz") else open
        try:
            with opener(path, "rt", encoding="utf-8") as f:
                data = json.load(f)
        except gzip.BadGzipFile as error:
            raise ValueError(f"{path}: {error}") from None
        patterns = {}
        if isinstance(data, dict) and set(data) == {"modules", "patterns"}:
            data, patterns = data["modules"], data["patterns"]
            if not isinstance(patterns, dict) or not all(
                    isinstance(p, str) for p in patterns.values()):
                raise ValueError(f"{path}: expected patterns as {{module: pattern}}")
        if not isinstance(data, dict) or not all(
                isinstance(t, list) and all(isinstance(s, str) for s in t)
                for t in data.values()):
            raise ValueError(f"{path}: expected {{module: [templates]}}")
        try:
            return cls(data, patterns)
        except (ValueError, re.error) as error:
            raise ValueError(f"{path}: {error}") from None


def templates_asset(assets: Iterable[str]) -> str | None:
    """The name of the asset among ``assets`` (a preset's ``metadata["assets"]``) that holds
    its templates: :data:`TEMPLATES_ASSET`, or :data:`PLAIN_TEMPLATES_ASSET` in a preset
    written before it; None if neither."""
    names = set(assets)
    return next((n for n in (TEMPLATES_ASSET, PLAIN_TEMPLATES_ASSET) if n in names), None)


def module_templates(data_dir: str | os.PathLike, modules: Iterable[str]) -> ModuleTemplates:
    """The templates of ``modules``' training questions (train-easy, -medium, -hard).

    Raises:
        FileNotFoundError: a module without any training file under ``data_dir``.
    """
    templates = {}
    for module in modules:
        paths = [os.path.join(data_dir, d, f"{module}.txt") for d in TRAIN_DIFFICULTIES]
        paths = [p for p in paths if os.path.isfile(p)]
        if not paths:
            raise FileNotFoundError(f"no training file of module {module!r} under {data_dir}")
        templates[module] = {question_template(q) for p in paths
                             for q in parse_mathematics_file(p, None, None)[0]}
    return ModuleTemplates(templates)
