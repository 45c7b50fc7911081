"""experiments.math_is_prime_composites: the module's composites by smallest prime factor,
and what a divisibility rule scores."""

import json

import numpy as np
import pytest

from experiments import math_is_prime_composites as composites


def _write(path, pairs):
    path.write_text("".join(f"{q}\n{a}\n" for q, a in pairs))
    return path


def test_smallest_factors_by_trial_division():
    numbers = np.array([2, 3, 4, 9, 15, 49, 97, 221, 1_000_003, 999_983 * 7], np.int64)
    np.testing.assert_array_equal(composites.smallest_factors(numbers),
                                  [2, 3, 2, 3, 3, 7, 97, 13, 1_000_003, 7])


def test_summary_counts_composites_and_the_rules_accuracy(tmp_path, capsys):
    path = _write(tmp_path / "numbers__is_prime.txt", [
        ("Is 97 prime?", "True"), ("Is 221 a prime number?", "False"),  # 13 * 17
        ("Is 10 composite?", "True"), ("Is 101 a composite number?", "False"),
        ("Is 1018081 prime?", "False")])  # 1009 ** 2
    out = tmp_path / "out.json"
    assert composites.main([str(path), "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert json.loads(capsys.readouterr().out) == result
    assert (result["questions"], result["prime"], result["composite"]) == (5, 2, 3)
    at_most = result["composite_smallest_factor_at_most_percent"]
    assert (at_most["2"], at_most["11"], at_most["13"], at_most["1000"]) == (
        33.3, 33.3, 66.7, 66.7)
    # primes are always right under the rule; composites when a factor <= p divides them
    assert result["rule_accuracy_percent"]["2"] == 60.0
    assert result["rule_accuracy_percent"]["13"] == 80.0


def test_another_wording_or_a_wrong_answer_names_file_and_line(tmp_path, capsys):
    path = _write(tmp_path / "m.txt", [("Is 7 prime?", "True"), ("Is 8 even?", "True")])
    with pytest.raises(SystemExit) as exit_:
        composites.main([str(path)])
    assert exit_.value.code == 2
    assert f"{path}:3: not an is_prime question" in capsys.readouterr().err
    wrong = _write(tmp_path / "w.txt", [("Is 9 prime?", "True")])
    with pytest.raises(ValueError, match="disagrees"):
        composites.summary(*composites.read_numbers(wrong))
