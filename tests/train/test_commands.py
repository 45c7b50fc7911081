"""The ``train.*`` command lines: every command has its own flag set, so all of them load
and parse in one process; every training command recorded in a committed ``results.json``
or preset still parses; ``--size`` is a paper size and the old ``--preset SIZE`` spelling is
read as it, with a notice."""

import glob
import importlib
import json
import pathlib
import shlex

import pytest
from absl import flags

from train import cli

REPO = pathlib.Path(__file__).resolve().parents[2]
COMMANDS = ("babi", "math", "entailment", "export", "evaluate", "save_preset",
            "route_presets", "extract_part")


def test_every_train_command_loads_and_parses_in_one_process():
    """Each module imported beside all the others, each command built and parsed twice: a
    flag defined in a shared registry (absl's global FLAGS) would collide here."""
    modules = {name: importlib.import_module(f"train.{name}") for name in COMMANDS}
    for name, module in modules.items():
        for _ in range(2):
            args = module.command().parse([])
            assert args.given == set() and hasattr(args, "debug"), name
    assert not [m for m in flags.FLAGS.flags_by_module_dict() if m.startswith("train")]
    shared = set(cli.command_flags(modules["babi"].command()))
    assert shared & set(cli.command_flags(modules["math"].command())) >= {"debug", "seed"}


def test_two_commands_defining_one_name_on_a_shared_registry_would_collide():
    """What the test above guards against: absl's registry refuses a second definition."""
    registry = flags.FlagValues()
    flags.DEFINE_bool("debug", False, "", flag_values=registry, module_name="train.a")
    with pytest.raises(flags.DuplicateFlagError, match="debug"):
        flags.DEFINE_bool("debug", False, "", flag_values=registry, module_name="train.b")


def _recorded_commands():
    """``[(file, command)]`` of every ``python -m train.*`` command in committed JSON."""
    found = []

    def walk(value, path):
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "command" and isinstance(item, str) and "-m train." in item:
                    found.append((path, item))
                else:
                    walk(item, path)
        elif isinstance(value, list):
            for item in value:
                walk(item, path)

    for pattern in ("results/**/*.json", "tpr_keras/presets/**/*.json"):
        for path in sorted(glob.glob(str(REPO / pattern), recursive=True)):
            with open(path) as f:
                walk(json.load(f), str(pathlib.Path(path).relative_to(REPO)))
    return found


def test_every_recorded_train_command_parses(capsys):
    recorded = _recorded_commands()
    sizes = set()
    for path, command in recorded:
        argv = shlex.split(command)
        at = argv.index("-m")
        module = importlib.import_module(argv[at + 1])
        try:
            args = module.command().parse(argv[at + 2:])
        except SystemExit:
            pytest.fail(f"{path}: {command}\n{capsys.readouterr().err}")
        if "--preset" in argv and argv[at + 1] in ("train.babi", "train.math"):
            sizes.add((argv[at + 1], args.size))
    assert len(recorded) > 200
    # the old spelling of the sizes, as recorded, reads as --size
    assert {("train.math", "tiny"), ("train.babi", "all_tasks_authors"),
            ("train.babi", "joint_paper")} <= sizes


@pytest.mark.parametrize("argv", [["--preset", "tiny"], ["--preset=tiny"], ["-preset", "tiny"]])
def test_the_old_preset_spelling_of_a_size_is_read_as_size_with_a_notice(argv, capsys):
    from train import math

    args = math.command().parse([*argv, "--steps", "5"])
    assert (args.size, args.steps) == ("tiny", 5) and "size" in args.given
    assert capsys.readouterr().err == "--preset tiny: sizes are --size now; read as --size tiny\n"
    assert math.command().parse(["--size", "small"]).size == "small"
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("module,argv,message", [
    ("math", ["--preset", "tp_transformer_math_focus"], "with --init_from"),
    ("babi", ["--preset", "tpr_rnn_babi_all_tasks"], "sizes are --size (single_task"),
    ("babi", ["--preset", "all_tasks", "--size", "all_tasks"], "both given"),
    ("math", ["--size", "huge"], "value should be one of"),
])
def test_a_trained_preset_or_a_bad_size_is_a_one_line_usage_error(module, argv, message,
                                                                   capsys):
    command = importlib.import_module(f"train.{module}").command()
    with pytest.raises(SystemExit) as exit_:
        command.parse(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and message in err and err.count("\n") == 1, err


def test_the_preset_commands_take_a_trained_preset():
    from train import evaluate, export

    for module in (evaluate, export):
        args = module.command().parse(["--preset", "tpr_rnn_babi_all_tasks"])
        assert args.preset == "tpr_rnn_babi_all_tasks"
