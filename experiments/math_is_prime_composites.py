"""How hard the composite numbers of ``numbers__is_prime`` are: their smallest prime factors.

    python -m experiments.math_is_prime_composites FILE [FILE ...] [--json OUT]

Reads Mathematics Dataset files of the module (alternating question and answer lines:
"Is N prime?", "Is N a prime number?", "Is N composite?", "Is N a composite number?",
answered True or False) and reports how many of the numbers are prime, and of the
composite ones, the share whose smallest prime factor is at most 2, 3, 5, 7, 11, 13, 100
and 1,000. ``rule_accuracy_percent[p]`` is the exact match of the rule "composite when
divisible by a prime up to p, else prime" over all the questions: what a model that has
learnt divisibility by the primes up to p, and nothing else, scores. A question of any other
wording is an error naming its file and line.
"""

import json
import re
import sys

import numpy as np

#: The wordings of the module: ``{pattern: True when the answer "True" means composite}``.
WORDINGS = {re.compile(r"^Is (\d+) (?:a )?prime(?: number)?\?$"): False,
            re.compile(r"^Is (\d+) (?:a )?composite(?: number)?\?$"): True}
#: The factor bounds reported.
BOUNDS = (2, 3, 5, 7, 11, 13, 100, 1000)


def read_numbers(path):
    """``(numbers int64[N], composite bool[N])`` of one file of the module.

    Raises:
        ValueError: a question of another wording or an answer other than True / False,
            naming the file and line.
    """
    numbers, composite = [], []
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for i in range(0, len(lines) - 1, 2):
        question, answer = lines[i].strip(), lines[i + 1].strip()
        for pattern, asks_composite in WORDINGS.items():
            match = pattern.match(question)
            if match and answer in ("True", "False"):
                numbers.append(int(match.group(1)))
                composite.append((answer == "True") == asks_composite)
                break
        else:
            raise ValueError(f"{path}:{i + 1}: not an is_prime question and answer: "
                             f"{question!r} / {answer!r}")
    return np.asarray(numbers, np.int64), np.asarray(composite, bool)


def smallest_factors(numbers):
    """The smallest prime factor of each number (the number itself when it is prime),
    by trial division of all the numbers at once."""
    factor = np.where(numbers < 2, numbers, 0)
    divisor = 2
    while np.any(factor == 0):
        open_ = factor == 0
        factor[open_ & (numbers % divisor == 0)] = divisor
        factor[(factor == 0) & (divisor * divisor > numbers)] = -1  # prime
        divisor += 1 if divisor == 2 else 2
    return np.where(factor == -1, numbers, factor)


def summary(numbers, composite):
    """The module's composites, counted by smallest prime factor (see the module's doc)."""
    factors = smallest_factors(numbers)
    if np.any((factors < numbers) != composite):
        raise ValueError("an answer disagrees with the number's factors")
    total, composites = len(numbers), int(composite.sum())
    caught = {p: int(np.sum(composite & (factors <= p))) for p in BOUNDS}
    return {"questions": total, "prime": total - composites, "composite": composites,
            "largest_number": int(numbers.max()) if total else None,
            "composite_smallest_factor_at_most_percent": {
                str(p): round(100 * caught[p] / max(composites, 1), 1) for p in BOUNDS},
            "rule_accuracy_percent": {
                str(p): round(100 * (total - composites + caught[p]) / max(total, 1), 1)
                for p in BOUNDS}}


def main(argv=None):
    from serving.command_flags import Command

    parser = Command("python -m experiments.math_is_prime_composites",
                     __doc__.split("\n\n")[0])
    parser.positional("files", "numbers__is_prime files of the Mathematics Dataset", "+")
    parser.string("json", None, "write the summary here too")
    args = parser.parse(argv)
    try:
        parts = [read_numbers(path) for path in args.files]
    except (OSError, ValueError) as error:
        parser.error(error)
    result = {"files": args.files, **summary(np.concatenate([p[0] for p in parts]),
                                             np.concatenate([p[1] for p in parts]))}
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
