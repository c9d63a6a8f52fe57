"""``benchmarks/ladder.py``'s saved pairing files: its own (older ones too) and ``arena --json``
results are reused under any spelling of their specs and never overwritten, one of other
settings, or not an arena result, is refused in one line or played again, and ``--no-play``
fits the saved pairings with 1.96 standard errors.  Runs and options: ``test_ladder_runs.py``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("matplotlib")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import ladder  # noqa: E402

from sevenrocks_env.ratings import wilson_interval  # noqa: E402


def test_a_saved_file_that_is_not_an_arena_result_is_one_line_and_left_alone(tmp_path, capsys):
    """A truncated or edited file was a JSONDecodeError or TypeError traceback."""
    out = tmp_path / "ladder"
    out.mkdir()
    for text in ('{"agent_a": "gre', "[1]", '{"agent_a": "greedy"}'):
        (out / "greedy__random.json").write_text(text)
        for mode in ([], ["--no-play"]):
            assert ladder.main(["--scale", "0.005", "--only", "random", "--skip", "heuristic",
                                "--out", str(out), *mode]) == 2
            err = capsys.readouterr().err
            assert err.startswith("error: ") and err.count("\n") == 1, err
            assert (out / "greedy__random.json").read_text() == text


def test_an_arena_json_result_is_reused_and_never_overwritten(tmp_path, capsys):
    """Results measured elsewhere (``sevenrocks arena --json``) can be added as files: one of
    the same specs, seed and pairs is used; one that does not fit is refused, not replaced."""
    from sevenrocks_env.arena_batched import evaluate_batched

    out = tmp_path / "ladder"
    out.mkdir()
    result = evaluate_batched("greedy=greedy", "random=random", 1, seed=31337).as_dict()
    result["win_rate"], result["ci95"] = 0.0, list(wilson_interval(0.0, 1))  # to see it used
    saved = out / "greedy__random.json"
    saved.write_text(json.dumps(result))
    args = ["--scale", "0.005", "--only", "random", "--skip", "heuristic", "--out", str(out)]
    assert ladder.main(args) == 0
    assert "| greedy | random | 1 | 0.000" in capsys.readouterr().out
    assert ladder.main([*args, "--seed", "5"]) == 2
    assert "not written by the ladder" in capsys.readouterr().err
    assert json.loads(saved.read_text()) == result
    # other names, another target, round limit or arena (other deals), or an arena --json
    # that does not say its round limit or arena, or specs that load files it cannot vouch for:
    # refused (a --max-rounds 1 result, every match truncated, was read as 0.5)
    assert (result["max_rounds"], result["engine"]) == (100, "batched:cpu")
    cut = {"max_rounds": 1, "rounds_per_match": 1.0, "truncated": result["matches"]}
    for changes in ({"agent_a": "G"}, {"target": 30}, cut, {"engine": "python"},
                    {"max_rounds": None}, {"engine": None}):
        saved.write_text(json.dumps(result | changes))
        assert ladder.main(args) == 2
        assert "not written by the ladder" in capsys.readouterr().err
    agents = {"p": "ckpt:shipped", "random": "random"}
    played = evaluate_batched("p=ckpt:shipped", "random=random", 1, seed=31337).as_dict()
    (out / "p__random.json").write_text(json.dumps(played))
    with pytest.raises(ladder.SavedError, match="which weights its checkpoints held"):
        ladder.play("p", "random", 1, 31337, out, reuse=True, agents=agents)


def test_the_ladder_s_own_files_from_before_the_round_limit_was_saved_are_reused(tmp_path,
                                                                               capsys):
    out = tmp_path / "ladder"
    args = ["--scale", "0.005", "--only", "random", "--skip", "heuristic", "--out", str(out)]
    assert ladder.main(args) == 0
    saved = out / "greedy__random.json"
    data = json.loads(saved.read_text())
    assert (data["max_rounds"], data["engine"]) == (100, "batched:cpu")
    older = {k: v for k, v in data.items() if k not in ("max_rounds", "engine")}
    older["win_rate"], older["ci95"] = 0.0, list(wilson_interval(0.0, data["pairs"]))
    saved.write_text(json.dumps(older))
    capsys.readouterr()
    assert ladder.main(args) == 0
    assert "| greedy | random | 1 | 0.000" in capsys.readouterr().out
    cut = {"max_rounds": 1, "rounds_per_match": 1.0, "truncated": data["matches"]}
    saved.write_text(json.dumps(older | cut))  # said, and not the ladder's: replayed
    assert ladder.main(args) == 0
    assert "saved with other settings; playing it again" in capsys.readouterr().err
    assert json.loads(saved.read_text())["max_rounds"] == 100
    # --no-play fits what is saved, and says which file was played under another round limit
    saved.write_text(json.dumps(json.loads(saved.read_text()) | cut))
    assert ladder.main(["--no-play", *args]) == 0
    assert "max_rounds 1 on the batched arena: not this ladder's" in capsys.readouterr().err


def test_a_saved_result_is_reused_under_another_spelling_of_its_specs(tmp_path):
    """The ladder's ``search:samples=1`` and a saved file's ``search:win_bonus=5e1,samples=1``
    are one agent (``agents.spec_text``); ``search:samples=2`` is another."""
    from sevenrocks_env.arena_batched import evaluate_batched

    out = tmp_path / "ladder"
    out.mkdir()
    # greedy's pair, saved as the search's: the ladder compares specs, it does not replay
    result = evaluate_batched("s=greedy", "random=random", 1, seed=31337).as_dict()
    result["spec_a"] = "search:win_bonus=5e1,samples=1"
    result["win_rate"], result["ci95"] = 0.0, list(wilson_interval(0.0, 1))  # to see it used
    (out / "s__random.json").write_text(json.dumps(result))
    agents = {"s": "search:samples=1", "random": "random"}
    assert ladder.play("s", "random", 1, 31337, out, reuse=True, agents=agents) == result
    with pytest.raises(ladder.SavedError, match="not written by the ladder"):
        ladder.play("s", "random", 1, 31337, out, reuse=True,
                    agents={"s": "search:samples=2", "random": "random"})


def test_no_reuse_refuses_to_replace_an_arena_result_added_by_hand(tmp_path):
    """``--no-reuse`` plays the ladder's own pairings again; a file it did not write (hours of
    IS-MCTS measured elsewhere, say) is still never replaced: it was, without a word."""
    from sevenrocks_env.arena_batched import evaluate_batched

    out = tmp_path / "ladder"
    out.mkdir()
    added = json.dumps(evaluate_batched("greedy=greedy", "random=random", 1,
                                        seed=31337).as_dict())
    (out / "greedy__random.json").write_text(added)
    with pytest.raises(ladder.SavedError, match="not written by the ladder .* --no-reuse would "
                                                "replace it: move it away"):
        ladder.play("greedy", "random", 1, 31337, out, reuse=False)
    assert (out / "greedy__random.json").read_text() == added
    ours = ladder.play("random", "greedy", 1, 31337, out, reuse=False)  # the ladder's own:
    assert "files" in ours                                              # played, then again
    assert "files" in ladder.play("random", "greedy", 1, 31337, out, reuse=False)


def saved_pairing(a: str, b: str, win_rate: float, pairs: int, seed: int = 31337) -> dict:
    """An arena result of the ladder's agents ``a`` and ``b`` as ``read_result`` accepts it
    (one played pair's fields, renamed and rescored)."""
    from sevenrocks_env.arena_batched import evaluate_batched
    result = evaluate_batched("greedy=greedy", "random=random", 1, seed=seed).as_dict()
    return result | {"agent_a": a, "agent_b": b, "spec_a": ladder.AGENTS[a],
                     "spec_b": ladder.AGENTS[b], "win_rate": win_rate, "pairs": pairs,
                     "matches": 2 * pairs, "ci95": list(wilson_interval(win_rate, pairs))}


def test_the_printed_intervals_are_1_96_standard_errors_of_the_fit(tmp_path, capsys):
    """The ±95% of each rating and of each lead over the next one down: 1.96 times the
    standard errors of the Bradley-Terry fit (``--no-play``, on saved pairings)."""
    from sevenrocks_env.ratings import fit_bradley_terry

    out = tmp_path / "ladder"
    out.mkdir()
    results = [saved_pairing("greedy", "random", 0.7, 200),
               saved_pairing("heuristic", "random", 0.8, 200),
               saved_pairing("heuristic", "greedy", 0.6, 500)]
    for r in results:
        (out / f"{r['agent_a']}__{r['agent_b']}.json").write_text(json.dumps(r))
    capsys.readouterr()
    assert ladder.main(["--no-play", "--out", str(out)]) == 0
    table = capsys.readouterr().out.split("| agent | rating |")[1].splitlines()[2:5]
    names = ["heuristic", "greedy", "random"]
    fitted = fit_bradley_terry(names, {(0, 2): (160, 200), (1, 2): (140, 200),
                                       (0, 1): (300, 500)})
    assert fitted.one_sided == [None] * 3
    expected = []
    for i, name in enumerate(names):
        lead = "" if i == 2 else (f"{fitted.difference(i, i + 1)[0]:+.0f} ± "
                                  f"{round(1.96 * fitted.difference(i, i + 1)[1])}")
        expected.append(f"| {name} | {fitted.rating[i]:+.0f} | "
                        f"{round(1.96 * fitted.stderr(i))} | {lead} |")
    assert table == expected


def test_an_arena_json_that_does_not_say_its_round_limit_or_arena_is_refused(tmp_path):
    """Only the ladder's own older files may lack ``max_rounds`` and ``engine`` (they were
    played with these settings); an arena --json without them may have been played with any."""
    out = tmp_path / "ladder"
    out.mkdir()
    result = saved_pairing("greedy", "random", 0.5, 1)
    agents = {"greedy": "greedy", "random": "random"}
    for missing in (["max_rounds"], ["engine"], ["max_rounds", "engine"]):
        (out / "greedy__random.json").write_text(json.dumps(
            {k: v for k, v in result.items() if k not in missing}))
        with pytest.raises(ladder.SavedError, match="not written by the ladder"):
            ladder.play("greedy", "random", 1, 31337, out, reuse=True, agents=agents)
    (out / "greedy__random.json").write_text(json.dumps(result))  # saying them: reused
    assert ladder.play("greedy", "random", 1, 31337, out, reuse=True, agents=agents) == result


@pytest.mark.parametrize("changes, field", [
    ({"target": 0}, "target"), ({"target": -150}, "target"),
    ({"seconds_per_decision": [-0.001, 0.001]}, "seconds_per_decision"),
    ({"seconds_per_decision": [0.001, -1]}, "seconds_per_decision")])
def test_a_saved_pairing_with_a_target_or_time_no_arena_gives_is_refused(tmp_path, changes,
                                                                         field):
    path = tmp_path / "greedy__random.json"
    path.write_text(json.dumps(saved_pairing("greedy", "random", 0.5, 1) | changes))
    with pytest.raises(ladder.SavedError, match=f"{field} is missing or out of range"):
        ladder.read_saved(path)
