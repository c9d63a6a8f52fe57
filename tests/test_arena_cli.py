"""``sevenrocks arena`` as a person meets it: a ``--log`` path with a typo in its folder is
refused in one line before anything is played (no folder is made), and a long agent spec does
not stretch the printed table."""

import dataclasses
import os

import pytest

from sevenrocks_env import arena, arena_cli
from sevenrocks_env.arena_log import PairLogError
from sevenrocks_env.arena_report import MAX_NAME

LONG_SPEC = "search:policy=checkpoints/some/very/long/path.pt,samples=64,prior=5"


@pytest.mark.parametrize("engine", [[], ["--batched"]])
def test_a_log_whose_folder_is_missing_is_refused_and_no_folder_is_made(tmp_path, capsys,
                                                                        monkeypatch, engine):
    def played(*args, **kwargs):
        raise AssertionError("a pair was played")
    monkeypatch.setattr(arena, "play_pair", played)
    missing = tmp_path / "typo" / "runs"
    command = ["greedy", "random", "--pairs", "2", "--no-progress", *engine]
    assert arena_cli.main([*command, "--log", str(missing / "pairs.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"the folder {missing} does not exist" in err, err
    assert err.startswith("sevenrocks arena: error: ") and "Traceback" not in err
    (tmp_path / "notes").write_text("a file, not a folder")
    assert arena_cli.main([*command, "--log", str(tmp_path / "notes" / "pairs.jsonl")]) == 2
    assert f"the folder {tmp_path / 'notes'} is not a folder" in capsys.readouterr().err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["notes"]  # nothing made


def test_the_library_makes_no_folder_for_a_log_either(tmp_path):
    log = tmp_path / "typo" / "pairs.jsonl"
    with pytest.raises(PairLogError, match="does not exist"):
        arena.evaluate("greedy", "random", 1, seed=0, log=log)
    assert not (tmp_path / "typo").exists()


def test_a_long_spec_is_shortened_in_the_pair_table_and_given_whole_once():
    result = arena.evaluate("greedy", "random", 1, seed=0)
    plain = result.table().splitlines()
    long = dataclasses.replace(result, agent_a=LONG_SPEC, spec_a=LONG_SPEC).table()
    assert long.count(LONG_SPEC) == 1
    title, *rows = long.splitlines()
    whole = next(row for row in rows if LONG_SPEC in row)
    # every other row exactly as with a short spec: the labels column did not widen
    assert [row for row in rows if row is not whole] == plain[1:]
    assert whole.startswith("A = ") and len(whole.split(LONG_SPEC)[0]) == plain[1].index("1 p")
    assert len(title) <= 2 * MAX_NAME + len(" (A) vs  (B)") and title.endswith(" vs random (B)")


def test_the_cli_prints_a_long_unnamed_spec_once_and_a_narrow_table(capsys):
    spec = "search:samples=1,rollout=greedy,win_bonus=50.0"
    assert arena_cli.main([spec, "random", "--pairs", "1", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.count(spec) == 1
    assert all(len(line) <= 90 for line in out.splitlines() if spec not in line), out


def test_a_log_that_is_not_a_regular_file_is_refused_in_one_line(tmp_path, capsys):
    import os
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # reading it would wait for a writer for ever
    for path, why in ((fifo, "not a regular file"), (os.devnull, "not a regular file"),
                      (tmp_path, "cannot open the pair log (Is a directory)")):
        assert arena_cli.main(["greedy", "random", "--pairs", "1", "--no-progress",
                               "--log", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and why in err and "Traceback" not in err, err


def test_two_specs_with_one_short_name_are_told_apart_in_the_pair_table():
    """Two policy files of one name in two folders both showed as ``ckpt:sevenrocks_ppo``: the
    two-agent table now keeps short names unique, as the matrix did."""
    result = arena.evaluate("greedy", "random", 1, seed=0)
    a, b = "ckpt:checkpoints/a/sevenrocks_ppo.pt", "ckpt:checkpoints/b/sevenrocks_ppo.pt"
    title = dataclasses.replace(result, agent_a=a, spec_a=a, agent_b=b, spec_b=b).table()
    assert title.splitlines()[0] == "ckpt:sevenrocks_ppo (A) vs ckpt:sev...cks_ppo~2 (B)"
    mirror = arena.evaluate("greedy", "greedy", 1, seed=0).table()   # one spec: one label
    assert mirror.splitlines()[0] == "greedy (A) vs greedy (B)" and "~2" not in mirror


@pytest.mark.parametrize("target", ["folder", "/dev/null"])
def test_a_training_script_s_json_that_is_not_a_file_is_refused_before_training(tmp_path,
                                                                               target):
    """``--json`` naming a folder (or a device) failed when the results were written, after
    the training and the evaluation."""
    import argparse

    parser = argparse.ArgumentParser()
    arena_cli.add_evaluation_arguments(parser)
    path = tmp_path if target == "folder" else target
    args = parser.parse_args(["--json", str(path), "--eval-pairs", "3"])
    with pytest.raises(ValueError, match="exists and is not a regular file"):
        arena_cli.check_evaluation_arguments(args)
    arena_cli.check_evaluation_arguments(parser.parse_args(["--json", str(tmp_path / "r.json")]))


def test_a_training_script_s_json_naming_its_model_file_is_refused_before_training(tmp_path):
    """``--export x.pt --json x.pt`` trained, exported, then wrote the results over the policy."""
    import argparse

    parser = argparse.ArgumentParser()
    arena_cli.add_evaluation_arguments(parser)
    model = tmp_path / "policy.pt"
    for json_path in (model, tmp_path / "." / "policy.pt"):
        with pytest.raises(ValueError, match=f"--json {json_path} is where the trained model is "
                                             "written"):
            arena_cli.check_evaluation_arguments(parser.parse_args(["--json", str(json_path)]),
                                                 model)
    arena_cli.check_evaluation_arguments(parser.parse_args(["--json", str(tmp_path / "r.json")]),
                                         model)


def test_more_torch_threads_than_the_bound_are_refused_before_any_work(monkeypatch, capsys):
    """(100,000 threads crashed torch with a segmentation fault.)"""
    torch = pytest.importorskip("torch")
    import sevenrocks_env.arena_batched as arena_batched

    def work(*args, **kwargs):
        raise AssertionError("work started")
    monkeypatch.setattr(arena_batched, "evaluate_batched", work)
    monkeypatch.setattr(torch, "set_num_threads", work)
    assert arena_cli.main(["greedy", "random", "--batched", "--threads", "100000"]) == 2
    assert "--threads must be in [1, 256], got 100000" in capsys.readouterr().err


def test_the_pair_table_says_which_arena_and_match_rules_its_seed_dealt(capsys):
    """One seed deals other hands in the python and the batched arena, and --target and
    --max-rounds change every match: the table said only the seed, so a pasted table could not
    be played again (the JSON kept engine, target and max_rounds; the table now says them)."""
    runs = {"python": [], "batched": ["--batched"]}
    for arena_name, options in runs.items():
        assert arena_cli.main(["greedy", "random", "--pairs", "1", "--no-progress",
                               "--target", "60", "--max-rounds", "7", *options]) == 0
        rows = capsys.readouterr().out.splitlines()
        assert rows[1].endswith(f"seed 0, {arena_name} arena"), rows[1]
        assert rows[2].split(None, 1) == ["match", "to 60 points (R8), cut at 7 rounds (a cut "
                                          "match counts 1/2)"], rows[2]


def test_an_empty_log_path_is_refused_not_ignored_or_read_as_the_folder(capsys):
    """``--log ""`` (an unset shell variable) played a round robin without the log it asked for,
    and a pairing failed on "." ("cannot open the pair log (Is a directory)")."""
    for agents in (["greedy", "random"], ["--round-robin", "greedy", "random"]):
        for path in ("", " "):
            assert arena_cli.main([*agents, "--pairs", "1", "--no-progress", "--log", path]) == 2
            captured = capsys.readouterr()
            assert "--log needs a file path" in captured.err and not captured.out, captured


def test_the_unbatched_arena_runs_torch_on_threads_threads(capsys, monkeypatch):
    """A ``ckpt:`` policy in the unbatched arena ran on torch's default threads (one a core):
    on a busy 2-core machine 12-19 ms of CPU a decision instead of 1.4 ms, and the workers of
    ``--workers 2`` two threads each; ``--threads`` (default 1) was refused without
    ``--batched``.  Now it sets this process's threads and, through ``OMP_NUM_THREADS``
    (read when torch loads), its workers'."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("OMP_NUM_THREADS", "7")  # (restored after the test, as is torch's)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert arena_cli.main(["ckpt:shipped", "random", "--pairs", "1", "--no-progress"]) == 0
        assert torch.get_num_threads() == 1 and os.environ["OMP_NUM_THREADS"] == "1"
        assert arena_cli.main(["greedy", "random", "--pairs", "1", "--threads", "2",
                               "--no-progress"]) == 0
        assert torch.get_num_threads() == 2 and os.environ["OMP_NUM_THREADS"] == "2"
    finally:
        torch.set_num_threads(before)
    capsys.readouterr()


def test_threads_are_checked_at_both_bounds_and_set_in_either_arena(capsys, monkeypatch):
    """``--threads 0`` is refused as too many are, in either arena, before torch or its workers'
    ``OMP_NUM_THREADS`` are touched; 256 is the largest accepted; the batched arena sets the
    count too; ``--batch`` still needs ``--batched``."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("OMP_NUM_THREADS", "5")
    set_to = []
    monkeypatch.setattr(torch, "set_num_threads", set_to.append)
    for options in ([], ["--batched"]):
        assert arena_cli.main(["greedy", "random", "--pairs", "1", "--no-progress",
                               "--threads", "0", *options]) == 2
        assert "--threads must be in [1, 256], got 0" in capsys.readouterr().err
    assert set_to == [] and os.environ["OMP_NUM_THREADS"] == "5"
    for options in ([], ["--batched"]):
        assert arena_cli.main(["greedy", "random", "--pairs", "1", "--no-progress",
                               "--threads", "256", *options]) == 0
        assert set_to == [256]
        set_to.clear()
    assert arena_cli.main(["greedy", "random", "--pairs", "1", "--batch", "8"]) == 2
    assert "--device and --batch are options of --batched" in capsys.readouterr().err
