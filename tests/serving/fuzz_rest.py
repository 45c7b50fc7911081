"""The fuzz probe's REST cases: valid row and columnar predict requests and malformed ones
(bad and deeply nested JSON, wrong value types, bad base64, bad ``Content-Length``, chunked
and short bodies, oversize bodies, unknown models, paths and verbs, garbage request lines),
each with the HTTP status TF Serving gives for it and an ``{"error": ...}`` body on errors.
Used by :func:`tests.serving.fuzz.make_case`."""

from __future__ import annotations

import base64
import json
import random

from tests.serving.fuzz import Case, CaseMaker, Target, http_post, http_raw


BAD = frozenset({"http:400"})


def rest_case(category: str, rng: random.Random, t: Target, pool, pairs) -> Case:
    """The case of a REST ``category`` (``pairs``: its stories and questions, from ``pool``)."""
    return _Cases(category, rng, t, pool, pairs).first_case(
        (_valid_and_bad_json, _bad_values, _paths_and_headers, _raw_requests))


class _Cases(CaseMaker):
    """:class:`~tests.serving.fuzz.CaseMaker` with this transport's request helpers."""

    @property
    def path(self) -> str:
        """The predict path of the served model."""
        return f"/v1/models/{self.t.model}:predict"

    @property
    def instances(self) -> list[dict]:
        """:attr:`pairs` as row-format instances."""
        s, q = self.t.inputs
        return [{s: a, q: b} for a, b in self.pairs]

    def post(self, body: bytes, expected, answers_for=None, row=True, p=None, headers=None,
             **kw) -> Case:
        """A case that POSTs ``body`` to ``p`` (default :attr:`path`); answered 200, its
        answers are checked against ``answers_for``' reference answers (if given), else
        an error reply must carry an ``{"error": ...}`` body."""
        t, p = self.t, self.path if p is None else p

        def run(ctx):
            status, doc = http_post(t, p, body, headers, **kw)
            answers = None
            if status == "http:200" and isinstance(doc, dict):
                if row and "predictions" in doc:
                    answers = [x[t.output] for x in doc["predictions"]]
                elif "outputs" in doc:
                    answers = doc["outputs"][t.output]
            return status, (answers if answers_for is not None else _error_doc(status, doc))
        return Case(self.category, "rest", run, frozenset(expected), answers_for)


def js(doc) -> bytes:
    """``doc`` as a JSON request body."""
    return json.dumps(doc).encode()


def _valid_and_bad_json(c: _Cases) -> Case | None:
    """Valid row and columnar requests; bodies that are no JSON, or nested too deep."""
    category, rng, pairs = c.category, c.rng, c.pairs
    s, q = c.t.inputs
    if category == "rest valid row":
        return c.post(js({"instances": c.instances}), {"http:200"}, pairs)
    if category == "rest valid columnar":
        return c.post(js({"inputs": {s: [p[0] for p in pairs], q: [p[1] for p in pairs]}}),
                      {"http:200"}, pairs, row=False)
    if category == "rest bad json":
        return c.post(rng.choice([b"{not json", b"", b"[1,2", b"nul", b'{"instances": [}']),
                      BAD)
    if category == "rest empty body":
        return c.post(b"", BAD)
    if category == "rest invalid utf-8 body":
        return c.post(b'{"instances": ["\xff\xfe"]}', BAD)
    if category == "rest deep nesting":
        depth = rng.choice([1000, 10_000, 100_000])
        inner = "[" * depth + "]" * depth
        return c.post(('{"instances": ' + inner + "}").encode(), BAD)
    if category == "rest deep instances":
        depth = rng.choice([300, 900])
        one = "[" * depth + '"x"' + "]" * depth
        return c.post(('{"inputs": {"%s": %s, "%s": ["q"]}}' % (s, one, q)).encode(), BAD)
    return None


def _bad_values(c: _Cases) -> Case | None:
    """Values of the wrong type or shape, base64 (bad and good), lone surrogates and long
    stories."""
    category, rng = c.category, c.rng
    s, q = c.t.inputs
    if category == "rest signature_name not a string":
        return c.post(js({"instances": c.instances, "signature_name": rng.choice(
            [["serving_default"], {"a": 1}, 3, None, True])}), BAD)
    if category in ("rest number in string input", "rest bool in string input",
                    "rest null in string input"):
        value = {"rest number in string input": rng.choice([3.5, 0, -1, 1e300]),
                 "rest bool in string input": rng.choice([True, False]),
                 "rest null in string input": None}[category]
        doc = rng.choice([{"instances": [{s: value, q: "where?"}]},
                          {"inputs": {s: [value], q: ["where?"]}},
                          {"inputs": {s: ["a", value], q: ["x", "y"]}}])
        return c.post(js(doc), BAD)
    if category == "rest ragged":
        return c.post(js({"inputs": {s: rng.choice([["a", ["b"]], [["a"], ["b", "c"]], [[]]]),
                                     q: ["x"]}}), BAD)
    if category == "rest bad b64":
        return c.post(js({"instances": [{s: {"b64": rng.choice(["%%%", "abc", 3])}, q: "w"}]}),
                      BAD)
    if category == "rest b64 story":
        story, question = rng.choice(c.pool)
        doc = {"instances": [{s: {"b64": base64.b64encode(story.encode()).decode()},
                              q: question}]}
        return c.post(js(doc), {"http:200"}, [(story, question)])
    if category == "rest lone surrogate":
        return c.post(b'{"instances": [{"%s": "\\ud800", "%s": "q"}]}'
                      % (s.encode(), q.encode()), BAD)
    if category == "rest long story":
        story = "mary went to the kitchen . " * rng.choice([100, 4000])
        doc = {"inputs": {s: [story] + [""] * rng.choice([0, 999]),
                          q: ["where is mary ?"] * 0}}
        doc["inputs"][q] = ["where is mary ?"] * len(doc["inputs"][s])
        return c.post(js(doc), {"http:200"})
    return None


def _paths_and_headers(c: _Cases) -> Case | None:
    """Unknown models and paths, Classify, bad ``Content-Length`` headers, chunked,
    oversize and short bodies."""
    category, rng, t = c.category, c.rng, c.t
    if category == "rest unknown model":
        return c.post(js({"instances": c.instances}), {"http:404"},
                      p="/v1/models/" + rng.choice(["nope", "%C3%BC", "x" * 3000]) + ":predict")
    if category == "rest unknown path":
        return c.post(js({"instances": c.instances}), BAD,
                      p=rng.choice(["/v2/x", "/v1/models", "/", "/v1/models/babi:explode"]))
    if category == "rest classify":
        return c.post(js({"examples": []}), {"http:400"}, p=f"/v1/models/{t.model}:classify")
    if category == "rest bad content-length":
        return c.post(js({"instances": c.instances}), BAD,
                      headers={"Content-Length": rng.choice(["abc", "1.5", "0x10", "", "1e3"])})
    if category == "rest negative content-length":
        return c.post(js({"instances": c.instances}), BAD, headers={"Content-Length": "-1"})
    if category == "rest chunked":
        return c.post(b"5\r\nhello\r\n0\r\n\r\n", {"http:411"},
                      headers={"Transfer-Encoding": "chunked", "Content-Length": None})
    if category == "rest oversize":
        size = t.max_message_bytes + 1
        return c.post(b"x" * min(size, 4 << 20), {"http:413"},
                      headers={"Content-Length": str(size)})
    if category == "rest short body":
        body = js({"instances": c.instances})
        return c.post(body, {"http:408"}, headers={"Content-Length": str(len(body) + 100)},
                      timeout=t.rest_timeout_s + 30)
    return None


def _raw_requests(c: _Cases) -> Case | None:
    """Requests written byte by byte: PUT, garbage request lines, model status and
    metadata."""
    category, rng, t = c.category, c.rng, c.t
    if category not in ("rest put", "rest garbage request line", "rest status",
                        "rest metadata"):
        return None
    if category == "rest put":
        data = f"PUT {c.path} HTTP/1.1\r\nContent-Length: 2\r\n\r\n{{}}".encode()
        expected = {"http:400"}
    elif category == "rest garbage request line":
        data = rng.choice([b"GARBAGE\r\n\r\n", b"\x16\x03\x01\x02\x00\x01\x00\r\n\r\n",
                           b"GET / HTTP/9.9\r\n\r\n", b"FOO /v1 HTTP/1.1\r\n\r\n",
                           b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n"])
        expected = {"http:400", "http:405", "http:414", "http:431"}
    elif category == "rest status":
        name = rng.choice([t.model, "nope"])
        data = f"GET /v1/models/{name} HTTP/1.0\r\n\r\n".encode()
        expected = {"http:200"} if name == t.model else {"http:404"}
    else:
        data = f"GET /v1/models/{t.model}/metadata HTTP/1.0\r\n\r\n".encode()
        expected = {"http:200"}

    def run(ctx):
        status, doc = http_raw(t, data)
        return status, _error_doc(status, doc)
    return Case(category, "rest", run, frozenset(expected))


def _error_doc(status: str, doc) -> list[str] | None:
    """None when the reply is well-formed; else a one-item list with what is wrong (the
    runner reports it)."""
    if status.startswith("http:") and status != "http:200":
        if not (isinstance(doc, dict) and isinstance(doc.get("error"), str)):
            return [f"error body is not {{'error': ...}}: {str(doc)[:80]}"]
    return None
