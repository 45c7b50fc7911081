"""A fresh sample of the Mathematics Dataset from DeepMind's generator, under a new seed.

DeepMind's ``mathematics_dataset`` 1.0.1 needs numpy < 1.24 (it uses ``np.object``) and
sympy 1.4 (1.6 moved ``base_solution_linear``; 1.5.1 imports but fails on numpy integers in
the calculus modules), so tpr-keras, on numpy 2, never imports it. This
script runs in a separate environment that has it, and imports nothing from tpr-keras::

    python3 -m venv /tmp/mdgen
    /tmp/mdgen/bin/pip install 'numpy==1.23.5' 'sympy==1.4' 'mathematics_dataset==1.0.1'
    /tmp/mdgen/bin/python -m experiments.math_heldout_sample --out /tmp/heldout --seed 7 \\
        [--regimes interpolate,extrapolate] [--per_module 1000] [--filter place_value] \\
        [--modules numbers__place_value,comparison__pair] \\
        [--train_dir ../shared/data/mathematics]

It writes ``OUT/<regime>/<module>.txt`` in the official v1.0 layout (alternating question and
answer lines): the generator's test regimes, ``interpolate`` (56 modules, the entropy range
of training) and ``extrapolate`` (15 modules), and, for more training questions than the
shared data holds, its training split ``train-easy``, ``train-medium`` and ``train-hard``
(each a third of a module's entropy range, as DeepMind's ``generate.py`` splits them).

The generator itself draws from Python's ``random`` and numpy's global generator without a
seed; this script seeds both with ``--seed`` and runs itself with ``PYTHONHASHSEED=0`` (the generator picks variable names by iterating
over sets of letters). The same seed then gives the same problems and answers; only the order
of independent premises in composed questions ("Suppose ... Suppose ...") can differ between
runs, because the generator orders some of them by object identity. Questions longer than 160
characters or answers longer than 30 are dropped and redrawn as the generator does.
``--max_seconds_per_module`` stops a slow module early (the file then holds fewer questions, and the summary says how many).

With ``--train_dir`` (a dataset folder with ``train-easy/medium/hard``) it counts the sampled
questions that also occur in that module's training files; the summary prints them per module,
since the generator can repeat short questions. Score the sample through an exported model with
``tools/math_savedmodel_accuracy.py EXPORT OUT/interpolate --reported RUN/results.json``.

The output folder must not exist yet or be empty: nothing is overwritten.
"""

import functools
import json
import os
import random
import re
import sys
import time

#: The generator's regimes: its two test regimes, and its training split's three difficulties
#: (each the third of the module's entropy range, as DeepMind's ``generate.py`` makes them).
REGIMES = ("interpolate", "extrapolate", "train-easy", "train-medium", "train-hard")
COMMAND = "experiments.math_heldout_sample"
DIFFICULTIES = ("train-easy", "train-medium", "train-hard")


def flatten(tree, prefix=None):
    """``{"numbers": {"place_value": fn}}`` -> ``{"numbers__place_value": fn}``, sorted by name."""
    flat = {}
    for key, value in tree.items():
        name = key if prefix is None else f"{prefix}__{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, name))
        else:
            flat[name] = value
    return dict(sorted(flat.items()))


def sample(module, max_question=160, max_answer=30, max_failures=100):
    """One ``(question, answer)`` of ``module()``, redrawn while either is too long or the
    generator fails its own check: ``mathematics_dataset`` 1.0.1's ``sample.arithmetic``
    asserts that an expression used up its entropy, and rare draws fail it (seeds 750 and
    751 of ``mul_div_multiple``, after 68,475 and 226,202 questions). The redraw continues
    the same random streams, so a seed still gives the same files, and a seed that never
    fails the check gives the files it gave before. ``max_failures`` such failures in a row
    end it with the generator's own error (a module that always fails it)."""
    failures = 0
    while True:
        try:
            problem = module()
        except AssertionError:
            failures += 1
            if failures >= max_failures:
                raise
            continue
        question, answer = str(problem.question), str(problem.answer)
        if len(question) <= max_question and len(answer) <= max_answer:
            return question, answer


def check_output(out):
    """Refuse an output folder that already holds files."""
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        raise SystemExit(f"{out}: already exists and is not an empty folder; nothing written")


def train_questions(train_dir, module):
    """The set of training questions of ``module`` in a v1.0 dataset folder (empty if none)."""
    questions = set()
    for difficulty in DIFFICULTIES:
        path = os.path.join(train_dir, difficulty, f"{module}.txt")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                questions.update(f.read().rstrip("\n").split("\n")[0::2])
    return questions


def write_module(path, module, count, max_seconds=None, clock=time.monotonic):
    """Write up to ``count`` pairs of ``module`` to ``path``; returns the questions written."""
    questions = []
    start = clock()
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(count):
            if max_seconds is not None and clock() - start > max_seconds:
                break
            question, answer = sample(module)
            if "\n" in question or "\n" in answer:
                raise ValueError(f"{path}: the generator produced a line break in {question!r}")
            f.write(f"{question}\n{answer}\n")
            questions.append(question)
    return questions


def entropy_range(level, levels=3):
    """The generator's entropy map of training difficulty ``level`` (0 easy .. 2 hard): the
    ``level``-th of ``levels`` equal parts of a module's entropy range, as DeepMind's
    ``generate.py`` (``_make_entropy_fn``) splits ``train-easy/medium/hard``."""
    def restrict(range_):
        low, high = range_
        return (low + level / levels * (high - low), low + (level + 1) / levels * (high - low))
    return restrict


#: What the extrapolate modules append to the name of the training module they extend.
EXTRAPOLATE_SUFFIX = re.compile(r"_(big|more|longer|more_samples)$")


def training_module(name):
    """The training module an extrapolate module extends (``*_big`` -> ``*``); else ``name``."""
    return EXTRAPOLATE_SUFFIX.sub("", name)


def select(regime_modules, contains="", names=None):
    """``{regime: {name: module}}``, keeping the modules whose name contains ``contains``
    and, given ``names`` (comma-separated), is one of them.

    Raises:
        ValueError: a name in ``names`` that is a module of none of the regimes (listing
            theirs).
    """
    known = {name for modules in regime_modules.values() for name in modules}
    wanted = None if names is None else names.split(",")
    unknown = sorted(set(wanted or ()) - known)
    if unknown:
        raise ValueError(f"--modules: unknown {unknown}; choose from {sorted(known)}")
    return {regime: {name: fn for name, fn in modules.items()
                     if contains in name and (wanted is None or name in wanted)}
            for regime, modules in regime_modules.items()}


def generate(regime_modules, out, per_module, seed, train_dir=None, max_seconds=None,
             log=print):
    """Write every regime's modules under ``out``; returns the per-module summary.

    ``regime_modules``: ``{regime: {module_name: callable returning a Problem}}``. Python's
    ``random`` and numpy's global generator are seeded with ``seed`` once, before the first
    module, so the same arguments give the same files.
    """
    import numpy as np

    check_output(out)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    summary = {}
    for regime, modules in regime_modules.items():
        os.makedirs(os.path.join(out, regime), exist_ok=True)
        for name, module in modules.items():
            started = time.monotonic()
            questions = write_module(os.path.join(out, regime, f"{name}.txt"), module,
                                     per_module, max_seconds)
            row = {"questions": len(questions), "seconds": round(time.monotonic() - started, 1)}
            if train_dir:
                seen = train_questions(train_dir, training_module(name))
                row["in_train"] = sum(q in seen for q in questions)
            summary[f"{regime}/{name}"] = row
            log(f"{regime}/{name}: {row}")
    return summary


def main(argv=None):
    from serving.command_flags import Command

    parser = Command(f"python -m {COMMAND}", __doc__.split("\n\n")[0])
    parser.string("out", None, "folder for the sampled <regime>/<module>.txt files",
                  required=True)
    parser.integer("seed", None, "seeds Python's random and numpy's global generator",
                   required=True)
    parser.string("regimes", "interpolate", "comma list of " + ", ".join(REGIMES))
    parser.integer("per_module", 1000)
    parser.string("filter", "", "only modules whose name contains this")
    parser.string("modules", None, "only these modules (comma-separated names; with "
                  "--regimes interpolate,extrapolate, names of either)")
    parser.string("train_dir", None, "count sampled questions found in its training files")
    parser.float("max_seconds_per_module", None)
    args = parser.parse(argv)
    if argv is None and os.environ.get("PYTHONHASHSEED") != "0":
        # The generator names variables by iterating over sets of letters: without a fixed
        # string hash the same seed gives the same problems under other variable names.
        # Again as ``-m``, so that the repository stays on the path.
        os.execve(sys.executable, [sys.executable, "-m", COMMAND, *sys.argv[1:]],
                  dict(os.environ, PYTHONHASHSEED="0"))
    regimes = args.regimes.split(",")
    unknown = sorted(set(regimes) - set(REGIMES))
    if unknown:
        parser.error(f"--regimes: unknown {unknown}; choose from {list(REGIMES)}")
    check_output(args.out)
    try:
        from mathematics_dataset.modules import modules as md_modules
    except ImportError as error:
        raise SystemExit(f"mathematics_dataset does not import here ({error}); run this script "
                         "with the separate environment in its docstring") from error
    trees = {"interpolate": md_modules.test, "extrapolate": md_modules.test_extra}
    for level, difficulty in enumerate(DIFFICULTIES):
        trees[difficulty] = functools.partial(md_modules.train, entropy_range(level))
    try:
        regime_modules = select({r: flatten(trees[r]()) for r in regimes}, args.filter,
                                args.modules)
    except ValueError as error:
        parser.error(str(error))
    started = time.time()
    summary = generate(regime_modules, args.out, args.per_module, args.seed, args.train_dir,
                       args.max_seconds_per_module)
    short = {k: v["questions"] for k, v in summary.items() if v["questions"] < args.per_module}
    total = sum(v["questions"] for v in summary.values())
    print(f"{total:,} questions in {len(summary)} files under {args.out} "
          f"({time.time() - started:.0f} s, seed {args.seed})")
    if short:
        print(f"stopped early by --max_seconds_per_module: {short}")
    if args.train_dir:
        print(f"questions also in the training files: "
              f"{sum(v['in_train'] for v in summary.values()):,}")
    with open(os.path.join(args.out, "SAMPLE.json"), "w", encoding="utf-8") as f:
        json.dump({"seed": args.seed, "per_module": args.per_module, "generator":
                   "mathematics_dataset 1.0.1", "files": summary}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
