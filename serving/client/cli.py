"""``python -m serving.client``: ask a served bAbI, Mathematics or entailment model."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from serving.client.model_clients import EntailmentClient, Solution, ask, solve
from serving.client.serving_client import ServingClient
from serving.command_flags import Command


def main(argv: Sequence[str] | None = None) -> int:
    p = Command("python -m serving.client",
                "Ask a served bAbI, Mathematics or entailment model: about a story "
                "(--story and --question), a math question (--question alone), or whether a "
                "premise entails a hypothesis (--premise and --hypothesis).")
    p.string("server", None,
             "host:port (default localhost:8500, or localhost:8501 with --rest)")
    p.string("model_name", None, "default: babi, or math without --story")
    p.integer("version", None, "default: the latest")
    p.string("signature_name", "serving_default")
    p.string("story", None, "sentences separated by newlines or ending in . ? ! (bAbI models)")
    p.string("question", None)
    p.string("premise", None, "entailment models: with --hypothesis")
    p.string("hypothesis", None)
    p.boolean("rest", False, "use TF Serving's REST API")
    p.float("timeout", 30.0)
    p.float("wait_seconds", 5.0,
            "retry this long while the server is not up yet or the model is still loading, "
            "saying on stderr what it waits for (0: no retry); a starting server opens its "
            "ports only once all its models have loaded, which can take minutes")
    p.boolean("json", False, "print the reply as JSON")
    args = p.parse(argv)
    server = args.server or ("localhost:8501" if args.rest else "localhost:8500")
    options = dict(rest=args.rest, version=args.version, signature_name=args.signature_name,
                   timeout=args.timeout, wait_seconds=args.wait_seconds,
                   on_wait=lambda message: print(message, file=sys.stderr, flush=True))
    if (args.premise is None) != (args.hypothesis is None) or (
            args.question is None and args.premise is None):
        p.error("give --question (with --story for bAbI), or --premise and --hypothesis")
    if args.premise is not None and (args.story is not None or args.question is not None):
        p.error("--story/--question (bAbI, Mathematics) and --premise/--hypothesis "
                "(entailment) ask different models: give one pair")
    try:
        if args.signature_name != "serving_default":  # e.g. tokenize: its outputs as sent
            inputs = ({"premise": [args.premise], "hypothesis": [args.hypothesis]}
                      if args.premise is not None else
                      {"question": [args.question]} if args.story is None else
                      {"story": [args.story], "question": [args.question]})
            name = args.model_name or ("entailment" if args.premise is not None else
                                       "math" if args.story is None else "babi")
            with ServingClient(server, name, **options) as client:
                outputs, _ = client.predict(inputs)
            for key in sorted(outputs):
                print(f"{key}: {json.dumps(outputs[key])}")
            return 0
        if args.premise is not None:
            with EntailmentClient(server, args.model_name or "entailment", **options) as client:
                result = client.entails(args.premise, args.hypothesis)
            print(json.dumps(result._asdict()) if args.json else
                  f"{'entails' if result.entails else 'does not entail'} "
                  f"(probability {result.probability:.4f})")
            print_warnings(result)
            return 0
        if args.story is None:
            reply = solve(args.question, server, args.model_name or "math", **options)
        else:
            reply = ask(args.story, args.question, server, args.model_name or "babi", **options)
    except Exception as exc:  # noqa: BLE001 - a CLI prints the server's message
        details = getattr(exc, "details", None)
        code = getattr(exc, "code", None)
        message = (f"{code().name}: {details()}" if callable(details) and callable(code)
                   else f"{type(exc).__name__}: {exc}" if isinstance(exc, KeyError) else exc)
        print(f"error: {' '.join(str(message).split())}", file=sys.stderr)  # one line
        return 1
    if isinstance(reply, Solution):
        if args.json:
            print(json.dumps(reply._asdict()))
        else:
            print(reply.answer)
            print(f"  log_prob {reply.log_prob:.4f}")
        print_warnings(reply)
        return 0
    if args.json:
        print(json.dumps(reply._asdict()))
    else:
        print(reply.answer)
        for token, score in reply.candidates:
            print(f"  {score:8.4f}  {token}")
    print_warnings(reply)
    return 0


def print_warnings(reply) -> None:
    """What the model did not take in (the reply's ``warnings()``), one ``warning:`` line
    each, on stderr."""
    for line in reply.warnings():
        print(f"warning: {line}", file=sys.stderr)
