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
    data["win_rate"] = 0.0
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


def test_ratings_follow_the_results():
    results = [{"agent_a": "a", "agent_b": "b", "win_rate": 0.8, "pairs": 100},
               {"agent_a": "b", "agent_b": "c", "win_rate": 0.8, "pairs": 100}]
    rated = ladder.ratings(results)
    assert [r["agent"] for r in rated] == ["a", "b", "c"]
    assert rated[0]["rating"] > 0 > rated[2]["rating"]


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
