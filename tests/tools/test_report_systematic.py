"""tools/report/systematic.py: the §7 tables of new names as Markdown."""

from tools.report.systematic import compare_markdown, systematic_markdown


def result(alex, logan):
    return {"pairs": [
        {"name": "Alex", "task": 1, "seen": True, "accuracy": alex[0], "count": 10},
        {"name": "Alex", "task": 6, "seen": True, "accuracy": alex[1], "count": 10},
        {"name": "Logan", "task": 1, "seen": True, "accuracy": logan[0], "count": 10},
        {"name": "Logan", "task": 6, "seen": False, "accuracy": logan[1], "count": 10}]}


def test_the_table_marks_the_tasks_a_name_never_trained_on():
    lines = systematic_markdown(result((100, 90), (100, 80))).splitlines()
    assert "| Logan | 1 | 90.0 | 100.0 | 80.0 |" in lines
    assert "| Logan | 100.0 | 80.0* |" in lines
    assert lines[-1] == "`*`: a task on whose stories the name was never trained."


def test_the_comparison_gives_each_models_drop_against_the_fully_trained_name():
    text = compare_markdown({"A": result((100, 90), (100, 80)), "B": result((90, 90), (60, 40))})
    assert "| Logan | 1 | 90.0 | +5.0 | 50.0 | +40.0 |" in text
    assert "Largest drop of a partly trained name against Alex: A +5.0 points, B +40.0 points." \
        in text
