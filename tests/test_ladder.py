"""``benchmarks/ladder.py``: the ratings ladder runs, resumes from its files, fits and plots."""

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


def test_ladder_smoke_run_writes_results_resumes_and_plots(tmp_path, capsys):
    out, png = tmp_path / "ladder", tmp_path / "ratings.png"
    assert ladder.main(["--scale", "0.005", "--only", "random", "--out", str(out),
                        "--plot", str(png)]) == 0
    first = capsys.readouterr().out
    saved = sorted(p.name for p in out.glob("*.json"))
    assert saved == ["greedy__random.json", "heuristic__random.json"]
    assert png.stat().st_size > 1000
    # random never beats greedy or heuristic: it is rated lowest
    rows = [line for line in first.splitlines() if line.startswith("| random |")]
    assert rows and "-" in rows[-1].split("|")[2]
    # a second run reads the files instead of playing again
    data = json.loads((out / "greedy__random.json").read_text())
    data["win_rate"], data["ci95"] = 0.0, list(wilson_interval(0.0, data["pairs"]))
    (out / "greedy__random.json").write_text(json.dumps(data))
    ladder.main(["--scale", "0.005", "--only", "random", "--out", str(out)])
    assert "| greedy | random | 1 | 0.000" in capsys.readouterr().out
    # ... but not a file saved with another seed or another number of pairs: played again
    for other in (["--seed", "99"], ["--scale", "0.01"]):
        ladder.main(["--scale", "0.005", "--only", "random", "--out", str(out), *other])
        assert "| greedy | random |" in capsys.readouterr().out
        assert json.loads((out / "greedy__random.json").read_text())["win_rate"] == 1.0
        (out / "greedy__random.json").write_text(json.dumps(data))
    # --no-play fits only what is saved
    (out / "heuristic__random.json").unlink()
    ladder.main(["--no-play", "--out", str(out)])
    table = capsys.readouterr().out
    assert "| greedy | random |" in table and "| heuristic |" not in table


def test_the_batch_size_changes_no_result(tmp_path, capsys):
    """--batch (pairs played together) is speed only: the same deals, the same matches."""
    results = []
    for batch in ("1", "256"):
        out = tmp_path / batch
        assert ladder.main(["--scale", "0.02", "--only", "random", "--out", str(out),
                            "--batch", batch, "--device", "cpu"]) == 0
        results.append([{k: v for k, v in json.loads(p.read_text()).items()
                         if "second" not in k and k not in ("wall_s", "decisions_per_s")}
                        for p in sorted(out.glob("*.json"))])
    assert results[0] == results[1] and len(results[0]) == 2
    capsys.readouterr()


def test_batch_and_device_reach_the_batched_arena(tmp_path, monkeypatch, capsys):
    import sevenrocks_env.arena_batched as arena_batched
    calls = []
    played = arena_batched.evaluate_batched

    def recording(*args, **kwargs):
        calls.append((args[2], kwargs["batch"], kwargs["device"]))
        return played(*args, **kwargs)

    monkeypatch.setattr(arena_batched, "evaluate_batched", recording)
    assert ladder.main(["--scale", "0.02", "--only", "random", "--out", str(tmp_path),
                        "--batch", "3", "--device", "cpu"]) == 0
    assert calls == [(4, 3, "cpu"), (4, 3, "cpu")]
    capsys.readouterr()


def test_ratings_follow_the_results():
    results = [{"agent_a": "a", "agent_b": "b", "win_rate": 0.8, "pairs": 100},
               {"agent_a": "b", "agent_b": "c", "win_rate": 0.8, "pairs": 100}]
    rated = ladder.ratings(results)
    assert [r["agent"] for r in rated] == ["a", "b", "c"]
    assert rated[0]["rating"] > 0 > rated[2]["rating"]
    # each row's lead is over the next one down: positive, the gap between the two ratings
    for above, below in zip(rated, rated[1:]):
        assert above["lead"][0] == pytest.approx(above["rating"] - below["rating"])
        assert above["lead"][0] > 0 and above["lead"][1] > 0
    assert rated[-1]["lead"] is None


def test_bad_scale_is_refused():
    with pytest.raises(SystemExit):
        ladder.main(["--scale", "0"])


def test_openspiel_bots_play_in_the_process_pool_arena(tmp_path, monkeypatch):
    pytest.importorskip("pyspiel", reason="open-spiel is not installed")
    import sevenrocks_env.arena as arena
    import sevenrocks_env.arena_batched as arena_batched

    used = []
    real = arena.evaluate
    monkeypatch.setattr(arena, "evaluate", lambda *a, **k: used.append(k) or real(*a, **k))
    monkeypatch.setattr(arena_batched, "evaluate_batched",
                        lambda *a, **k: pytest.fail("IS-MCTS has no batched version"))
    agents = {"tiny": "openspiel:ismcts:sims=2", "random": "random"}
    data = ladder.play("tiny", "random", 1, 5, tmp_path, reuse=False, workers=1, agents=agents)
    assert used and used[0]["workers"] == 1
    assert (data["agent_a"], data["agent_b"], data["pairs"]) == ("tiny", "random", 1)
    assert json.loads((tmp_path / "tiny__random.json").read_text())["win_rate"] == data["win_rate"]


def test_make_train_joins_the_ladder_when_given(tmp_path, capsys):
    import torch

    from sevenrocks_env.policy import PolicyNet
    from training.checkpoint import policy_entries, save_checkpoint

    torch.manual_seed(0)
    path = save_checkpoint(tmp_path / "latest.pt", policy_entries(PolicyNet((8, 8)), 0))
    out = tmp_path / "ladder"
    assert ladder.main(["--scale", "0.001", "--only", "make_train", "--make-train", str(path),
                        "--out", str(out)]) == 0
    assert sorted(p.name for p in out.glob("*.json")) == ["make_train__heuristic.json",
                                                         "make_train__shipped.json"]
    assert "| make_train | heuristic | 1 |" in capsys.readouterr().out
    # the same path retrained in place is played again (the saved file's fingerprint differs)
    saved = json.loads((out / "make_train__heuristic.json").read_text())
    saved["win_rate"] = 0.123
    (out / "make_train__heuristic.json").write_text(json.dumps(saved))
    torch.manual_seed(1)
    save_checkpoint(tmp_path / "latest.pt", policy_entries(PolicyNet((8, 8)), 0))
    ladder.main(["--scale", "0.001", "--only", "make_train", "--make-train", str(path),
                 "--out", str(out)])
    assert "0.123" not in capsys.readouterr().out
    assert "make_train" not in ladder.AGENTS  # the module's table is left as it was
    # without --make-train its saved pairings are left out of the fit: nothing left here
    assert ladder.main(["--no-play", "--out", str(out)]) == 2
    assert "no pairing played or saved" in capsys.readouterr().err


def test_skip_leaves_out_pairings_and_unknown_names_are_refused(tmp_path, capsys):
    out = tmp_path / "ladder"
    assert ladder.main(["--scale", "0.005", "--only", "random", "--skip", "heuristic",
                        "--out", str(out)]) == 0
    assert sorted(p.name for p in out.glob("*.json")) == ["greedy__random.json"]
    for option in ("--only", "--skip"):
        with pytest.raises(SystemExit):
            ladder.main([option, "heuristc", "--out", str(out)])
        assert "no agent heuristc in the ladder" in capsys.readouterr().err


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


def test_outputs_and_the_make_train_file_are_checked_before_playing(tmp_path, capsys):
    out = tmp_path / "ladder"
    (tmp_path / "file").write_text("")
    for options, words in ((["--plot", str(tmp_path / "file" / "x.png")], "not a folder"),
                           (["--make-train", str(tmp_path / "missing.pt")], "cannot read"),
                           (["--out", str(tmp_path / "file" / "ladder")], "not a folder")):
        with pytest.raises(SystemExit) as stop:
            ladder.main(["--scale", "0.005", "--only", "random", "--out", str(out), *options])
        assert stop.value.code == 2 and words in capsys.readouterr().err
        assert not out.exists()  # nothing played, no folder made


def test_an_agent_that_cannot_be_built_is_refused_before_the_first_pairing(tmp_path, capsys,
                                                                          monkeypatch):
    """A ``--make-train`` file cut short (it exists, so its fingerprint was taken), or the
    ladder's relative ``previous_v2`` path from another folder: every other pairing was played
    first, then a ValueError traceback ended the ladder (hours in, at full scale)."""
    cut = tmp_path / "cut.pt"
    cut.write_bytes(b"PK\x03\x04 not a whole checkpoint")
    out = tmp_path / "ladder"
    for options, words in ((["--only", "random", "make_train", "--make-train", str(cut)],
                            "agent make_train"),
                           (["--only", "previous_v2"], "agent previous_v2")):
        monkeypatch.chdir(tmp_path)  # (previous_v2 is a path relative to the repository)
        with pytest.raises(SystemExit) as stop:
            ladder.main(["--scale", "0.005", "--out", str(out), *options])
        err = capsys.readouterr().err
        assert stop.value.code == 2 and words in err and "Traceback" not in err, err
        assert not out.exists()  # nothing played, no folder made


def test_check_agents_builds_each_agent_once_and_not_one_whose_pairings_are_all_saved(
        tmp_path, monkeypatch):
    import sevenrocks_env.agents

    built = []

    def make_agent(spec):
        built.append(spec)
        if spec == "broken":
            raise ValueError("cut short")
    monkeypatch.setattr(sevenrocks_env.agents, "make_agent", make_agent)
    agents = {"a": "greedy", "b": "random", "x": "broken"}
    pairings = [("a", "b", 5), ("b", "a", 5), ("a", "x", 5)]
    assert ladder.check_agents(pairings, agents, None) == "agent x (broken): cut short"
    assert built == ["greedy", "random", "broken"]
    (tmp_path / "a__x.json").write_text("{}")  # read, not played: x is not built
    built.clear()
    assert ladder.check_agents(pairings, agents, tmp_path) is None
    assert built == ["greedy", "random"]


def test_reuse_no_reuse_no_play_and_skip_decide_which_agents_are_built(tmp_path, capsys):
    """With --reuse an agent whose pairings are all saved is not built before the first
    pairing; if a saved file turns out to be of other settings, the pairing that cannot build
    it ends the ladder in one line, not a traceback.  --no-reuse builds it first; --no-play
    builds nothing.  --skip leaves out a pairing by its B side too."""
    out, cut = tmp_path / "ladder", tmp_path / "cut.pt"
    cut.write_bytes(b"PK\x03\x04 not a whole checkpoint")
    assert ladder.main(["--scale", "0.005", "--only", "random", "--skip", "heuristic",
                        "--out", str(out)]) == 0
    capsys.readouterr()
    # --skip random leaves out greedy__random (random its B side): nothing saved is left
    assert ladder.main(["--no-play", "--only", "greedy", "--skip", "random", "--out",
                        str(out)]) == 2
    assert "no pairing played or saved" in capsys.readouterr().err
    make_train = ["--scale", "0.005", "--only", "make_train", "--make-train", str(cut), "--out",
                  str(out)]
    assert ladder.main(["--no-play", *make_train]) == 2  # nothing built, nothing saved
    assert "no pairing played or saved" in capsys.readouterr().err
    saved = (out / "greedy__random.json").read_text()
    for name in ("make_train__heuristic.json", "make_train__shipped.json"):
        (out / name).write_text(saved)  # the ladder's files, of other settings
    assert ladder.main(make_train) == 2
    err = capsys.readouterr().err
    assert "error: make_train against heuristic: " in err and "Traceback" not in err, err
    with pytest.raises(SystemExit) as stop:
        ladder.main(["--no-reuse", *make_train])
    assert stop.value.code == 2 and "agent make_train" in capsys.readouterr().err


def test_a_lead_over_an_agent_rated_by_the_prior_is_not_given_an_interval(tmp_path, capsys):
    out = tmp_path / "ladder"
    assert ladder.main(["--scale", "0.005", "--only", "random", "--skip", "heuristic",
                        "--out", str(out)]) == 0
    rows = capsys.readouterr().out.splitlines()
    greedy = next(row for row in rows if row.startswith("| greedy | ") and "±" not in row[10:]
                  and row.count("|") == 5)
    assert greedy.rstrip().endswith("| prior |")


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


def test_workers_on_a_gpu_are_refused_before_anything_is_read(tmp_path, monkeypatch, capsys):
    """--workers play on the CPU: with --device cuda the ladder says so at once (the device
    is taken as given here, so that a machine without one checks the rule too)."""
    monkeypatch.setattr(ladder.arguments, "device", str)
    with pytest.raises(SystemExit) as stop:
        ladder.main(["--no-play", "--out", str(tmp_path), "--device", "cuda", "--workers", "2"])
    assert stop.value.code == 2
    assert "--workers 2 play on the CPU; on cuda use one" in capsys.readouterr().err
