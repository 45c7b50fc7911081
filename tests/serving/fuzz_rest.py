"""The fuzz probe's REST cases: valid row and columnar predict requests and malformed ones
(bad and deeply nested JSON, wrong value types, bad base64, bad ``Content-Length``, chunked
and short bodies, oversize bodies, unknown models, paths and verbs, garbage request lines),
each with the HTTP status TF Serving gives for it and an ``{"error": ...}`` body on errors.
Used by :func:`tests.serving.fuzz.make_case`."""

from __future__ import annotations

import base64
import json
import random

from tests.serving.fuzz import Case, Target, http_post, http_raw


def rest_case(category: str, rng: random.Random, t: Target, pool, pairs) -> Case:
    s, q = t.inputs
    path = f"/v1/models/{t.model}:predict"
    bad = frozenset({"http:400"})

    def post(body: bytes, expected, answers_for=None, row=True, p=path, headers=None, **kw):
        def run(ctx):
            status, doc = http_post(t, p, body, headers, **kw)
            answers = None
            if status == "http:200" and isinstance(doc, dict):
                if row and "predictions" in doc:
                    answers = [x[t.output] for x in doc["predictions"]]
                elif "outputs" in doc:
                    answers = doc["outputs"][t.output]
            return status, (answers if answers_for is not None else _error_doc(status, doc))
        return Case(category, "rest", run, frozenset(expected), answers_for)

    def js(doc) -> bytes:
        return json.dumps(doc).encode()

    instances = [{s: a, q: b} for a, b in pairs]
    if category == "rest valid row":
        return post(js({"instances": instances}), {"http:200"}, pairs)
    if category == "rest valid columnar":
        return post(js({"inputs": {s: [p[0] for p in pairs], q: [p[1] for p in pairs]}}),
                    {"http:200"}, pairs, row=False)
    if category == "rest bad json":
        return post(rng.choice([b"{not json", b"", b"[1,2", b"nul", b'{"instances": [}']), bad)
    if category == "rest empty body":
        return post(b"", bad)
    if category == "rest invalid utf-8 body":
        return post(b'{"instances": ["\xff\xfe"]}', bad)
    if category == "rest deep nesting":
        depth = rng.choice([1000, 10_000, 100_000])
        inner = "[" * depth + "]" * depth
        return post(('{"instances": ' + inner + "}").encode(), bad)
    if category == "rest deep instances":
        depth = rng.choice([300, 900])
        one = "[" * depth + '"x"' + "]" * depth
        return post(('{"inputs": {"%s": %s, "%s": ["q"]}}' % (s, one, q)).encode(), bad)
    if category == "rest signature_name not a string":
        return post(js({"instances": instances, "signature_name": rng.choice(
            [["serving_default"], {"a": 1}, 3, None, True])}), bad)
    if category in ("rest number in string input", "rest bool in string input",
                    "rest null in string input"):
        value = {"rest number in string input": rng.choice([3.5, 0, -1, 1e300]),
                 "rest bool in string input": rng.choice([True, False]),
                 "rest null in string input": None}[category]
        doc = rng.choice([{"instances": [{s: value, q: "where?"}]},
                          {"inputs": {s: [value], q: ["where?"]}},
                          {"inputs": {s: ["a", value], q: ["x", "y"]}}])
        return post(js(doc), bad)
    if category == "rest ragged":
        return post(js({"inputs": {s: rng.choice([["a", ["b"]], [["a"], ["b", "c"]], [[]]]),
                                   q: ["x"]}}), bad)
    if category == "rest bad b64":
        return post(js({"instances": [{s: {"b64": rng.choice(["%%%", "abc", 3])}, q: "w"}]}),
                    bad)
    if category == "rest b64 story":
        story, question = rng.choice(pool)
        doc = {"instances": [{s: {"b64": base64.b64encode(story.encode()).decode()},
                              q: question}]}
        return post(js(doc), {"http:200"}, [(story, question)])
    if category == "rest lone surrogate":
        return post(b'{"instances": [{"%s": "\\ud800", "%s": "q"}]}' % (s.encode(), q.encode()),
                    bad)
    if category == "rest long story":
        story = "mary went to the kitchen . " * rng.choice([100, 4000])
        doc = {"inputs": {s: [story] + [""] * rng.choice([0, 999]),
                          q: ["where is mary ?"] * 0}}
        doc["inputs"][q] = ["where is mary ?"] * len(doc["inputs"][s])
        return post(js(doc), {"http:200"})
    if category == "rest unknown model":
        return post(js({"instances": instances}), {"http:404"},
                    p="/v1/models/" + rng.choice(["nope", "%C3%BC", "x" * 3000]) + ":predict")
    if category == "rest unknown path":
        return post(js({"instances": instances}), bad,
                    p=rng.choice(["/v2/x", "/v1/models", "/", "/v1/models/babi:explode"]))
    if category == "rest classify":
        return post(js({"examples": []}), {"http:400"}, p=f"/v1/models/{t.model}:classify")
    if category == "rest bad content-length":
        return post(js({"instances": instances}), bad,
                    headers={"Content-Length": rng.choice(["abc", "1.5", "0x10", "", "1e3"])})
    if category == "rest negative content-length":
        return post(js({"instances": instances}), bad, headers={"Content-Length": "-1"})
    if category == "rest chunked":
        return post(b"5\r\nhello\r\n0\r\n\r\n", {"http:411"},
                    headers={"Transfer-Encoding": "chunked", "Content-Length": None})
    if category == "rest oversize":
        size = t.max_message_bytes + 1
        return post(b"x" * min(size, 4 << 20), {"http:413"},
                    headers={"Content-Length": str(size)})
    if category == "rest short body":
        body = js({"instances": instances})
        return post(body, {"http:408"}, headers={"Content-Length": str(len(body) + 100)},
                    timeout=t.rest_timeout_s + 30)

    if category in ("rest put", "rest garbage request line", "rest status", "rest metadata"):
        if category == "rest put":
            data = f"PUT {path} HTTP/1.1\r\nContent-Length: 2\r\n\r\n{{}}".encode()
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
    raise AssertionError(category)


def _error_doc(status: str, doc) -> list[str] | None:
    """None when the reply is well-formed; else a one-item list with what is wrong (the
    runner reports it)."""
    if status.startswith("http:") and status != "http:200":
        if not (isinstance(doc, dict) and isinstance(doc.get("error"), str)):
            return [f"error body is not {{'error': ...}}: {str(doc)[:80]}"]
    return None
