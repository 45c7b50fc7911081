"""``serving.command_flags.Command``: absl flags for one command line (every command outside
``train/``): its own FlagValues, the flag forms, positionals, ``--help`` and one-line errors."""

import pytest
from absl import flags

from serving.command_flags import Command


def example(prog="python -m example"):
    command = Command(prog, "Does one thing.")
    command.string("name", "world", "who to greet")
    command.integer("times", 1, "how often")
    command.float("seconds", 2.5)
    command.boolean("json", False, "print JSON")
    command.enum("arch", "plain", ["plain", "bidaf"], "the model")
    command.multi("runs", "LABEL=DIR")
    command.string("out", None, "output folder", required=True)
    command.alias("who", "name")
    command.positional("files", "input files", "*")
    return command


def test_flag_forms_positionals_and_what_was_given():
    args = example().parse(["first", "--name=you", "--times", "3", "--json", "--runs", "A=a",
                            "--runs=B=b", "--out", "o", "second", "--seconds=0.5"])
    assert (args.name, args.times, args.seconds, args.json) == ("you", 3, 0.5, True)
    assert args.runs == ["A=a", "B=b"] and args.out == "o" and args.arch == "plain"
    assert args.files == ["first", "second"]  # positionals may stand between flags
    assert args.given == {"name", "times", "json", "runs", "out", "seconds"}
    args = example().parse(["--out=o", "--nojson", "--who", "alias", "--", "--not-a-flag"])
    assert args.json is False and args.name == "alias" and args.files == ["--not-a-flag"]
    assert example().parse(["--out=o", "--json=false"]).json is False
    assert example().parse(["--out=o", "--json=1"]).json is True
    defaults = example().parse(["--out=o"])
    assert (defaults.name, defaults.times, defaults.runs, defaults.files) == ("world", 1, [], [])


def test_commands_in_one_process_keep_their_flags_apart():
    """The same flag names in two commands (and in absl's global FLAGS) do not clash."""
    first, second = example("python -m first"), example("python -m second")
    assert first.parse(["--out=a", "--times=2"]).times == 2
    assert second.parse(["--out=b"]).times == 1
    assert "times" not in flags.FLAGS and "out" not in flags.FLAGS


@pytest.mark.parametrize("argv,message", [
    (["--out=o", "--nope=1"], "Unknown command line flag 'nope'"),
    (["--out=o", "--times=many"], "flag --times=many: invalid literal for int()"),
    (["--out=o", "--arch=other"], "value should be one of <plain|bidaf>"),
    (["--out=o", "--json=yes"], "flag --json=yes"),
    (["--ou=o"], "Unknown command line flag 'ou'"),  # no abbreviations
    ([], "--out is required"),
])
def test_a_bad_command_line_is_one_line_and_exit_status_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        example().parse(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("python -m example: error: "), err
    assert message in err, err


def test_positional_counts():
    command = Command("python -m p")
    command.positional("source")
    command.positional("target", "where to", "?")
    assert vars(command.parse(["a"])) == {"source": "a", "target": None, "given": set()}
    command = Command("python -m p")
    command.positional("source")
    command.positional("rest", "", "+")
    assert command.parse(["a", "b", "c"]).rest == ["b", "c"]
    for argv in ([], ["a"]):  # source missing; rest needs one at least
        command = Command("python -m p")
        command.positional("source")
        command.positional("rest", "", "+")
        with pytest.raises(SystemExit):
            command.parse(argv)
    command = Command("python -m p")
    with pytest.raises(SystemExit):
        command.parse(["stray"])  # no positionals defined


def test_help_lists_every_flag_with_its_default_and_exits_0(capsys):
    for spelling in ("--help", "-h"):
        with pytest.raises(SystemExit) as exit_:
            example().parse(["--times=x", spelling])  # --help wins over a bad value
        assert exit_.value.code == 0
        out = capsys.readouterr().out
        assert out.startswith("usage: python -m example [--flag=value ...] [FILES ...]\n")
        for line in ("--name=string (default world)", "--times=int (default 1)",
                     "--seconds=float (default 2.5)", "--[no]json (default false)",
                     "--arch={plain|bidaf} (default plain)", "--runs=string (default none) "
                     "(repeatable)", "--out=string (required)", "FILES"):
            assert f"\n  {line}\n" in out, (line, out)
        assert "Does one thing." in out and "<plain|bidaf>:" not in out


def test_help_groups_flags_under_titles_after_an_example():
    command = Command("python -m grouped", "Does one thing.", example="python -m grouped --b 2")
    command.string("first", "x", "before any group")
    command.group("Data")
    command.integer("b", 1, "in Data", lower_bound=0)
    command.boolean("maybe", None, "unset boolean")
    command.group("Outputs")
    command.string("out", None, "in Outputs")
    lines = command.help_text().splitlines()
    assert lines[:5] == ["usage: python -m grouped [--flag=value ...]", "",
                         "Does one thing.", "", "Example: python -m grouped --b 2"]
    assert [line for line in lines if line.startswith("  --")] == [
        "  --first=string (default x)", "  --b=int (default 1)", "  --[no]maybe (default none)",
        "  --out=string (default none)"]
    data, outputs = lines.index("Data:"), lines.index("Outputs:")
    assert lines.index("  --first=string (default x)") < data < lines.index(
        "  --b=int (default 1)") < outputs < lines.index("  --out=string (default none)")
    with pytest.raises(SystemExit):  # below lower_bound
        command.parse(["--b=-1"])


def test_a_command_parses_once():
    command = example()
    command.parse(["--out=o"])
    with pytest.raises(RuntimeError, match="parsed a command line already"):
        command.parse(["--out=o"])
