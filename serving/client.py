"""Ask a served bAbI model: a small Python API and ``python -m serving.client``.

Speaks TF Serving's Predict API (gRPC, with the messages of :mod:`serving.protos`, which
need no TensorFlow, so the command starts in a fraction of a second; or REST), so it talks
to ``python -m serving.server`` and to stock ``tensorflow_model_server`` alike::

    from serving.client import BabiClient
    with BabiClient("localhost:8500", model_name="babi") as client:
        reply = client.ask("Mary went to the kitchen.\\nJohn moved to the garden.",
                           "Where is Mary?")
        print(reply.answer, reply.candidates)   # kitchen [('kitchen', 0.99), ...]

    python -m serving.client --server localhost:8500 --model_name babi \\
        --story "Mary went to the kitchen. John moved to the garden." --question "Where is Mary?"
    python -m serving.client --rest --server localhost:8501 ...   # TF Serving's REST API

A story is one string: sentences separated by newlines or ending in ``.``, ``?`` or ``!``.
``Answer.unknown_words`` counts the words of the story and question that the model does not
know (they all read as ``<unk>``); the command prints a warning when it is not zero.

A Mathematics Dataset model (``train.math``) is asked with :class:`MathClient`::

    with MathClient("localhost:8500", model_name="math") as client:
        print(client.solve("What is the tens digit of 2934?").answer)   # 3

    python -m serving.client --model_name math --question "What is the tens digit of 2934?"
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["Answer", "BabiClient", "Entailment", "EntailmentClient", "MathClient", "ServingClient", "Solution", "ask", "main",
           "solve"]


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


class ServingClient:
    """Predict calls with string inputs to a TF Serving endpoint (gRPC, or REST with ``rest=True``).

    Args:
        server: ``host:port`` of the gRPC (default 8500) or REST (default 8501) endpoint.
        model_name: The served model's name.
        version: A model version; None asks for the latest.
        signature_name: The signature (``serving_default``).
        timeout: Seconds per request.
        rest: Use the REST API instead of gRPC.
    """

    def __init__(self, server: str = "localhost:8500", model_name: str = "babi",
                 version: int | None = None, signature_name: str = "serving_default",
                 timeout: float = 30.0, rest: bool = False) -> None:
        self.server = server
        self.model_name = model_name
        self.version = version
        self.signature_name = signature_name
        self.timeout = timeout
        self.rest = rest
        self._channel = None
        self._stub = None
        if not rest:
            import grpc

            from serving import protos

            self._channel = grpc.insecure_channel(
                server, options=[("grpc.max_receive_message_length", 64 * 1024 * 1024),
                                 ("grpc.max_send_message_length", 64 * 1024 * 1024)])
            # PredictionService.Predict, with the TensorFlow-free messages of serving.protos
            self._stub = self._channel.unary_unary(
                protos.PREDICT_METHOD,
                request_serializer=protos.PredictRequest.SerializeToString,
                response_deserializer=protos.PredictResponse.FromString)

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def predict(self, inputs: dict[str, Sequence[str]]) -> tuple[dict[str, list], int | None]:
        """One Predict call; returns ``({output: rows}, version)``.

        Every input is a batch of strings. Each output is a list with one entry per
        example: a string or float, or a list of them for ``[batch, k]`` outputs.

        Raises:
            grpc.RpcError: gRPC errors (``.code()``, ``.details()``).
            RuntimeError: REST errors (the server's message, with the HTTP status).
        """
        if self.rest:
            return self._predict_rest(inputs), None
        return self._predict_grpc(inputs)

    def _predict_grpc(self, inputs):
        from serving import protos

        request = protos.PredictRequest()
        request.model_spec.name = self.model_name
        request.model_spec.signature_name = self.signature_name
        if self.version is not None:
            request.model_spec.version.value = self.version
        for name, values in inputs.items():
            proto = request.inputs[name]
            proto.dtype = protos.DT_STRING
            proto.tensor_shape.dim.add(size=len(values))
            proto.string_val.extend(v.encode("utf-8") if isinstance(v, str) else v
                                    for v in values)
        response = self._stub(request, timeout=self.timeout)
        outputs = {}
        for name, proto in response.outputs.items():
            dims = [d.size for d in proto.tensor_shape.dim]
            if proto.string_val or proto.dtype == protos.DT_STRING:
                flat = [v.decode("utf-8", "replace") for v in proto.string_val]
            else:
                flat = _numbers(proto)
            if len(dims) == 2:
                k = dims[1]
                flat = [flat[i * k:(i + 1) * k] for i in range(dims[0])]
            outputs[name] = flat
        return outputs, response.model_spec.version.value

    def _predict_rest(self, inputs):
        url = f"http://{self.server}/v1/models/{self.model_name}"
        if self.version is not None:
            url += f"/versions/{self.version}"
        body = json.dumps({"signature_name": self.signature_name,
                           "inputs": {k: list(v) for k, v in inputs.items()}}).encode()
        req = urllib.request.Request(url + ":predict", data=body,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                doc = json.load(resp)
        except urllib.error.HTTPError as exc:
            try:
                message = json.load(exc).get("error", "")
            except ValueError:
                message = ""
            raise RuntimeError(f"{_HTTP_CODE_NAMES.get(exc.code, f'HTTP {exc.code}')}: "
                               f"{message or exc.reason}") from None
        except urllib.error.URLError as exc:  # nothing listening, DNS, ...
            raise RuntimeError(f"UNAVAILABLE: cannot reach http://{self.server} "
                               f"({exc.reason})") from None
        outputs = doc["outputs"]
        if not isinstance(outputs, dict):  # a signature with a single output
            outputs = {"output": outputs}
        return outputs


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
        out, version = self.predict({"question": questions})
        return [Solution(a, float(lp), version) for a, lp in zip(out["answer"], out["log_prob"])]


#: TF Serving's REST status codes, named like the gRPC ones (``NOT_FOUND: ...``).
_HTTP_CODE_NAMES = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 408: "DEADLINE_EXCEEDED",
                    409: "ALREADY_EXISTS", 413: "RESOURCE_EXHAUSTED", 429: "RESOURCE_EXHAUSTED",
                    500: "INTERNAL", 501: "UNIMPLEMENTED", 503: "UNAVAILABLE",
                    504: "DEADLINE_EXCEEDED"}


def _numbers(proto) -> list:
    """The values of a numeric TensorProto (typed fields or ``tensor_content``)."""
    from serving import protos

    if proto.tensor_content:
        import numpy as np

        dtype = {protos.DT_FLOAT: np.float32, protos.DT_DOUBLE: np.float64,
                 protos.DT_INT32: np.int32, protos.DT_INT64: np.int64,
                 protos.DT_BOOL: np.bool_}.get(proto.dtype, np.float32)
        return np.frombuffer(proto.tensor_content, dtype=dtype).tolist()
    for field in ("float_val", "double_val", "int_val", "int64_val", "bool_val"):
        values = getattr(proto, field)
        if len(values):
            return list(values)
    return []


_floats = _numbers  # the old name


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


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m serving.client",
        description="Ask a served bAbI model about a story (--story and --question), or a "
                    "served Mathematics model a question (--question alone).")
    p.add_argument("--server", default=None,
                   help="host:port (default localhost:8500, or localhost:8501 with --rest)")
    p.add_argument("--model_name", default=None, help="default: babi, or math without --story")
    p.add_argument("--version", type=int, default=None, help="default: the latest")
    p.add_argument("--signature_name", default="serving_default")
    p.add_argument("--story", default=None,
                   help="sentences separated by newlines or ending in . ? ! (bAbI models)")
    p.add_argument("--question", default=None)
    p.add_argument("--premise", default=None, help="entailment models: with --hypothesis")
    p.add_argument("--hypothesis", default=None)
    p.add_argument("--rest", action="store_true", help="use TF Serving's REST API")
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("--json", action="store_true", help="print the reply as JSON")
    args = p.parse_args(argv)
    server = args.server or ("localhost:8501" if args.rest else "localhost:8500")
    options = dict(rest=args.rest, version=args.version, signature_name=args.signature_name,
                   timeout=args.timeout)
    if (args.premise is None) != (args.hypothesis is None) or (
            args.question is None and args.premise is None):
        p.error("give --question (with --story for bAbI), or --premise and --hypothesis")
    try:
        if args.premise is not None:
            with EntailmentClient(server, args.model_name or "entailment", **options) as client:
                result = client.entails(args.premise, args.hypothesis)
            print(json.dumps(result._asdict()) if args.json else
                  f"{'entails' if result.entails else 'does not entail'} "
                  f"(probability {result.probability:.4f})")
            return 0
        if args.story is None:
            reply = solve(args.question, server, args.model_name or "math", **options)
        else:
            reply = ask(args.story, args.question, server, args.model_name or "babi", **options)
    except Exception as exc:  # noqa: BLE001 - a CLI prints the server's message
        details = getattr(exc, "details", None)
        code = getattr(exc, "code", None)
        message = f"{code().name}: {details()}" if callable(details) and callable(code) else exc
        print(f"error: {message}", file=sys.stderr)
        return 1
    if isinstance(reply, Solution):
        if args.json:
            print(json.dumps(reply._asdict()))
        else:
            print(reply.answer)
            print(f"  log_prob {reply.log_prob:.4f}")
        return 0
    if args.json:
        print(json.dumps({"answer": reply.answer, "candidates": reply.candidates,
                          "version": reply.version, "unknown_words": reply.unknown_words}))
    else:
        print(reply.answer)
        for token, score in reply.candidates:
            print(f"  {score:8.4f}  {token}")
    if reply.unknown_words:
        print(f"warning: {reply.unknown_words} word(s) of the story and question are not in "
              "the model's vocabulary; it read them as <unk>, so the answer (whatever its "
              "score) may not mean anything.", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
