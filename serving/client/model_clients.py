"""Clients of the served tpr-keras models: bAbI (:class:`BabiClient`, :func:`ask`),
Mathematics (:class:`MathClient`, :func:`solve`) and entailment (:class:`EntailmentClient`),
each a :class:`~serving.client.serving_client.ServingClient` with its model's inputs and
outputs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from serving.client.serving_client import ServingClient


class Answer(NamedTuple):
    """A model's answer and its top-k candidates ``(token, probability)``, best first."""

    answer: str
    candidates: list[tuple[str, float]]
    version: int | None = None
    #: Words of the story and question outside the model's vocabulary (None: an export
    #: without the ``unknown_words`` output).
    unknown_words: int | None = None


class Solution(NamedTuple):
    """A Mathematics model's greedy answer and its log-probability."""

    answer: str
    log_prob: float
    version: int | None = None
    #: Characters of the question outside the model's vocabulary (None: an export
    #: without the ``unknown_characters`` output).
    unknown_characters: int | None = None
    #: The trained module whose wording the question has; ``""``: none, the model was not
    #: trained on such questions (None: an export without the ``module`` output).
    module: str | None = None


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
        unknown = out.get("unknown_words") or [None] * len(out["answer"])
        return [Answer(answer, list(zip(candidates, map(float, scores))), version,
                       None if count is None else int(count))
                for answer, candidates, scores, count in zip(
                    out["answer"], out["candidates"], out["scores"], unknown)]


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
        unknown = out.get("unknown_characters") or [None] * len(out["answer"])
        modules = out.get("module") or [None] * len(out["answer"])
        return [Solution(a, float(lp), version, None if n is None else int(n), m)
                for a, lp, n, m in zip(out["answer"], out["log_prob"], unknown, modules)]


def ask(story: str, question: str, server: str = "localhost:8500", model_name: str = "babi",
        rest: bool = False, **kwargs) -> Answer:
    """One question, one connection: ``ask(story, question).answer``."""
    with BabiClient(server, model_name, rest=rest, **kwargs) as client:
        return client.ask(story, question)


class Entailment(NamedTuple):
    """Whether the premise entails the hypothesis, with the model's probability."""

    entails: bool
    probability: float
    version: int | None = None


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
        return [Entailment(bool(p > 0.5), float(p), version) for p in out["probability"]]


def solve(question: str, server: str = "localhost:8500", model_name: str = "math",
          rest: bool = False, **kwargs) -> Solution:
    """One Mathematics question, one connection: ``solve(question).answer``."""
    with MathClient(server, model_name, rest=rest, **kwargs) as client:
        return client.solve(question)
