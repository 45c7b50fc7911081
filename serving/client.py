"""Ask a served bAbI model: a small Python API and ``python -m serving.client``.

Built on the official ``tensorflow-serving-api`` stubs, so it talks to ``python -m
serving.server`` and to stock ``tensorflow_model_server`` alike::

    from serving.client import BabiClient
    with BabiClient("localhost:8500", model_name="babi") as client:
        reply = client.ask("Mary went to the kitchen.\\nJohn moved to the garden.",
                           "Where is Mary?")
        print(reply.answer, reply.candidates)   # kitchen [('kitchen', 0.99), ...]

    python -m serving.client --server localhost:8500 --model_name babi \\
        --story "Mary went to the kitchen. John moved to the garden." --question "Where is Mary?"
    python -m serving.client --rest --server localhost:8501 ...   # TF Serving's REST API

A story is one string: sentences separated by newlines or ending in ``.``, ``?`` or ``!``.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["Answer", "BabiClient", "ask", "main"]


class Answer(NamedTuple):
    """A model's answer and its top-k candidates ``(token, probability)``, best first."""

    answer: str
    candidates: list[tuple[str, float]]
    version: int | None = None


class BabiClient:
    """Client of a served bAbI model (gRPC by default, TF Serving REST with ``rest=True``).

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
            from tensorflow_serving.apis import prediction_service_pb2_grpc

            self._channel = grpc.insecure_channel(
                server, options=[("grpc.max_receive_message_length", 64 * 1024 * 1024),
                                 ("grpc.max_send_message_length", 64 * 1024 * 1024)])
            self._stub = prediction_service_pb2_grpc.PredictionServiceStub(self._channel)

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()

    def __enter__(self) -> BabiClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def ask(self, story: str, question: str) -> Answer:
        """Answers one question about one story."""
        return self.ask_batch([story], [question])[0]

    def ask_batch(self, stories: Sequence[str], questions: Sequence[str]) -> list[Answer]:
        """Answers several questions in one request (``stories[i]`` goes with ``questions[i]``).

        Raises:
            grpc.RpcError: gRPC errors (``.code()``, ``.details()``).
            RuntimeError: REST errors (the server's message, with the HTTP status).
        """
        if len(stories) != len(questions):
            raise ValueError(f"{len(stories)} stories but {len(questions)} questions")
        if self.rest:
            return self._ask_rest(stories, questions)
        return self._ask_grpc(stories, questions)

    def _ask_grpc(self, stories: Sequence[str], questions: Sequence[str]) -> list[Answer]:
        from tensorflow.core.framework import tensor_pb2, tensor_shape_pb2, types_pb2
        from tensorflow_serving.apis import predict_pb2

        def strings(values: Sequence[str]) -> tensor_pb2.TensorProto:
            proto = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING)
            proto.tensor_shape.dim.append(tensor_shape_pb2.TensorShapeProto.Dim(size=len(values)))
            proto.string_val.extend(v.encode("utf-8") if isinstance(v, str) else v
                                    for v in values)
            return proto

        request = predict_pb2.PredictRequest()
        request.model_spec.name = self.model_name
        request.model_spec.signature_name = self.signature_name
        if self.version is not None:
            request.model_spec.version.value = self.version
        request.inputs["story"].CopyFrom(strings(stories))
        request.inputs["question"].CopyFrom(strings(questions))
        response = self._stub.Predict(request, timeout=self.timeout)
        out = response.outputs
        answers = [a.decode("utf-8", "replace") for a in out["answer"].string_val]
        k = out["scores"].tensor_shape.dim[1].size if len(answers) else 0
        scores = _floats(out["scores"])
        candidates = [c.decode("utf-8", "replace") for c in out["candidates"].string_val]
        version = response.model_spec.version.value
        return [Answer(a, list(zip(candidates[i * k:(i + 1) * k],
                                   (float(s) for s in scores[i * k:(i + 1) * k]))), version)
                for i, a in enumerate(answers)]

    def _ask_rest(self, stories: Sequence[str], questions: Sequence[str]) -> list[Answer]:
        url = f"http://{self.server}/v1/models/{self.model_name}"
        if self.version is not None:
            url += f"/versions/{self.version}"
        body = json.dumps({"signature_name": self.signature_name,
                           "instances": [{"story": s, "question": q}
                                         for s, q in zip(stories, questions)]}).encode()
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
            raise RuntimeError(f"HTTP {exc.code}: {message or exc.reason}") from None
        return [Answer(p["answer"], list(zip(p["candidates"], map(float, p["scores"]))))
                for p in doc["predictions"]]


def _floats(proto) -> list[float]:
    if proto.tensor_content:
        import numpy as np

        return np.frombuffer(proto.tensor_content, dtype=np.float32).tolist()
    return list(proto.float_val)


def ask(story: str, question: str, server: str = "localhost:8500", model_name: str = "babi",
        rest: bool = False, **kwargs) -> Answer:
    """One question, one connection: ``ask(story, question).answer``."""
    with BabiClient(server, model_name, rest=rest, **kwargs) as client:
        return client.ask(story, question)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m serving.client",
                                description="Ask a served bAbI model a question.")
    p.add_argument("--server", default=None,
                   help="host:port (default localhost:8500, or localhost:8501 with --rest)")
    p.add_argument("--model_name", default="babi")
    p.add_argument("--version", type=int, default=None, help="default: the latest")
    p.add_argument("--signature_name", default="serving_default")
    p.add_argument("--story", required=True,
                   help="sentences separated by newlines or ending in . ? !")
    p.add_argument("--question", required=True)
    p.add_argument("--rest", action="store_true", help="use TF Serving's REST API")
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("--json", action="store_true", help="print the reply as JSON")
    args = p.parse_args(argv)
    server = args.server or ("localhost:8501" if args.rest else "localhost:8500")
    try:
        reply = ask(args.story, args.question, server, args.model_name, rest=args.rest,
                    version=args.version, signature_name=args.signature_name,
                    timeout=args.timeout)
    except Exception as exc:  # noqa: BLE001 - a CLI prints the server's message
        details = getattr(exc, "details", None)
        code = getattr(exc, "code", None)
        message = f"{code().name}: {details()}" if callable(details) and callable(code) else exc
        print(f"error: {message}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"answer": reply.answer, "candidates": reply.candidates,
                          "version": reply.version}))
    else:
        print(reply.answer)
        for token, score in reply.candidates:
            print(f"  {score:8.4f}  {token}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
