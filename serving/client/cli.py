"""``python -m serving.client``: ask a served bAbI, Mathematics or entailment model.

Exit statuses (docs/serving.md): :data:`OK` 0, an answer (with ``--strict``: one without
warnings); :data:`FAILED` 1, no answer (the server's error, an unreachable server, a reply
of another kind of model), said in one ``error:`` line on stderr; :data:`USAGE` 2, a bad
command line or an input file that cannot be read; :data:`WARNED` 3, ``--strict`` and the
reply carries a warning (the answer is printed all the same); 130, interrupted (Ctrl-C);
141, stdout closed early (``| head -1``).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence

from serving.client.model_clients import EntailmentClient, MathClient, Solution, ask, solve
from serving.client.serving_client import ServerNotReady, ServingClient
from serving.command_flags import Command

#: Exit statuses.
OK, FAILED, USAGE, WARNED = 0, 1, 2, 3
#: gRPC's limit on one message (a signed 32-bit length): the most --max_message_mb can ask.
MAX_MESSAGE_MB = 2047
#: The inputs that can come from a file (``--NAME_file``) instead of the command line.
TEXT_INPUTS = ("story", "question", "premise", "hypothesis")


def client_command() -> Command:
    """The client's flags, defined on a fresh :class:`~serving.command_flags.Command`."""
    p = Command("python -m serving.client",
                "Ask a served bAbI, Mathematics or entailment model: about a story "
                "(--story and --question), a math question (--question alone), or whether a "
                "premise entails a hypothesis (--premise and --hypothesis).",
                example="python -m serving.client --story_file story.txt --question "
                        "'Where is Mary?' --strict")
    p.string("server", None,
             "host:port (default localhost:8500, or localhost:8501 with --rest)")
    p.string("model_name", None, "default: babi, or math without --story")
    p.integer("version", None, "default: the latest")
    p.string("signature_name", "serving_default")
    p.string("story", None, "sentences separated by newlines or ending in . ? ! (bAbI models)")
    p.string("question", None)
    p.string("premise", None, "entailment models: with --hypothesis")
    p.string("hypothesis", None)
    p.boolean("coverage", False,
              "Mathematics: print the modules the served model claims, each with its exact "
              "match % on the fresh generator sample of the claim (its 'coverage' "
              "signature), instead of asking a question")
    _input_file_flags(p)
    _output_flags(p)
    _connection_flags(p)
    return p


def _input_file_flags(p: Command) -> None:
    """``--NAME_file`` for each of :data:`TEXT_INPUTS`."""
    p.group("Inputs from files")
    for name in TEXT_INPUTS:
        p.string(f"{name}_file", None,
                 f"read the {name} from this UTF-8 file instead of --{name} (- : standard "
                 "input; trailing newlines are dropped, as $(cat FILE) does; any length up "
                 "to --max_message_mb)")


def _output_flags(p: Command) -> None:
    """What is printed, and when ``--strict`` ends with :data:`WARNED`."""
    p.group("Output (exit status 0: answered, 1: no answer, 2: bad command line, "
            "3: --strict and a warning)")
    p.integer("top_k", None, "bAbI: print this many candidates under the answer (0: the "
              "answer alone); default: the k its export returns, 5 unless exported with "
              "more", lower_bound=0)
    p.boolean("json", False, "print the reply as JSON")
    p.boolean("strict", False,
              f"exit with status {WARNED} (after printing the answer) when the reply carries "
              "any warning: unknown words or characters, dropped input, an empty story or "
              "question, a malformed formula, a question worded as no trained module")


def _connection_flags(p: Command) -> None:
    """The transport, its timeouts and its message size limit."""
    p.group("Connection")
    p.boolean("rest", False, "use TF Serving's REST API")
    p.float("timeout", 30.0, "seconds per request")
    p.float("wait_seconds", 5.0,
            "retry this long while the server is not up yet or the model is still loading, "
            "saying on stderr what it waits for (0: no retry); a starting server opens its "
            "ports only once all its models have loaded, which can take minutes")
    p.integer("max_message_mb", 64,
              "largest gRPC request or reply this client sends or takes, in MiB (up to "
              f"{MAX_MESSAGE_MB}); python -m serving.server refuses messages over its own "
              "--max_message_bytes (64 MiB by default), tensorflow_model_server over 2 GiB",
              lower_bound=1)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m serving.client``: one question, its answer on stdout; the exit status is
    one of :data:`OK`, :data:`FAILED`, :data:`USAGE` (by ``SystemExit``) or :data:`WARNED`."""
    p = client_command()
    args = p.parse(argv)
    if args.max_message_mb > MAX_MESSAGE_MB:
        p.error(f"--max_message_mb={args.max_message_mb}: gRPC messages are at most "
                f"{MAX_MESSAGE_MB} MiB")
    server = args.server or ("localhost:8501" if args.rest else "localhost:8500")
    if args.coverage:
        return _print_coverage(p, args, server)
    texts = read_inputs(p, args)
    _check_what_is_asked(p, args, texts)
    try:
        reply = _ask(args, texts, server)
    except Exception as exc:  # noqa: BLE001 - a CLI prints the server's message, one line
        print(f"error: {error_line(exc, args, server)}", file=sys.stderr)
        return FAILED
    if reply is None:  # another signature's outputs, printed as they came
        return OK
    _print_reply(reply, args)
    warnings = print_warnings(reply)
    return WARNED if args.strict and warnings else OK


def _options(args) -> dict:
    """The :class:`ServingClient` options the flags give."""
    return dict(rest=args.rest, version=args.version, signature_name=args.signature_name,
                timeout=args.timeout, wait_seconds=args.wait_seconds,
                max_message_bytes=min(args.max_message_mb * 2**20, 2**31 - 1),
                on_wait=lambda message: print(message, file=sys.stderr, flush=True))


def _print_coverage(p: Command, args, server: str) -> int:
    """``--coverage``: a header, then one ``module: score %`` line per claimed module
    (``--json``: ``{"claims": {module: score}, "threshold_percent": t}``); :data:`FAILED`
    when the model claims nothing."""
    asked = [f"--{name}" for name in ("story", "question", "premise", "hypothesis")
             if getattr(args, name) is not None or getattr(args, f"{name}_file") is not None]
    if asked:
        p.error(f"--coverage asks the model what it claims, not a question: drop "
                f"{', '.join(asked)}")
    try:
        with MathClient(server, args.model_name or "math", **_options(args)) as client:
            coverage = client.coverage()
    except Exception as exc:  # noqa: BLE001 - a CLI prints the server's message, one line
        print(f"error: {error_line(exc, args, server)} (a model without a 'coverage' "
              "signature claims no module: an export of a preset without claims)",
              file=sys.stderr)
        return FAILED
    if args.json:
        print(json.dumps({"claims": coverage.modules,
                          "threshold_percent": coverage.threshold_percent}))
        return OK
    print(f"modules claimed (exact match >= {coverage.threshold_percent:g} % on a fresh "
          "generator sample):")
    for module, score in coverage.modules.items():
        print(f"  {module}: {score:g} %")
    return OK


def _check_what_is_asked(p: Command, args, texts: dict[str, str | None]) -> None:
    """A usage error unless the inputs ask one kind of model one thing."""
    story, question = texts["story"], texts["question"]
    premise, hypothesis = texts["premise"], texts["hypothesis"]
    if (premise is None) != (hypothesis is None) or (question is None and premise is None):
        p.error("give --question (with --story for bAbI), or --premise and --hypothesis "
                "(or their --*_file flags)")
    if premise is not None and (story is not None or question is not None):
        p.error("--story/--question (bAbI, Mathematics) and --premise/--hypothesis "
                "(entailment) ask different models: give one pair")
    if "top_k" in args.given and (story is None or args.signature_name != "serving_default"):
        p.error("--top_k applies to bAbI models' answers (with --story)")


def _ask(args, texts: dict[str, str | None], server: str):
    """The model's reply (a bAbI, Mathematics or entailment reply); None after printing the
    outputs of a signature other than ``serving_default`` (e.g. ``tokenize``) as sent."""
    story, question = texts["story"], texts["question"]
    premise, hypothesis = texts["premise"], texts["hypothesis"]
    options = _options(args)
    name = args.model_name or ("entailment" if premise is not None else
                               "math" if story is None else "babi")
    if args.signature_name != "serving_default":
        inputs = ({"premise": [premise], "hypothesis": [hypothesis]}
                  if premise is not None else
                  {"question": [question]} if story is None else
                  {"story": [story], "question": [question]})
        with ServingClient(server, name, **options) as client:
            outputs, _ = client.predict(inputs)
        for key in sorted(outputs):
            print(f"{key}: {json.dumps(outputs[key])}")
        return None
    if premise is not None:
        with EntailmentClient(server, name, **options) as client:
            return client.entails(premise, hypothesis)
    if story is None:
        return solve(question, server, name, **options)
    return ask(story, question, server, name, **options)


def _print_reply(reply, args) -> None:
    """The answer on stdout (``--json``: the whole reply), bAbI's candidates up to
    ``--top_k`` under it, and a note on stderr when the export returns fewer."""
    if isinstance(reply, Solution):
        if args.json:
            print(json.dumps(reply._asdict()))
        else:
            print(reply.answer)
            print(f"  log_prob {reply.log_prob:.4f}")
    elif hasattr(reply, "entails"):
        print(json.dumps(reply._asdict()) if args.json else
              f"{'entails' if reply.entails else 'does not entail'} "
              f"(probability {reply.probability:.4f})")
    else:
        top_k = len(reply.candidates) if args.top_k is None else args.top_k
        shown = reply.candidates[:top_k]
        if args.json:
            print(json.dumps(reply._replace(candidates=shown)._asdict()))
        else:
            print(reply.answer)
            for token, score in shown:
                print(f"  {score:8.4f}  {token}")
        if top_k > len(reply.candidates):
            print(f"note: the model returns {len(reply.candidates)} candidates (the k of its "
                  f"export), fewer than --top_k {args.top_k}", file=sys.stderr)


def read_inputs(p: Command, args) -> dict[str, str | None]:
    """Each text input, from its flag or from its ``--NAME_file`` (``-``: stdin); a usage
    error, before anything is read, for both, or for stdin twice; then for a file that
    cannot be read."""
    files = {name: getattr(args, f"{name}_file") for name in TEXT_INPUTS}
    for name, path in files.items():
        if path is not None and getattr(args, name) is not None:
            p.error(f"give --{name} or --{name}_file, not both")
    stdin = [name for name, path in files.items() if path == "-"]
    if len(stdin) > 1:
        p.error(f"--{stdin[0]}_file and --{stdin[1]}_file both read standard input (-): give "
                "one of them a file")
    texts: dict[str, str | None] = {}
    for name, path in files.items():
        if path is None:
            texts[name] = getattr(args, name)
            continue
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError as exc:
                p.error(f"--{name}_file={path}: cannot read it: {exc.strerror or exc}")
        # invalid UTF-8 reads as U+FFFD, as the server reads it
        texts[name] = data.decode("utf-8", "replace").rstrip("\r\n")
    return texts


#: gRPC's message-size errors: ``CLIENT: Sent message larger than max (N vs. LIMIT)``.
_SIZE = re.compile(r"(CLIENT|SERVER)?:?\s*(Sent|Received) message larger than max "
                   r"\((\d+) vs\. (\d+)\)", re.IGNORECASE)


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def error_line(exc: Exception, args, server: str) -> str:
    """Why there is no answer, on one line: the status and the server's message, and what
    to do where the status says (a size over a limit, a deadline, no server)."""
    code = getattr(exc, "code", None)
    details = getattr(exc, "details", None)
    if callable(code) and callable(details):  # grpc.RpcError
        try:
            name = code().name
        except Exception:  # noqa: BLE001 - not a grpc.RpcError after all
            name = type(exc).__name__
        text = f"{name}: {details() or 'no details'}"
    elif isinstance(exc, (ServerNotReady, RuntimeError, ValueError)):
        text = str(exc)  # REST errors start with their status name already
        name = text.split(":", 1)[0]
    else:
        text = f"{type(exc).__name__}: {exc}"
        name = ""
    text = " ".join(text.split())
    size = _SIZE.search(text) if name == "RESOURCE_EXHAUSTED" else None
    if size:
        side, verb, got, limit = size.group(1), size.group(2).lower(), *map(int, size.groups()[2:])
        side = (side or "").upper()
        if side == "CLIENT" and verb == "sent":
            hint = (f"the request is {got} bytes ({_mib(got)}), over this client's limit of "
                    f"{limit} bytes (--max_message_mb {args.max_message_mb}): raise it, e.g. "
                    f"--max_message_mb {min(-(-got // 2**20) + 1, MAX_MESSAGE_MB)} (the "
                    "server has its own limit: python -m serving.server --max_message_bytes, "
                    "64 MiB by default)")
        elif side == "CLIENT":
            hint = (f"the reply is {got} bytes ({_mib(got)}), over this client's limit of "
                    f"{limit} bytes (--max_message_mb {args.max_message_mb}): raise it, e.g. "
                    f"--max_message_mb {min(-(-got // 2**20) + 1, MAX_MESSAGE_MB)}")
        elif verb == "received":
            hint = (f"the server refused a request of {got} bytes ({_mib(got)}): its limit is "
                    f"{limit} bytes ({_mib(limit)}); start it with a larger "
                    "--max_message_bytes (python -m serving.server), or send less")
        else:
            hint = (f"the server's reply of {got} bytes is over its limit of {limit} bytes "
                    "(python -m serving.server --max_message_bytes): raise it, or ask for "
                    "less")
        return f"RESOURCE_EXHAUSTED: {hint} [{text.split(': ', 1)[-1]}]"
    if name == "RESOURCE_EXHAUSTED" and args.rest and "--max_message_bytes" not in text and (
            "exceeds the limit" in text):
        text += " (the server's limit: python -m serving.server --max_message_bytes)"
    if name == "DEADLINE_EXCEEDED":
        text += (f" (no answer within --timeout {args.timeout:g} s: raise it, or lighten "
                 "the server's load)")
    elif name == "UNAVAILABLE" and not isinstance(exc, ServerNotReady):
        text += (f" (is the server running at {server}? --server names it; --wait_seconds "
                 "N retries while it starts)")
    return text


def print_warnings(reply) -> list[str]:
    """What the model did not take in (the reply's ``warnings()``), one ``warning:`` line
    each, on stderr; returns them."""
    warnings = reply.warnings()
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    return warnings
