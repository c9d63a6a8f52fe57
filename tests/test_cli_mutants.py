"""The ``sevenrocks`` dispatcher (cli.py), ``sevenrocks arena`` (arena_cli.py) and the argparse
types (arguments.py): tests written in a mutation audit, each for a deliberate small change of
the product code that no earlier test noticed."""

import argparse
import errno

import pytest

from sevenrocks_env import arena_cli, arguments
from sevenrocks_env.cli import SUBCOMMANDS, guarded, main


def test_an_output_error_names_the_command_and_at_most_80_characters_of_the_file(capsys):
    name = "/mnt/full/" + "x" * 200

    def full():
        raise OSError(errno.ENOSPC, "No space left on device", name)

    assert guarded("sevenrocks replay", full) == 2
    assert capsys.readouterr().err == \
        f"error: sevenrocks replay: No space left on device ({name[:80]})\n"


def test_a_subcommand_whose_import_fails_inside_is_exit_2_too(monkeypatch, capsys):
    """An installed package that fails to import a name (an ImportError, not only a missing
    module) is the same one-line hint, not a traceback."""
    import importlib

    def broken(name):
        raise ImportError("cannot import name 'thing' from 'torch'")

    monkeypatch.setattr(importlib, "import_module", broken)
    assert "train" in SUBCOMMANDS and main(["train"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: sevenrocks train needs a package that is not installed "
                          "(cannot import name 'thing' from 'torch')"), err


def test_a_count_is_bounded_at_10_to_the_12():
    assert arguments.MAX_COUNT == 10 ** 12
    assert arguments.count(str(10 ** 12)) == 10 ** 12
    refused = r"must be an int in \[1, 1000000000000\], got 1000000000001"
    with pytest.raises(argparse.ArgumentTypeError, match=refused):
        arguments.count(str(10 ** 12 + 1))


def test_pairs_start_at_1_and_a_bad_int_is_shown_cut_at_40_characters():
    assert arguments.pairs("1") == 1
    with pytest.raises(argparse.ArgumentTypeError, match=r"must be an int in \[1, "):
        arguments.pairs("0")
    with pytest.raises(argparse.ArgumentTypeError) as info:
        arguments.count("x" * 100)
    assert str(info.value) == f"must be an int, got {'x' * 40!r}"


def test_the_log_folder_is_checked_before_the_arena_starts(tmp_path, monkeypatch, capsys):
    """``--log`` with a typo in its folder is refused before any agent is built or pair
    played (a checkpoint agent takes seconds to load)."""
    def work(*args, **kwargs):
        raise AssertionError("the arena started")

    monkeypatch.setattr(arena_cli, "evaluate", work)
    missing = tmp_path / "typo"
    assert arena_cli.main(["greedy", "random", "--log", str(missing / "p.jsonl")]) == 2
    assert f"the folder {missing} does not exist" in capsys.readouterr().err


def test_negative_eval_pairs_are_refused_naming_the_option():
    args = argparse.Namespace(eval_against=["greedy"], eval_pairs=-1, eval_seed=0, json=None)
    with pytest.raises(ValueError, match=r"^--eval-pairs must be >= 0, got -1$"):
        arena_cli.check_evaluation_arguments(args)
    arena_cli.check_evaluation_arguments(argparse.Namespace(
        eval_against=["greedy"], eval_pairs=0, eval_seed=0, json=None))


def _evaluation_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    arena_cli.add_evaluation_arguments(parser)
    return parser.parse_args(list(argv))


def test_evaluation_defaults_and_a_seed_or_json_folder_refused_before_training(tmp_path):
    args = _evaluation_args()
    assert (args.eval_pairs, args.eval_seed, args.eval_against, args.json) == \
        (100, 12345, ["greedy", "heuristic"], None)
    args.eval_seed = -1  # (a script that sets its seed itself)
    with pytest.raises(ValueError, match="seed must be in"):
        arena_cli.check_evaluation_arguments(args)
    missing = tmp_path / "typo" / "r.json"
    with pytest.raises(ValueError, match=f"^--json {missing}: folder {missing.parent} does "
                                         "not exist$"):
        arena_cli.check_evaluation_arguments(_evaluation_args("--json", str(missing)))


def test_eval_pairs_0_skips_the_evaluation_and_still_writes_the_json(tmp_path, monkeypatch):
    def work(*args, **kwargs):
        raise AssertionError("an evaluation was played")

    monkeypatch.setattr(arena_cli, "evaluate", work)
    path = tmp_path / "r.json"
    args = _evaluation_args("--eval-pairs", "0", "--json", str(path))
    assert arena_cli.report_evaluation("greedy", "x", args, {"steps": 3}) == \
        {"steps": 3, "arena": {}}
    assert path.read_text() == '{\n  "steps": 3,\n  "arena": {}\n}'


def test_the_batched_arena_refuses_a_third_agent_before_any_work(monkeypatch, capsys):
    pytest.importorskip("torch")
    import sevenrocks_env.arena_batched as arena_batched

    def work(*args, **kwargs):
        raise AssertionError("work started")

    monkeypatch.setattr(arena_batched, "evaluate_batched", work)
    assert arena_cli.main(["greedy", "random", "heuristic", "--batched"]) == 2
    assert "give exactly two agents (A B); got ['greedy', 'random', 'heuristic']" in \
        capsys.readouterr().err


def test_an_unknown_eval_against_spec_is_refused_before_training():
    with pytest.raises(ValueError, match="unknown agent spec 'nonsense'"):
        arena_cli.check_evaluation_arguments(_evaluation_args("--eval-against", "nonsense"))


def test_check_specs_is_a_usage_error_naming_the_option(capsys):
    parser = argparse.ArgumentParser(prog="bench")
    arena_cli.check_specs(parser, "--agents", ["greedy", "mine=random"])
    with pytest.raises(SystemExit) as stop:
        arena_cli.check_specs(parser, "--agents", ["greedy", "mine=nonsense"])
    assert stop.value.code == 2
    assert "bench: error: --agents: unknown agent spec 'nonsense'" in capsys.readouterr().err


def test_the_arena_plays_100_pairs_from_seed_0_by_default():
    args = arena_cli._parser().parse_args(["greedy", "random"])
    assert (args.pairs, args.seed, args.workers, args.threads) == (100, 0, 1, 1)
