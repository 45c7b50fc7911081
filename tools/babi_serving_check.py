"""Serve an exported bAbI model and ask it one test question of every task over gRPC.

    python -m tools.babi_serving_check runs/babi-all/export/babi [--data_dir ../shared/data/babi]
        [--index 0 | --all] [--tasks 1,2,...] [--json FILE]

MODEL_BASE_PATH is the ``<export_dir>/<model_name>`` folder that ``train.babi`` prints (integer
version folders inside). Starts the embedded TF Serving-compatible server on a free loopback port,
sends each task's ``--index``-th test question (story as raw text, one sentence per line) with the
official gRPC stubs through :class:`serving.client.BabiClient`, and prints the served answer next
to the gold one. With ``--all`` it sends every test question of each task instead (``--batch``
per request) and prints each task's served test error. Exits 1 if the server cannot be reached
or a request fails.
"""

import contextlib
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from serving.client import BabiClient  # noqa: E402
from tools.served import model_config, serve  # noqa: E402
from tpr_keras.data import babi  # noqa: E402
from tpr_keras.export.babi_tokenizer import join_story  # noqa: E402
from tpr_keras.provenance import run_command, source_version  # noqa: E402


@contextlib.contextmanager
def served(args):
    """A :class:`BabiClient` of ``args.model_base_path`` served by the embedded server
    (:func:`tools.served.serve`)."""
    with serve([model_config(args.model_name, args.model_base_path)]) as address:
        with BabiClient(address, model_name=args.model_name) as client:
            yield client


def main():
    from serving.command_flags import Command

    parser = Command("python -m tools.babi_serving_check", __doc__.split("\n\n")[0])
    parser.positional("model_base_path")
    parser.string("data_dir", None)
    parser.string("model_name", "babi")
    parser.integer("index", 0, "which test question of each task")
    parser.boolean("all", False, "score every test question of each task (served test error)")
    parser.integer("batch", 250, "questions per request (--all)")
    parser.string("tasks", ",".join(str(t) for t in range(1, 21)))
    parser.string("json", None)
    args = parser.parse()
    if args.all:
        return score_test_sets(args)

    root = babi.find_babi_dir(args.data_dir, download=False)
    stories, questions, gold, tasks = [], [], [], []
    for task in (int(t) for t in args.tasks.split(",")):
        sample = babi.parse_babi_file(babi.task_files(root, task)[1], task)[args.index]
        stories.append(join_story(sample.story))
        questions.append(" ".join(sample.question))
        gold.append(sample.answer)
        tasks.append(task)
    with served(args) as client:
        answers = [client.ask(s, q) for s, q in zip(stories, questions)]  # one RPC each
    rows = []
    for task, story, question, expected, answer in zip(tasks, stories, questions, gold, answers):
        last = story.splitlines()[-1] if story else ""
        print(f"task {task:2d} | ...{last[-40:]!s:>40} | {question:<40} -> {answer.answer:<14} "
              f"(gold {expected}, p={answer.candidates[0][1]:.3f}, version {answer.version})")
        rows.append({"task": task, "question": question, "answer": answer.answer,
                     "gold": expected, "probability": answer.candidates[0][1],
                     "version": answer.version})
    right = sum(r["answer"] == r["gold"] for r in rows)
    print(f"{right} of {len(rows)} served answers equal the gold answer")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


def score_test_sets(args):
    """``--all``: every test question of each task over gRPC, the served test error per task."""
    root = babi.find_babi_dir(args.data_dir, download=False)
    tasks, versions = {}, set()
    with served(args) as client:
        for task in (int(t) for t in args.tasks.split(",")):
            samples = babi.parse_babi_file(babi.task_files(root, task)[1], task)
            wrong = 0
            for start in range(0, len(samples), args.batch):
                chunk = samples[start:start + args.batch]
                answers = client.ask_batch([join_story(s.story) for s in chunk],
                                           [" ".join(s.question) for s in chunk])
                wrong += sum(a.answer != s.answer for a, s in zip(answers, chunk))
                versions.update(a.version for a in answers)
            tasks[str(task)] = {"questions": len(samples), "wrong": wrong,
                                "error_percent": 100.0 * wrong / len(samples)}
            print(f"task {task:2d}: {wrong} of {len(samples)} served answers wrong "
                  f"({tasks[str(task)]['error_percent']:.2f} % test error)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model_base_path": args.model_base_path, "versions": sorted(versions),
                       "tasks": tasks, "command": run_command(),
                       "source": source_version()}, f, indent=1)


if __name__ == "__main__":
    main()
