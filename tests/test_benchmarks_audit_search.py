"""The speed scripts' figures, continued from ``test_benchmarks_audit.py``:
``benchmarks/arena_speed.py`` and ``search_speed.py`` time what their rows say (each agent the
way its row says, each call's time split over its decisions, speed-ups over the right
baseline), on real choices of the seat to move; the clocks are fakes, the measured pieces
stand-ins."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from test_benchmarks_tables import says_its_machine, script, table_rows

from test_benchmarks_audit import any_device, install_clock

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # the scripts set threads: restored


# -- arena_speed ---------------------------------------------------------------------------------

def _fake_arenas(arena_speed, monkeypatch, pool_cost):
    """Stand-in arenas on a stand-in clock: the pool's run of ``pairs`` takes
    ``pool_cost(pairs)`` s, the batched one 0.25 s a pair.  Returns their calls."""
    clock, calls = install_clock(monkeypatch, arena_speed), []

    def result(pairs):
        return SimpleNamespace(pairs=pairs, ci95=(0.41, 0.69), win_rate=0.55)

    def evaluate(spec_a, spec_b, pairs, seed, **options):
        calls.append(("pool", spec_a, spec_b, pairs, seed, options))
        clock.advance(pool_cost(pairs))
        return result(pairs)

    def evaluate_batched(spec_a, spec_b, pairs, seed, **options):
        calls.append(("batched", spec_a, spec_b, pairs, seed, options, torch.get_num_threads()))
        clock.advance(0.25 * pairs)
        return result(pairs)
    monkeypatch.setattr(arena_speed, "evaluate", evaluate)
    monkeypatch.setattr(arena_speed, "evaluate_batched", evaluate_batched)
    return calls


def test_arena_speed_rows_and_speed_ups(monkeypatch, capsys):
    """The pool: 1 s to start and 0.5 s a pair, so 6 pairs take 4 s (1.5 pairs/s), and the 2-pair
    start-up run 2 s; the batched arena's 8 pairs 2 s (4 pairs/s): 2.7x, and 2.0x against the
    4 pairs of the 2 s between the two pool runs.  Every run deals from ``--seed`` (it was a
    hidden 0); the start-up excluded row, the difference of two single timings, says it has no
    error bar."""
    arena_speed = script("arena_speed")
    any_device(monkeypatch)
    calls = _fake_arenas(arena_speed, monkeypatch, lambda pairs: 1.0 + 0.5 * pairs)
    assert arena_speed.main(["--pairs", "8", "--pool-pairs", "6", "--workers", "2", "--seed", "7",
                             "--device", "gpu9", "--batch", "4", "--threads", "2"]) == 0
    out = capsys.readouterr().out
    greedy, itself = ("shipped=ckpt:shipped", "greedy"), ("shipped=ckpt:shipped",) * 2
    assert calls == [call for pairing in (greedy, itself) for call in (
        ("pool", *pairing, 2, 7, {"workers": 2}), ("pool", *pairing, 6, 7, {"workers": 2}),
        ("batched", *pairing, 8, 7, {"device": "gpu9", "batch": 4}, 2))]
    for label in ("shipped vs greedy", "shipped vs shipped"):
        assert [label + ", pool (2 workers), start-up included", "6", "4.0", "1.5",
                "0.550 [0.410, 0.690]"] in table_rows(out, label)
        assert [label + ", batched", "8", "2.0", "4.0", "0.550 [0.410, 0.690]"] in table_rows(
            out, label)
    assert ("batched / pool pairs/s: shipped vs greedy: 2.7x, 2.0x start-up excluded, "
            "shipped vs shipped: 2.7x, 2.0x start-up excluded") in out
    assert "deal seed 7 (every run)" in out
    assert says_its_machine(out.splitlines()[0], torch_threads=2)
    excluded = [line for line in out.splitlines() if "start-up excluded (6 - 2 pairs)" in line]
    assert len(excluded) == 2
    assert all("one difference of two runs, no error bar | 4 | 2.0 | 2.0 |" in line
               for line in excluded)
    assert "one difference of two single timings" in out and "has no error bar" in out


@pytest.mark.parametrize("pool_pairs, walls", [
    (2, [1.5, 2.0]),  # no pair beyond the start-up run's (its 2 pairs 0.5 s faster: noise)
    (6, [4.0, 4.0]),  # the start-up run as long as the whole run
])
def test_arena_speed_leaves_out_a_difference_with_nothing_to_divide(monkeypatch, capsys,
                                                                    pool_pairs, walls):
    """No start-up excluded row, nor its speed-up, where it would divide 0 pairs or by 0 s."""
    arena_speed = script("arena_speed")
    times = iter(walls * 2)
    _fake_arenas(arena_speed, monkeypatch, lambda pairs: next(times))
    assert arena_speed.main(["--pairs", "8", "--pool-pairs", str(pool_pairs),
                             "--workers", "2"]) == 0
    out = capsys.readouterr().out
    assert "start-up excluded" not in out and "no error bar" not in out
    rate = 8 / 2.0 / (pool_pairs / walls[1])
    assert f"batched / pool pairs/s: shipped vs greedy: {rate:.1f}x, shipped vs shipped: " \
           f"{rate:.1f}x\n" in out


def test_arena_speed_without_the_pool_and_with_the_usage_defaults(monkeypatch, capsys):
    """``--pool-pairs 0`` skips the pool arena; ``[--pairs 1000] [--pool-pairs 100]
    [--workers 2] [--threads 1] [--device cpu] [--batch 4096] [--seed 0]``."""
    arena_speed = script("arena_speed")
    calls = _fake_arenas(arena_speed, monkeypatch, lambda pairs: 1.0 + 0.5 * pairs)
    assert arena_speed.main(["--pool-pairs", "0"]) == 0
    out = capsys.readouterr().out
    assert [call[0] for call in calls] == ["batched", "batched"]
    assert [row[0] for row in table_rows(out, "shipped")] == ["shipped vs greedy, batched",
                                                              "shipped vs shipped, batched"]
    assert "batched / pool" not in out
    calls.clear()
    arena_speed.main([])
    assert [call[3:] for call in calls] == [
        (2, 0, {"workers": 2}), (100, 0, {"workers": 2}),
        (1000, 0, {"device": "cpu", "batch": 4096}, 1)] * 2


# -- search_speed --------------------------------------------------------------------------------

def test_search_speed_positions_are_real_choices_of_the_seat_to_move_from_the_seed(monkeypatch):
    search_speed = script("search_speed")
    seen, match_seeds, rng_seeds = [], [], []
    encode, rules = search_speed.encode, search_speed.rules
    default_rng = np.random.default_rng

    def new(seed, **options):
        match_seeds.append(seed)
        return rules.Match.new(seed, **options)

    def spy_rng(seed=None):
        rng_seeds.append(seed)
        return default_rng(seed)
    monkeypatch.setattr(search_speed, "encode",
                        lambda match, seat: seen.append(seat == match.turn) or encode(match, seat))
    monkeypatch.setattr(search_speed, "rules", SimpleNamespace(
        Match=SimpleNamespace(new=new), legal_actions=rules.legal_actions,
        apply_action=rules.apply_action))
    monkeypatch.setattr(np.random, "default_rng", spy_rng)
    found = search_speed.positions(30, 5)
    assert len(found) == 30 and seen == [True] * 30
    assert rng_seeds[0] == 5 and match_seeds == list(range(5, 5 + len(match_seeds)))
    for _, mask in found:
        assert mask.sum() > 1  # a forced move is no decision to time


def test_search_speed_timed_splits_each_call_s_time_over_its_decisions(monkeypatch):
    """A call takes 1 ms plus 2 ms a decision: 3 ms a decision one at a time, 11 / 5 ms five
    together (each of the five given that)."""
    search_speed = script("search_speed")
    clock = install_clock(monkeypatch, search_speed)
    sizes = []

    def decide(chunk):
        sizes.append(len(chunk))
        clock.advance(0.001 + 0.002 * len(chunk))
    assert search_speed.timed(decide, list(range(5)), 1) == pytest.approx([3.0] * 5)
    assert search_speed.timed(decide, list(range(5)), 5) == pytest.approx([2.2] * 5)
    assert sizes == [1] * 5 + [5]


def test_search_speed_main_rows_time_each_agent_the_way_they_say(monkeypatch, capsys):
    """The rule engine's decisions take 1, 2, 3 and 10 ms (mean 4, median 2.5, p90 7.9); a
    batched call 2 ms, a guided one 4 ms, whatever its size."""
    search_speed = script("search_speed")
    any_device(monkeypatch)
    clock = install_clock(monkeypatch, search_speed)
    calls = {"search": [], "batched": [], "guided": [], "positions": []}
    positions = search_speed.positions

    def spy_positions(count, seed):
        calls["positions"].append((count, seed))
        return positions(count, seed)

    class Search:
        def __init__(self, **options):
            calls["search"].append(options)
            self.acted = 0

        def act(self, observation, mask):
            calls["search"].append(torch.get_num_threads())
            clock.advance((0.001, 0.002, 0.003, 0.010)[self.acted])
            self.acted += 1

    def choose_many(name, cost):
        def choose(observations, masks, rngs):
            assert len(observations) == len(masks) == len(rngs)
            for k, rng in enumerate(rngs):  # the k-th decision's worlds: default_rng(0 + k)
                assert rng.integers(2**62) == np.random.default_rng(k).integers(2**62)
            calls[name].append(len(rngs))
            clock.advance(cost)
        return choose

    class Batched:
        def __init__(self, search, device):
            calls["batched"].append(device)
            self.choose_many = choose_many("batched", 0.002)

    class Guided:
        def __init__(self, name, **options):
            calls["guided"].append((name, options))
            self.choose_many = choose_many("guided", 0.004)

    monkeypatch.setattr(search_speed, "positions", spy_positions)
    monkeypatch.setattr(search_speed, "SearchAgent", Search)
    monkeypatch.setattr(search_speed, "BatchedSearch", Batched)
    monkeypatch.setattr(search_speed, "PolicySearchAgent", Guided)
    torch.set_num_threads(2)
    assert search_speed.main(["--decisions", "4", "--samples", "3", "--seed", "5",
                              "--device", "gpu9"]) == 0
    out = capsys.readouterr().out
    assert calls["positions"] == [(4, 5)]
    assert calls["search"] == [{"samples": 3, "seed": 0}, 1, 1, 1, 1]
    # a warm-up call of 2 decisions each, then the rows
    assert calls["batched"] == ["gpu9", 2, 1, 1, 1, 1, 4]
    assert calls["guided"] == [("shipped", {"samples": 3, "seed": 0, "device": "gpu9"}),
                               2, 1, 1, 1, 1, 4]
    assert table_rows(out, "`search") == [
        ["`search`, rule engine", "4.0", "2.5", "7.9"],
        ["`search`, batched, one decision a call", "2.0", "2.0", "2.0"],
        ["`search`, batched, 4 decisions a call", "0.5", "—", "—"],
        ["`search:policy=shipped`, one decision a call", "4.0", "4.0", "4.0"],
        ["`search:policy=shipped`, 4 decisions a call", "1.0", "—", "—"]]


def test_search_speed_defaults_are_the_usage_line_s(monkeypatch, capsys):
    """``--decisions 40 --samples 64 [--device cpu]``."""
    search_speed = script("search_speed")
    made = []
    monkeypatch.setattr(search_speed, "positions", lambda count, seed: made.append(
        (count, seed)) or [(None, None)] * count)
    monkeypatch.setattr(search_speed, "SearchAgent", lambda **options: made.append(options))
    monkeypatch.setattr(search_speed, "BatchedSearch", lambda search, device: made.append(
        device) or SimpleNamespace(choose_many=lambda *_: None))
    monkeypatch.setattr(search_speed, "PolicySearchAgent", lambda name, **options: made.append(
        options) or SimpleNamespace(choose_many=lambda *_: None))
    monkeypatch.setattr(search_speed, "timed", lambda decide, found, size: [1.0] * len(found))
    search_speed.main([])
    assert made == [(40, 0), {"samples": 64, "seed": 0}, "cpu",
                    {"samples": 64, "seed": 0, "device": "cpu"}]
