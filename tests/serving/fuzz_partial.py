"""The fuzz probe's partial-input cases: requests a model does not fully take
in (empty stories, questions and formulas; stories longer than the model reads; unknown
words and characters; malformed formulas) are answered OK, and every reply reports what
was not taken in through the export's outputs. Used by :mod:`tests.serving.fuzz`."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

import numpy as np

from tests.serving import fuzz

CATEGORIES = ("grpc partial input", "rest partial input")
LONG_STORY = " ".join(f"Mary moved to the {'kitchen' if i % 2 else 'garden'}."
                      for i in range(299)) + " John went to the hallway."


def positive(value) -> bool:
    return value > 0


#: Per family (``Target.family``): requests and the outputs their replies must hold (a
#: value, or a predicate on it).
PARTIAL: dict[str, list[tuple[tuple[str, str], dict[str, object]]]] = {
    "babi": [
        (("", "Where is Mary?"), {"story_sentences": 0, "dropped_sentences": 0}),
        (("Mary went to the kitchen.", ""), {"story_sentences": 1, "question_words": 0}),
        (("", ""), {"story_sentences": 0, "question_words": 0}),
        (("\n \n\t", " "), {"story_sentences": 0, "question_words": 0}),
        ((LONG_STORY, "Where is Mary?"), {"story_sentences": 300,
                                          "dropped_sentences": positive}),
        (("Zork went to Paris.", "Where is Zork?"), {"unknown_tokens": "zork paris",
                                                     "unknown_words": 3}),
        (("Mary went to the kitchen. " * 3, "Where is Mary?"),
         {"story_sentences": 3, "dropped_sentences": 0, "unknown_words": 0}),
    ],
    "entailment": [
        (("", ""), {"premise_well_formed": False, "hypothesis_well_formed": False,
                    "unknown_characters": 0}),
        (("p AND q", "P or Q"), {"premise_well_formed": False,
                                 "hypothesis_well_formed": False,
                                 "unknown_tokens": "A N D P Q", "unknown_characters": 5}),
        (("(a&b", "a"), {"premise_well_formed": False, "hypothesis_well_formed": True}),
        (("((a&b)>c)", " ~( c ) "), {"premise_well_formed": True,
                                     "hypothesis_well_formed": True, "unknown_tokens": ""}),
        (("~(" * 300 + "a" + ")" * 300, "a\x00"), {"premise_well_formed": False,
                                                   "hypothesis_well_formed": False,
                                                   "unknown_characters": 1}),
    ],
}


def check_reply(family: str, rows: list[tuple[str, str]]) -> Callable[[object], str | None]:
    """A check of a reply's outputs (``{name: list}``, one entry per row) against the
    expectations of ``rows``; returns what is wrong, or None."""
    expected = dict(PARTIAL[family])

    def check(outputs) -> str | None:
        if not isinstance(outputs, dict):
            return f"no outputs: {str(outputs)[:120]}"
        for i, row in enumerate(rows):
            for name, want in expected[row].items():
                if name not in outputs:
                    return f"no {name} output"
                got = outputs[name][i]
                got = got.decode("utf-8", "replace") if isinstance(got, bytes) else got
                if not (want(got) if callable(want) else got == want):
                    return f"{name} of {str(row)[:60]} is {got!r}, expected {want!r}"
        return None
    return check


def partial_case(category: str, rng: random.Random, target: fuzz.Target) -> fuzz.Case:
    """One request of 1-4 partial inputs of the target's family, over gRPC or REST."""
    rows = [rng.choice(PARTIAL[target.family])[0] for _ in range(rng.randrange(1, 5))]
    check = check_reply(target.family, rows)
    s, q = target.inputs
    if category == "grpc partial input":
        request = fuzz.predict_request(target, rows)

        def run(ctx):
            import tensorflow as tf

            status, reply = fuzz._grpc_status(lambda: ctx.stub.Predict(request, timeout=60))
            if status != fuzz.OK:
                return status, reply
            return status, {k: tf.make_ndarray(v).tolist() for k, v in reply.outputs.items()}
        return fuzz.Case(category, "grpc", run, frozenset({fuzz.OK}), check=check)
    body = json.dumps({"inputs": {s: [a for a, _ in rows], q: [b for _, b in rows]}}).encode()

    def run_rest(ctx):
        status, doc = fuzz.http_post(target, f"/v1/models/{target.model}:predict", body)
        if status != "http:200" or not isinstance(doc, dict):
            return status, doc
        return status, {k: np.atleast_1d(v).tolist() if not isinstance(v, list) else v
                        for k, v in doc.get("outputs", {}).items()}
    return fuzz.Case(category, "rest", run_rest, frozenset({"http:200"}), check=check)
