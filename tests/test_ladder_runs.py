"""``benchmarks/ladder.py``: the ratings ladder runs, resumes and plots; its options (--batch,
--device, --skip, --only, --make-train, --reuse, --no-play, --workers) reach the arena or are
refused before playing, and the ratings follow the results.  Its saved pairing files:
``test_ladder_saved.py``."""

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
from test_benchmarks_tables import says_its_machine  # noqa: E402


def test_ladder_smoke_run_writes_results_resumes_and_plots(tmp_path, capsys):
    out, png = tmp_path / "ladder", tmp_path / "ratings.png"
    assert ladder.main(["--scale", "0.005", "--only", "random", "--out", str(out),
                        "--plot", str(png)]) == 0
    first = capsys.readouterr().out
    assert says_its_machine(first.splitlines()[0], torch_threads=1)  # (the ladder's 1 thread)
    assert first.splitlines()[1] == "deal seed 31337, pairs x 0.005 (--scale)"  # the table's
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
    assert "--no-play: the saved results, each with its own seed and pairs" in table
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


def test_workers_on_a_gpu_are_refused_before_anything_is_read(tmp_path, monkeypatch, capsys):
    """--workers play on the CPU: with --device cuda the ladder says so at once (the device
    is taken as given here, so that a machine without one checks the rule too)."""
    monkeypatch.setattr(ladder.arguments, "device", str)
    with pytest.raises(SystemExit) as stop:
        ladder.main(["--no-play", "--out", str(tmp_path), "--device", "cuda", "--workers", "2"])
    assert stop.value.code == 2
    assert "--workers 2 play on the CPU; on cuda use one" in capsys.readouterr().err
