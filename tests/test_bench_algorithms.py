"""``benchmarks/algorithms.py``'s table: the interval is over the deals every seed plays."""


import pytest

from sevenrocks_env.ratings import wilson_interval
from script_modules import benchmark


@pytest.fixture(scope="module")
def bench():
    return benchmark("algorithms")


def test_two_seeds_on_the_same_50_deals_are_50_trials_and_show_their_own_rates(bench):
    """Pooling them as 100 pairs made the interval too narrow and hid the seed-to-seed spread."""
    runs = [{"algo": "ours", "seed": seed, "env_steps": 98_304, "train_s": 60.0,
             "arena": {"greedy": {"pairs": 50, "win_rate": greedy},
                       "heuristic": {"pairs": 50, "win_rate": heuristic}}}
            for seed, greedy, heuristic in ((1, 0.80, 0.45), (2, 0.86, 0.53))]
    row = next(line for line in bench.table(runs, 98_304, 50, 7).splitlines()
               if line.startswith("| ours"))
    lo, hi = wilson_interval(0.83, 50)
    assert f"0.830 [{lo:.3f}, {hi:.3f}] (seeds: 0.800, 0.860)" in row
    lo, hi = wilson_interval(0.49, 50)
    assert f"0.490 [{lo:.3f}, {hi:.3f}] (seeds: 0.450, 0.530)" in row


def test_the_budget_column_is_named_for_what_it_counts(bench):
    """Every run's count is of learner decisions (our ``global_step``, SB3's timesteps with
    ``skip_forced``), not env steps, which count all moves (``train_speed.py``'s)."""
    runs = [{"algo": "ours", "seed": 1, "env_steps": 98_304, "train_s": 60.0,
             "arena": {o: {"pairs": 50, "win_rate": 0.5} for o in ("greedy", "heuristic")}}]
    header = next(line for line in bench.table(runs, 98_304, 50, 7).splitlines()
                  if line.startswith("| algorithm"))
    assert header.split(" | ")[2] == "learner decisions (mean)"
    assert "env steps" not in header


def test_the_table_says_its_deal_seed_and_machine(bench):
    runs = [{"algo": "ours", "seed": 1, "env_steps": 98_304, "train_s": 60.0,
             "arena": {o: {"pairs": 50, "win_rate": 0.5} for o in ("greedy", "heuristic")}}]
    text = bench.table(runs, 98_304, 50, 7)
    assert "the same 50 duplicate pairs (deal seed 7) per opponent" in text
    from sevenrocks_env.machine import machine_text
    machine = machine_text().partition("load average")[0]  # (the load may move meanwhile)
    assert machine and text.splitlines()[0].startswith(machine)


def test_reuse_scores_the_files_in_out_not_a_path_read_from_run_json(bench, tmp_path):
    """``--reuse`` evaluated whatever checkpoint the folder's run.json named: a copied folder
    scored the original's files (replaced meanwhile), a moved one ended in a traceback."""
    import json
    out = tmp_path / "copy" / "ours_seed1"
    out.mkdir(parents=True)
    saved = out / "run.json"
    saved.write_text(json.dumps({"agent": "ckpt:/elsewhere/latest.pt", "env_steps": 8192,
                                 "train_s": 12.5, "process_s": 20.0, "tag": "8192/points"}))
    assert bench.reused_run(saved, "8192/points") == {"env_steps": 8192, "train_s": 12.5,
                                                      "process_s": 20.0, "tag": "8192/points"}
    assert bench.artifact("ours", out) == f"ckpt:{tmp_path / 'copy' / 'ckpt' / 'ours_seed1'}" \
        "/latest.pt"
    assert bench.artifact("sb3-self", out) == f"sb3:{out / 'model.zip'}"
    assert bench.reused_run(saved, "16384/points") is None  # another budget: trains again
    for bad in ({"env_steps": "many"}, {"train_s": float("inf")}, {"process_s": True}):
        saved.write_text(json.dumps({"env_steps": 8192, "train_s": 1.0, "process_s": 1.0,
                                     "tag": "8192/points", **bad}))
        assert bench.reused_run(saved, "8192/points") is None
    saved.write_text("{")
    assert bench.reused_run(saved, "8192/points") is None


def test_our_trainer_is_started_afresh_in_a_folder_an_earlier_run_left(bench, tmp_path,
                                                                      monkeypatch):
    """Without ``--force`` a second run into the same ``--out`` stopped at the trainer's
    'run folder exists already ... train it on with --resume', advice for another command."""
    commands = []

    def run(cmd, log, env=None):
        commands.append(cmd)
        raise RuntimeError("stop here")

    monkeypatch.setattr(bench, "_run", run)
    with pytest.raises(RuntimeError, match="stop here"):
        bench.train_one("ours", 1, 8192, tmp_path / "ours_seed1", "python")
    assert commands[0][1:6] == ["-m", "training.train", "--config", "configs/default.yaml",
                                "--force"]


def test_a_run_that_trains_again_drops_the_old_run_s_numbers_first(bench, tmp_path,
                                                                  monkeypatch):
    """Trained afresh (--force) over an earlier run, a run stopped half-way left the earlier
    run.json beside its own checkpoint: a later --reuse scored the new policy under the old
    numbers.  A --reuse'd run whose policy file is gone says so in one line."""
    import json
    out = tmp_path / "alg"
    folder = out / "ours_seed1"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"env_steps": 8192, "train_s": 1.0,
                                                 "process_s": 1.0, "tag": "8192/points"}))

    def stopped(*args, **kwargs):
        raise RuntimeError("stopped half-way")

    monkeypatch.setattr(bench, "train_one", stopped)
    argv = ["--algos", "ours", "--seeds", "1", "--pairs", "1", "--out", str(out)]
    assert bench.main([*argv, "--budget", "16384"]) == 1
    assert not (folder / "run.json").exists()
    (folder / "run.json").write_text(json.dumps({"env_steps": 8192, "train_s": 1.0,
                                                 "process_s": 1.0, "tag": "8192/points"}))
    assert bench.main([*argv, "--budget", "8192", "--reuse"]) == 2  # no latest.pt there
