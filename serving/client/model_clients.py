"""Clients of the served tpr-keras models: bAbI (:class:`BabiClient`, :func:`ask`),
Mathematics (:class:`MathClient`, :func:`solve`) and entailment (:class:`EntailmentClient`),
each a :class:`~serving.client.serving_client.ServingClient` with its model's inputs and
outputs."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import NamedTuple

from serving.client.serving_client import ServingClient


def _punctuation(token: str) -> bool:
    """A token of punctuation alone (``,`` ``;`` ``:`` ``.`` ``?`` and the like): no word."""
    return bool(token) and all(unicodedata.category(c).startswith("P") for c in token)


def agreeing(count: int | None, tokens: str | None,
             words: bool = False) -> tuple[int | None, str | None]:
    """A reply's unknown-token count and list, made to agree: both count distinct tokens
    (the export's ``unknown_words`` / ``unknown_characters`` output counts occurrences, its
    ``unknown_tokens`` lists each token once), and with ``words`` punctuation is neither
    counted nor listed (a ``,`` outside a bAbI vocabulary still reads as ``<unk>``, but it
    is no word). An export without ``unknown_tokens`` keeps its count."""
    if tokens is None:
        return count, tokens
    items = [t for t in tokens.split(" ") if t] if words else (
        tokens.split(" ") if tokens else [])
    if words:
        items = [t for t in items if not _punctuation(t)]
    items = list(dict.fromkeys(items))
    return len(items), " ".join(items)


class ReplyError(ValueError):
    """A reply without the outputs a client reads: the model asked is of another kind."""


def missing_outputs(out: dict, names: Sequence[str], model: str, family: str) -> None:
    """Raises :class:`ReplyError` (one line) when the reply lacks an output this client
    reads: the model asked is not of this family."""
    lacking = [n for n in names if n not in out]
    if lacking:
        raise ReplyError(f"model '{model}' answered without the output(s) "
                       f"{', '.join(lacking)} (its outputs: {', '.join(sorted(out)) or 'none'}): "
                       f"it is not a {family} model; --model_name names the model to ask")


def _listed(tokens: str | None, characters: bool = False) -> str:
    """`` (a, b)``: the ``unknown_tokens`` of a reply (space-separated) for a warning;
    characters quoted, so that invisible ones show."""
    if not tokens:
        return ""
    items = tokens.split(" ")
    return " (" + ", ".join(repr(t) if characters else t for t in items) + ")"


def _column(out: dict, name: str, n: int) -> list:
    """Output ``name`` of a reply, or ``n`` Nones for an export without it."""
    values = out.get(name)
    return list(values) if values is not None else [None] * n


class Answer(NamedTuple):
    """A bAbI model's answer, its top-k candidates ``(token, probability)``, best first, and
    what the model did not take in (each None: an export without that output; see
    docs/serving.md). :meth:`warnings` says it in words."""

    answer: str
    candidates: list[tuple[str, float]]
    version: int | None = None
    #: Words of the story and question outside the model's vocabulary: how many distinct
    #: words, and which (each once, space-separated); punctuation is not a word (see
    #: :func:`agreeing`).
    unknown_words: int | None = None
    unknown_tokens: str | None = None
    #: The story's sentences (0: an empty story, answered all the same), and its earliest
    #: sentences the model did not read.
    story_sentences: int | None = None
    dropped_sentences: int | None = None
    #: The question's words (0: an empty question, answered all the same).
    question_words: int | None = None
    #: The longest stories the model was trained on (0: unknown); reading more, it answers
    #: outside its training.
    trained_story_sentences: int | None = None

    def warnings(self) -> list[str]:
        """What the model did not take in, one sentence each (none: it read it all)."""
        out = []
        if self.story_sentences == 0:
            out.append("the story is empty: the model answered from no sentences at all, so "
                       "the answer (whatever its score) means nothing.")
        if self.question_words == 0:
            out.append("the question is empty: the model answered all the same, so the "
                       "answer (whatever its score) means nothing.")
        read = (self.story_sentences or 0) - (self.dropped_sentences or 0)
        if self.dropped_sentences:
            out.append(f"the story has {self.story_sentences} sentences and the model reads "
                       f"only the last {read}: the first {self.dropped_sentences} were "
                       "dropped, so the answer ignores them.")
        if self.trained_story_sentences and read > self.trained_story_sentences:
            out.append(f"the model read {read} sentences, more than the "
                       f"{self.trained_story_sentences} its training stories had: it answers "
                       "outside its training, so the answer may be wrong (whatever its "
                       "score).")
        if self.unknown_words:
            out.append(f"{self.unknown_words} word(s) of the story and question are not in "
                       f"the model's vocabulary{_listed(self.unknown_tokens)}; it read them "
                       "as <unk>, so the answer (whatever its score) may not mean anything.")
        return out


class Solution(NamedTuple):
    """A Mathematics model's greedy answer, its log-probability, and what the model did not
    take in (each None: an export without that output). :meth:`warnings` says it in words."""

    answer: str
    log_prob: float
    version: int | None = None
    #: Characters of the question outside the model's vocabulary, how many distinct ones
    #: (None: an export without the ``unknown_characters`` output).
    unknown_characters: int | None = None
    #: The trained module whose wording the question has; ``""``: none, the model was not
    #: trained on such questions (None: an export without the ``module`` output).
    module: str | None = None
    #: Those unknown characters (distinct, space-separated).
    unknown_tokens: str | None = None
    #: The question's characters (0: an empty question, answered all the same), and those
    #: past the length the model reads (not read).
    question_characters: int | None = None
    dropped_characters: int | None = None
    #: Whether the question's module is one the model claims (scored >= its claim's
    #: threshold on a fresh sample; False for ``module == ""`` too; None: an export of a
    #: preset without claims). ``--strict`` acts on it through :meth:`warnings`.
    claimed: bool | None = None

    def warnings(self) -> list[str]:
        """What the model did not take in, one sentence each (none: it read it all)."""
        out = []
        if self.question_characters == 0:
            out.append("the question is empty: the model answered all the same, so the "
                       "answer (whatever its log_prob) means nothing.")
        elif self.module == "":
            out.append("the question is worded as none of the modules whose wording the "
                       "model recognises (that of its training questions); it answered all "
                       "the same, so the answer (whatever its log_prob) may not mean "
                       "anything.")
        elif self.claimed is False:
            out.append(f"the question is worded as {self.module}, a module the model was "
                       "trained on but does not claim (it scored below its claim's threshold "
                       "on a fresh sample; python -m serving.client --coverage lists what it "
                       "claims), so the answer may well be wrong.")
        if self.dropped_characters:
            out.append(f"the question has {self.question_characters} characters and the "
                       f"model reads only the first "
                       f"{self.question_characters - self.dropped_characters}: the last "
                       f"{self.dropped_characters} were dropped.")
        if self.unknown_characters:
            out.append(f"{self.unknown_characters} character(s) of the question are not in "
                       f"the model's vocabulary{_listed(self.unknown_tokens, True)}; it read "
                       "them as <unk>.")
        return out


class BabiClient(ServingClient):
    """Client of a served bAbI model (``story``, ``question`` -> ``answer``, top-k).

    Args: as :class:`ServingClient` (``model_name`` defaults to ``babi``).
    """

    def ask(self, story: str, question: str) -> Answer:
        """Answers one question about one story."""
        return self.ask_batch([story], [question])[0]

    def ask_batch(self, stories: Sequence[str], questions: Sequence[str]) -> list[Answer]:
        """Answers several questions in one request (``stories[i]`` goes with ``questions[i]``)."""
        if len(stories) != len(questions):
            raise ValueError(f"{len(stories)} stories but {len(questions)} questions")
        out, version = self.predict({"story": stories, "question": questions})
        missing_outputs(out, ("answer", "candidates", "scores"), self.model_name, "bAbI")
        n = len(out["answer"])
        report = zip(*(_column(out, name, n) for name in Answer._fields[3:]))
        answers = [Answer(answer, list(zip(candidates, map(float, scores))), version, *extra)
                   for answer, candidates, scores, extra in zip(
                       out["answer"], out["candidates"], out["scores"], report)]
        return [a._replace(**dict(zip(("unknown_words", "unknown_tokens"), agreeing(
            a.unknown_words, a.unknown_tokens, words=True)))) for a in answers]


#: The signature of a math export whose outputs are the claimed modules' scores, and the
#: output beside them that holds the score a module needed.
COVERAGE_SIGNATURE, THRESHOLD_OUTPUT = "coverage", "threshold_percent"


class Coverage(NamedTuple):
    """What a served math model claims: ``{module: exact match %}`` on the fresh generator
    sample of the claim, and the exact match % a module needed to be claimed."""

    modules: dict[str, float]
    threshold_percent: float


class MathClient(ServingClient):
    """Client of a served Mathematics model (``question`` -> ``answer``, ``log_prob``)."""

    def __init__(self, server: str = "localhost:8500", model_name: str = "math", **kwargs):
        super().__init__(server, model_name, **kwargs)

    def solve(self, question: str) -> Solution:
        """The model's greedy answer to one question."""
        return self.solve_batch([question])[0]

    def solve_batch(self, questions: Sequence[str]) -> list[Solution]:
        """Answers several questions in one request."""
        out, version = self.predict({"question": questions})
        missing_outputs(out, ("answer", "log_prob"), self.model_name, "Mathematics")
        n = len(out["answer"])
        report = zip(*(_column(out, name, n) for name in Solution._fields[3:]))
        solutions = [Solution(a, float(lp), version, *extra)
                     for a, lp, extra in zip(out["answer"], out["log_prob"], report)]
        return [s._replace(**dict(zip(("unknown_characters", "unknown_tokens"), agreeing(
            s.unknown_characters, s.unknown_tokens)))) for s in solutions]

    def coverage(self) -> Coverage:
        """The modules the served model claims, with their scores on the fresh generator
        sample of its claim and the score a module needed (its ``coverage`` signature, no
        inputs).

        Raises:
            grpc.RpcError, RuntimeError: as :meth:`predict`; INVALID_ARGUMENT when the model
                has no ``coverage`` signature (an export of a preset that claims nothing).
        """
        asked, self.signature_name = self.signature_name, COVERAGE_SIGNATURE
        try:
            out, _ = self.predict({})
        finally:
            self.signature_name = asked
        scores = {name: float(value[0] if isinstance(value, list) else value)
                  for name, value in sorted(out.items())}
        threshold = scores.pop(THRESHOLD_OUTPUT)
        return Coverage(scores, threshold)


def ask(story: str, question: str, server: str = "localhost:8500", model_name: str = "babi",
        rest: bool = False, **kwargs) -> Answer:
    """One question, one connection: ``ask(story, question).answer``."""
    with BabiClient(server, model_name, rest=rest, **kwargs) as client:
        return client.ask(story, question)


class Entailment(NamedTuple):
    """Whether the premise entails the hypothesis, with the model's probability, and what
    the model did not take in (each None: an export without that output). :meth:`warnings`
    says it in words."""

    entails: bool
    probability: float
    version: int | None = None
    #: Characters of the pair outside the formula syntax: how many distinct ones, and which
    #: (each once, premise first, space-separated).
    unknown_characters: int | None = None
    unknown_tokens: str | None = None
    #: Whether each is a formula of the grammar (an empty one is not).
    premise_well_formed: bool | None = None
    hypothesis_well_formed: bool | None = None

    def warnings(self) -> list[str]:
        """What the model did not take in, one sentence each (none: it read it all)."""
        out = []
        for name, ok in (("premise", self.premise_well_formed),
                         ("hypothesis", self.hypothesis_well_formed)):
            if ok is False:
                out.append(f"the {name} is empty or not a formula of the grammar (variables "
                           "a-z, ~(F), (F&F), (F|F), (F>F)); the model answered all the same, "
                           "so the probability means nothing.")
        if self.unknown_characters:
            out.append(f"{self.unknown_characters} character(s) of the premise and hypothesis "
                       f"are not in the formula syntax{_listed(self.unknown_tokens, True)}; "
                       "the model read them as <unk>.")
        return out


class EntailmentClient(ServingClient):
    """Client of a served logical-entailment model (``premise``, ``hypothesis`` -> ``entails``)."""

    def __init__(self, server: str = "localhost:8500", model_name: str = "entailment", **kwargs):
        super().__init__(server, model_name, **kwargs)

    def entails(self, premise: str, hypothesis: str) -> Entailment:
        return self.entails_batch([premise], [hypothesis])[0]

    def entails_batch(self, premises: Sequence[str],
                      hypotheses: Sequence[str]) -> list[Entailment]:
        if len(premises) != len(hypotheses):
            raise ValueError(f"{len(premises)} premises but {len(hypotheses)} hypotheses")
        out, version = self.predict({"premise": premises, "hypothesis": hypotheses})
        missing_outputs(out, ("probability",), self.model_name, "entailment")
        n = len(out["probability"])
        report = zip(*(_column(out, name, n) for name in Entailment._fields[3:]))
        replies = [Entailment(bool(p > 0.5), float(p), version, *extra)
                   for p, extra in zip(out["probability"], report)]
        return [r._replace(**dict(zip(("unknown_characters", "unknown_tokens"), agreeing(
            r.unknown_characters, r.unknown_tokens)))) for r in replies]


def solve(question: str, server: str = "localhost:8500", model_name: str = "math",
          rest: bool = False, **kwargs) -> Solution:
    """One Mathematics question, one connection: ``solve(question).answer``."""
    with MathClient(server, model_name, rest=rest, **kwargs) as client:
        return client.solve(question)
