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
    row = next(line for line in bench.table(runs, 98_304, 50).splitlines()
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
    header = next(line for line in bench.table(runs, 98_304, 50).splitlines()
                  if line.startswith("| algorithm"))
    assert header.split(" | ")[2] == "learner decisions (mean)"
    assert "env steps" not in header
