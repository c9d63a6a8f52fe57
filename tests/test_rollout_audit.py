"""Gaps a mutation audit of the rollout engines and the exploitability script found.

* resume: a pool run's learner seats and opponents, and the statistics of the matches in
  progress at save time (their returns and counters), come back as they were;
* the learner's statistics count the learner's moves only, and a cut's continuation lets the
  opponents play their own moves (``training/rollout.py``'s ``_cut`` docstring);
* (an untrusted batched engine state: rows of ``test_batched_rollout_state.py``'s
  ``test_bad_state_pieces_raise_value_error_naming_them``);
* ``benchmarks/best_response.py``: its config, its command-line bounds, its output file check
  and its table row.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sevenrocks_env.agents.greedy import GreedyAgent  # noqa: E402
from sevenrocks_env.policy import PolicyNet  # noqa: E402
from sevenrocks_env.ratings import wilson_interval  # noqa: E402
from sevenrocks_env.tiles import KNOCK  # noqa: E402
from training.batched_rollout import BatchedSelfPlayEngine  # noqa: E402
from training.opponents import OpponentPool  # noqa: E402
from training.rollout import SelfPlayEngine  # noqa: E402
from training.seats import RolloutBuffer  # noqa: E402

from test_batched_rollout import Reference  # noqa: E402
from test_rollout import POINTS_SCALE, WIN_REWARD, LowestActionModel  # noqa: E402
from test_rollout_transitions import RecordingEngine, _reference  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import best_response  # noqa: E402

SETTINGS = dict(target=60, max_rounds=3)   # short matches: several end in a few steps


def _rollouts(engine, rollouts: int, steps: int) -> list[dict]:
    """``rollouts`` rollouts of the lowest-action policy: each buffer's contents."""
    model, out = LowestActionModel(), []
    for _ in range(rollouts):
        buffer = RolloutBuffer(engine.num_matches * steps)
        engine.collect(model, buffer, steps)
        out.append({name: getattr(buffer, name)[:buffer.size].copy()
                    for name in ("actions", "rewards", "dones", "next_index", "bootstrap")})
    return out


# -- resume -------------------------------------------------------------------------------------

def _pool_engine(engine_class, seed: int):
    pool = OpponentPool(["greedy", "heuristic"], PolicyNet([8]).eval())
    return engine_class(6, seed=seed, opponent_fraction=0.5, opponent_pool=pool, **SETTINGS)


@pytest.mark.parametrize("engine_class", [SelfPlayEngine, BatchedSelfPlayEngine])
def test_a_pool_run_resumes_with_each_match_s_learner_seats_and_opponent(engine_class):
    """Resume restores who plays where: the learner's team and the opponent of each match in
    progress (not those the resuming engine's own seed drew), and play goes on identically."""
    engine = _pool_engine(engine_class, seed=3)
    _rollouts(engine, 1, 5)
    engine.pop_stats()
    state = copy.deepcopy(engine.state_dict())
    other = _pool_engine(engine_class, seed=99)
    fresh = other.state_dict()
    assert fresh["learner"] != state["learner"] and fresh["opponents"] != state["opponents"]
    assert any(key is None for key in state["opponents"])   # self-play and pool matches both
    other.load_state_dict(copy.deepcopy(state))
    assert other.state_dict() == state
    for x, y in zip(_rollouts(engine, 2, 5), _rollouts(other, 2, 5)):
        for name in x:
            np.testing.assert_array_equal(x[name], y[name], err_msg=name)
    assert other.pop_stats() == engine.pop_stats()


@pytest.mark.parametrize("engine_class", [SelfPlayEngine, BatchedSelfPlayEngine])
def test_matches_in_progress_at_a_resume_log_the_stats_of_an_uninterrupted_run(engine_class):
    """A match that spans the save logs the return (``episodic_return``), decisions and points
    a placement it would have logged without the resume."""
    whole = engine_class(6, seed=3, **SETTINGS)
    _rollouts(whole, 4, 20)
    want = whole.pop_stats()
    first = engine_class(6, seed=3, **SETTINGS)
    _rollouts(first, 1, 20)
    got = first.pop_stats()
    state = copy.deepcopy(first.state_dict())
    placements, points, decisions = state["counters"]
    assert all(placements) and all(decisions) and points != placements   # counters under way
    if engine_class is BatchedSelfPlayEngine:
        assert any(r != 0.0 for r in state["returns"])
    resumed = engine_class(6, seed=99, **SETTINGS)
    resumed.load_state_dict(state)
    _rollouts(resumed, 3, 20)
    later = resumed.pop_stats()
    assert len(later["rounds_per_match"]) >= 6   # the matches in progress at the save ended
    for key, values in later.items():
        got.setdefault(key, []).extend(values)
    assert sorted(got) == sorted(want)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-6, err_msg=key)


# -- the learner's statistics and the cut's opponents -------------------------------------------

class _PlacementBooking(SelfPlayEngine):
    """Keeps every move of each match (seat, action, points from ``rules.apply_action``) and,
    at its end, the points a placement of the learner's own placements."""

    def __init__(self, *args, **kwargs):
        self.moves, self.expected = {}, []
        super().__init__(*args, **kwargs)

    def _book(self, i, seat, action, points, buffer):
        self.moves.setdefault(i, []).append((bool(self.learner[i, seat]), action, points))
        super()._book(i, seat, action, points, buffer)

    def _end_match(self, i, buffer):
        placed = [p for learner, a, p in self.moves.pop(i, []) if learner and a != KNOCK]
        if placed:
            self.expected.append(sum(placed) / len(placed))
        super()._end_match(i, buffer)


def test_points_per_placement_counts_the_learner_s_placements_only_python_engine():
    pool = OpponentPool(["greedy"], PolicyNet([8]).eval())
    engine = _PlacementBooking(6, seed=5, opponent_fraction=1.0, opponent_pool=pool, **SETTINGS)
    _rollouts(engine, 1, 40)
    got = engine.pop_stats()["points_per_placement"]
    assert len(engine.expected) >= 6
    np.testing.assert_allclose(got, engine.expected, rtol=1e-9)


def test_points_per_placement_counts_the_learner_s_placements_only_batched_engine():
    pool = OpponentPool(["greedy"], PolicyNet([8]).eval())
    engine = BatchedSelfPlayEngine(6, seed=5, opponent_fraction=1.0, opponent_pool=pool,
                                   **SETTINGS)
    counted, count = [], engine._count_placements

    def checking(rows, actions):
        seats = engine.venv.current_seat.cpu().numpy()   # the seats about to move
        counted.append(engine.learner[rows, seats[rows]].copy())
        count(rows, actions)
    engine._count_placements = checking
    _rollouts(engine, 1, 20)
    assert sum(len(c) for c in counted) > 0
    assert all(c.all() for c in counted), "an opponent's move was counted as the learner's"


def test_every_transition_links_to_its_seat_s_next_decision_in_the_same_match():
    """GAE follows ``next_index``: each transition but a (match, seat)'s last in the rollout
    links to that seat's next one, the very first transition of the buffer included."""
    engine = SelfPlayEngine(4, seed=3, **SETTINGS)
    owners, alive, play = [], [], engine._play

    def recording_play(i, action, buffer):
        alive.append(engine.matches[i])   # kept alive: their ids are not reused
        owners.append((i, id(engine.matches[i]), engine.matches[i].turn))
        play(i, action, buffer)
    engine._play = recording_play
    for steps in (7, 12):
        owners.clear()
        buffer = RolloutBuffer(4 * steps)
        engine.collect(LowestActionModel(), buffer, steps)
        assert len(owners) == buffer.size
        groups = {}
        for k, owner in enumerate(owners):
            groups.setdefault(owner, []).append(k)
        assert len(groups[owners[0]]) > 1   # the buffer's first transition has a successor
        for ks in groups.values():
            assert buffer.next_index[ks].tolist() == ks[1:] + [-1], ks
            assert not buffer.dones[ks[:-1]].any()


def test_one_step_rollouts_close_every_transition_at_the_cut():
    """One decision a match: each match's only open transition -- the buffer's first, index 0,
    too -- is closed by the cut as the reference continuation closes it."""
    engine = RecordingEngine(5, seed=2, target=30, points_scale=POINTS_SCALE,
                             win_reward=WIN_REWARD)
    model = LowestActionModel()
    for _ in range(4):
        buffer = RolloutBuffer(5)
        engine.collect(model, buffer, 1)
        states, pending, margins, rewards = engine.before
        assert sorted(pending[pending >= 0].tolist()) == list(range(5))
        for i, seat in np.argwhere(pending >= 0):
            k = pending[i, seat]
            reward, bootstrap, done = _reference(states[i], seat, margins[i, seat], model, None)
            assert buffer.rewards[k] - rewards[k] == pytest.approx(reward, abs=1e-5), k
            assert buffer.dones[k] == done, k
            assert buffer.bootstrap[k] == pytest.approx(bootstrap, rel=1e-5, abs=1e-5), k


class _ShortReference(Reference):
    target, max_rounds = SETTINGS["target"], SETTINGS["max_rounds"]


def test_the_buffer_s_first_transition_closed_by_a_match_end_gets_the_final_reward():
    """Batched engine against the reference loop over ``rules.Match``, on rollouts where the
    buffer's first transition (index 0) is still open when its match ends inside the rollout:
    final reward and ``done`` there too."""
    model = LowestActionModel()
    engine = BatchedSelfPlayEngine(4, seed=1, points_scale=POINTS_SCALE, win_reward=WIN_REWARD,
                                   **SETTINGS)
    reference = _ShortReference(engine.venv.seed, 4, model, None)
    first_closed_inside = 0
    for _ in range(9):
        buffer = RolloutBuffer(4 * 4)
        engine.collect(model, buffer, 4)
        want = reference.collect(4)
        np.testing.assert_array_equal(buffer.dones, want["dones"])
        np.testing.assert_array_equal(buffer.next_index, want["next_index"])
        np.testing.assert_allclose(buffer.rewards, want["rewards"], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(buffer.bootstrap, want["bootstrap"], rtol=1e-5, atol=1e-5)
        first_closed_inside += bool(want["dones"][0] and reference.cut_dones == 0)
    assert first_closed_inside > 0


class _RecordingGreedy(GreedyAgent):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def act(self, observation, action_mask):
        self.calls += 1
        return super().act(observation, action_mask)


def test_a_cut_s_continuation_lets_the_opponents_play_their_own_moves():
    """``_cut``: open matches are played on with opponents "with their own agent" (the policy
    being trained plays the learner seats only)."""
    agent = _RecordingGreedy()
    pool = lambda rng: ("greedy", agent)  # noqa: E731
    pool.key = lambda name, agent: name
    engine = SelfPlayEngine(8, seed=3, opponent_fraction=1.0, opponent_pool=pool, **SETTINGS)
    in_cut, cut = [], engine._cut

    def counting_cut(model, buffer, critic=None):
        before = agent.calls
        cut(model, buffer, critic)
        in_cut.append(agent.calls - before)
    engine._cut = counting_cut
    _rollouts(engine, 3, 3)
    assert len(in_cut) == 3 and sum(in_cut) > 0


# -- benchmarks/best_response.py ----------------------------------------------------------------

def test_the_best_response_config_takes_the_seed_and_the_out_folders(tmp_path):
    cfg = best_response.best_response_config("heuristic", 100_000, 5, tmp_path)
    assert cfg.seed == 5
    assert Path(cfg.log_dir) == tmp_path / "runs" and Path(cfg.checkpoint_dir) == tmp_path / "ckpt"
    assert best_response.best_response_config("heuristic", 100_000, 6, tmp_path).seed == 6


def test_set_overrides_come_after_smoke(tmp_path):
    """``--set KEY=VALUE`` passes a config field through after ``--smoke``'s sizes."""
    smoke = best_response.best_response_config("heuristic", 100_000, 5, tmp_path, smoke=True)
    assert (smoke.target, smoke.num_matches) == (40, 8)
    cfg = best_response.best_response_config("heuristic", 100_000, 5, tmp_path, smoke=True,
                                             overrides=["target=50", "num_matches=4"])
    assert (cfg.target, cfg.num_matches) == (50, 4)


def test_the_row_shows_the_win_rate_its_interval_in_order_and_the_signed_margin():
    low, high = wilson_interval(0.625, 20)
    record = {"opponent": "heuristic", "init": "scratch", "steps": 256, "seed": 3, "pairs": 20,
              "deal_seed": 7001, "train_minutes": 1.25, "overrides": [],
              "arena": {"win_rate": 0.625, "ci95": [low, high], "mean_margin": -12.34}}
    cells = [c.strip() for c in best_response.row(record).strip("|").split("|")]
    assert cells[6] == f"62.5 % [{100 * low:.1f}, {100 * high:.1f}]" and low < 0.625 < high
    assert cells[7] == "-12.3" and cells[8] == "1.2"


@pytest.mark.parametrize("argv", [["--steps", "0"], ["--steps", "-5"], ["--seed", "-1"],
                                  ["--deal-seed", "-1"], ["--workers", "0"]])
def test_out_of_range_numbers_are_refused_by_the_parser_before_anything_runs(argv, monkeypatch,
                                                                               tmp_path):
    def never(args):
        raise AssertionError("the run started")
    monkeypatch.setattr(best_response, "run", never)
    with pytest.raises(SystemExit) as stop:
        best_response.main([*argv, "--out", str(tmp_path)])
    assert stop.value.code == 2


@pytest.mark.parametrize("smoke, steps", [(True, best_response.SMOKE_STEPS), (False, 2_000_000)])
def test_the_default_step_budget_follows_smoke(smoke, steps, monkeypatch, tmp_path, capsys):
    seen = []

    def fake_run(args):
        seen.append(args.steps)
        raise ValueError("stop here")
    monkeypatch.setattr(best_response, "run", fake_run)
    argv = ["--out", str(tmp_path)] + (["--smoke"] if smoke else [])
    assert best_response.main(argv) == 2
    assert seen == [steps] and "stop here" in capsys.readouterr().err


def test_a_result_file_that_cannot_be_written_is_refused_before_training(tmp_path, capsys):
    (tmp_path / "br_greedy_128_s3.json").mkdir()
    code = best_response.main(["--opponent", "greedy", "--smoke", "--steps", "128", "--seed",
                               "3", "--pairs", "1", "--out", str(tmp_path)])
    assert code == 2 and "br_greedy_128_s3.json" in capsys.readouterr().err
    assert not (tmp_path / "ckpt").exists() and not (tmp_path / "runs").exists()


def test_the_arena_plays_the_named_frozen_opponent_to_the_training_target(tmp_path, capsys):
    """``--opponent name=spec``: the arena names the frozen side as given and plays to the
    run's target (the smoke config's 40), the target the best response trained for; the
    record's steps are the decisions trained (whole rollouts), not the budget asked for."""
    code = best_response.main(["--opponent", "frozen=greedy", "--smoke", "--steps", "200",
                               "--seed", "3", "--pairs", "1", "--deal-seed", "11", "--out",
                               str(tmp_path)])
    assert code == 0, capsys.readouterr().out
    record = json.loads((tmp_path / "br_greedy_200_s3.json").read_text())
    assert record["steps"] == 128   # whole updates of 8 x 16 decisions: 200 // 128 of them
    arena = record["arena"]
    assert record["opponent"] == "frozen" and record["spec"] == "greedy"
    assert (arena["agent_a"], arena["agent_b"], arena["spec_b"]) == (
        "best_response", "frozen", "greedy")
    assert arena["target"] == record["target"] == 40
