"""The batched self-play engine with an opponent pool (``training/batched_rollout.py``,
``training/opponents.py``): batched opponents play exactly what their ``act`` would, past
snapshots are drawn uniformly and play with the weights they were taken with, the learner's
seats alone are recorded, and the pool's match statistics credit the learner's team once a
match (a truncated match as half).  The engine against the reference loop:
``test_batched_rollout.py``."""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sevenrocks_env.policy import PolicyNet  # noqa: E402
from training.batched_rollout import BatchedSelfPlayEngine  # noqa: E402
from training.config import TrainConfig  # noqa: E402
from training.critic import OracleCritic  # noqa: E402
from training.opponents import OpponentPool  # noqa: E402
from training.ppo import compute_gae, ppo_update  # noqa: E402
from training.rollout import SelfPlayEngine  # noqa: E402
from training.seats import MatchSeats, RolloutBuffer  # noqa: E402

from test_rollout import LowestActionModel  # noqa: E402
from test_batched_rollout import MAX_ROUNDS, TARGET  # noqa: E402


def _stats_against_random(engine_class, seed, target, max_rounds, steps) -> dict:
    """The stats of one rollout of 8 matches, every one against the ``random`` opponent."""
    model = PolicyNet([16]).eval()
    engine = engine_class(8, seed=seed, target=target, max_rounds=max_rounds,
                          opponent_fraction=1.0, opponent_pool=OpponentPool(["random"], model))
    engine.collect(model, RolloutBuffer(8 * steps), steps)
    return engine.pop_stats()


@pytest.mark.parametrize("engine_class", [BatchedSelfPlayEngine, SelfPlayEngine])
def test_pool_match_stats_count_a_truncated_match_as_half(engine_class):
    """max_rounds=1 and a target out of reach: every match is truncated, no winner; the win
    rate against the opponent is 1/2 a match (as the arena counts it), the tag is the spec made
    a tag name, and the return against it is logged beside the self-play-diluted one."""
    stats = _stats_against_random(engine_class, seed=3, target=500, max_rounds=1, steps=24)
    assert stats["truncated"] and all(t == 1.0 for t in stats["truncated"])
    assert stats["win_vs_random"] and set(stats["win_vs_random"]) == {0.5}
    assert len(stats["return_vs_random"]) == len(stats["win_vs_random"])
    assert stats["return_vs_random"] == stats["episodic_return"]  # every match is a pool match


def test_opponents_and_a_ppo_update_on_the_batch():
    torch.manual_seed(0)
    cfg = TrainConfig()
    cfg.hidden_sizes, cfg.num_minibatches, cfg.update_epochs = [32], 2, 1
    model = PolicyNet(cfg.hidden_sizes).eval()
    critic = OracleCritic(cfg.hidden_sizes).eval()
    optimizer = torch.optim.Adam(list(model.parameters()) + list(critic.parameters()), lr=1e-3)
    pool = OpponentPool(["greedy", "past"], model)
    engine = BatchedSelfPlayEngine(16, seed=5, target=TARGET, max_rounds=MAX_ROUNDS,
                                   opponent_fraction=0.75, opponent_pool=pool)
    assert not engine.learner.all()
    buffer = RolloutBuffer(16 * 8)
    for _ in range(2):
        engine.collect(model, buffer, 8, critic)
    stats = engine.pop_stats()
    assert any(key.startswith("win_vs_") for key in stats) and stats["episodic_length"]
    assert (buffer.masks.sum(1) > 1).all()
    advantages, returns = compute_gae(buffer.rewards, buffer.values, buffer.dones,
                                      buffer.next_index, buffer.bootstrap, 0.99, 0.95)
    from training.ppo import rollout_batch
    before = [p.detach().clone() for p in model.parameters()]
    losses = ppo_update(model, optimizer, rollout_batch(buffer, advantages, returns, hands=True),
                        cfg, critic)
    assert np.isfinite(list(losses.values())).all()
    assert any(not torch.equal(p, q) for p, q in zip(before, model.parameters()))
    state = engine.state_dict()   # opponents in progress survive a round trip
    again = BatchedSelfPlayEngine(16, seed=0, target=TARGET, max_rounds=MAX_ROUNDS,
                                  opponent_fraction=0.75, opponent_pool=pool)
    again.load_state_dict(copy.deepcopy(state))
    assert again.state_dict() == state


@pytest.mark.parametrize("spec", ["greedy", "heuristic", "ckpt:shipped"])
def test_batched_opponents_play_exactly_what_their_act_would(spec):
    # the rollout plays greedy and heuristic with their batched twins and a policy network in
    # one forward pass (``policy_actions``; a ckpt: opponent plays its most probable action):
    # the same choices as ``act``
    from training.batched_rollout import _Seats
    pool = OpponentPool([spec], PolicyNet([32]).eval())
    engine = BatchedSelfPlayEngine(32, seed=3, target=250, max_rounds=MAX_ROUNDS,
                                   opponent_fraction=1.0, opponent_pool=pool)
    generator, compared = torch.Generator().manual_seed(0), 0
    for _ in range(40):
        seats = _Seats(engine.venv)
        rows = np.flatnonzero(seats.real & ~engine.learner[engine._rows, seats.seat])
        actions = seats.first_legal.clone()
        if len(rows):
            engine._opponent_actions(rows, seats, actions)
            for i in rows.tolist():
                expected = engine.opponents[i].act(seats.obs[i].numpy(), seats.mask[i].numpy())
                assert int(actions[i]) == expected, (spec, i)
                compared += 1
        engine.venv.step(torch.multinomial(seats.mask.float(), 1, generator=generator).squeeze(1))
    assert compared > 100


@pytest.mark.parametrize("engine_class", [BatchedSelfPlayEngine, SelfPlayEngine])
def test_pool_match_stats_credit_the_learner_team_its_own_win_and_return(engine_class,
                                                                         monkeypatch):
    """A won match (R8): the winner reached the target and the loser did not, so the learner's
    logged win is 1 exactly when its logged return (points margin + win reward) is positive;
    and the team logged is the learner's (the seats the policy played), not the opponent's."""
    ends, real_match_stats = [], MatchSeats._match_stats

    def recording(engine, i, returns, winner, rounds, truncated):
        (team,) = [t for t in (0, 1) if engine.learner[i, t]]   # seats 0/1: teams 0/1
        ends.append((team, winner, list(returns)))
        real_match_stats(engine, i, returns, winner, rounds, truncated)

    monkeypatch.setattr(MatchSeats, "_match_stats", recording)
    stats = _stats_against_random(engine_class, seed=5, target=30, max_rounds=100, steps=40)
    wins, returns = stats["win_vs_random"], stats["return_vs_random"]
    assert len(wins) == len(returns) >= 8 and 0 < sum(wins) < len(wins)
    assert all((win == 1.0) == (ret > 0) for win, ret in zip(wins, returns)), (wins, returns)
    assert {team for team, _, _ in ends} == {0, 1}   # learners on either side
    assert wins == [0.5 if winner is None else float(winner == team) for team, winner, _ in ends]
    assert returns == [both[team] for team, _, both in ends]
    assert stats["episodic_return"] == returns   # the opponent's team is never logged


def test_past_draws_uniformly_among_the_kept_snapshots():
    """``past`` is any of the last ``max_snapshots`` snapshots, equally likely, not the newest."""
    model = PolicyNet([8])
    pool = OpponentPool(["past"], model, max_snapshots=3)
    first = next(model.parameters())
    for k in range(5):  # the two oldest are dropped; each snapshot marked with its number
        with torch.no_grad():
            first.view(-1)[0] = k
        pool.add_snapshot(model)
    rng = np.random.default_rng(0)
    drawn = [pool(rng)[1] for _ in range(600)]
    kept = [id(agent) for agent in pool._past_agents]
    assert len(kept) == 3 and {id(agent) for agent in drawn} == set(kept)
    marks = [float(next(agent.model.parameters()).detach().view(-1)[0]) for agent in drawn]
    assert sorted(set(marks)) == [2.0, 3.0, 4.0]  # the last three snapshots, not the newest
    assert all(150 < marks.count(k) < 250 for k in (2.0, 3.0, 4.0))


def test_a_snapshot_plays_with_the_weights_it_was_taken_with():
    """``add_snapshot(model)``: the ``past`` agent's network is ``model`` as it is now (not the
    network the pool was built with)."""
    torch.manual_seed(0)
    model = PolicyNet([8])
    pool = OpponentPool(["past"], model, max_snapshots=3)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter))
    pool.add_snapshot(model)
    snapshot = pool._past_agents[-1].model.state_dict()
    for key, tensor in model.state_dict().items():
        assert torch.equal(snapshot[key], tensor), key
    first = pool._past_agents[0].model.state_dict()   # the one the constructor took
    assert not all(torch.equal(first[key], snapshot[key]) for key in snapshot)


def test_pool_state_holds_only_the_snapshots_dropped_since_the_last_one():
    """A dropped snapshot still playing is saved by the next ``state_dict`` only: the one after
    holds just those dropped (and registered by ``key``) since."""
    model = PolicyNet([8])
    pool = OpponentPool(["past"], model, max_snapshots=1)
    rng = np.random.default_rng(0)

    def drop_one() -> str:
        _, playing = pool(rng)
        pool.add_snapshot(model)   # max_snapshots=1: the playing one is dropped
        return pool.key("past", playing)

    assert drop_one() == "past@0"
    assert len(pool.state_dict()["retired"]) == 1
    assert pool.state_dict()["retired"] == []
    assert drop_one() == "past@0"
    assert len(pool.state_dict()["retired"]) == 1


def test_the_pool_draws_each_entry_alike():
    pool = OpponentPool(["random", "greedy"], PolicyNet([8]))
    rng = np.random.default_rng(0)
    names = [pool(rng)[0] for _ in range(600)]
    assert all(200 < names.count(name) < 400 for name in ("random", "greedy")), names


class _LearnerOnlyEngine(BatchedSelfPlayEngine):
    """Checks, at every recording, that only learner seats are recorded, and keeps the
    opponents' generator states on entering the cut."""

    def _record(self, model, critic, buffer, rows, seats, actions):
        assert self.learner[rows, seats.seat[rows]].all(), "an opponent seat was recorded"
        super()._record(model, critic, buffer, rows, seats, actions)

    def _cut(self, model, buffer, critic=None):
        self.open_at_cut = int((self.pending >= 0).sum())
        self.at_cut = copy.deepcopy(self.agent._rng.bit_generator.state)
        super()._cut(model, buffer, critic)


def test_pool_rollout_records_learner_seats_only_and_its_cut_leaves_opponents_untouched():
    from sevenrocks_env.agents.random_agent import RandomAgent
    agent = RandomAgent()
    pool = lambda rng: ("random", agent)  # noqa: E731
    engine = _LearnerOnlyEngine(8, seed=3, target=TARGET, max_rounds=MAX_ROUNDS,
                                opponent_fraction=1.0, opponent_pool=pool)
    engine.agent = agent
    assert engine.learner.sum() == 8 * 2
    engine.collect(LowestActionModel(), RolloutBuffer(8 * 4), 4)
    assert engine.open_at_cut > 0
    assert agent._rng.bit_generator.state == engine.at_cut


@pytest.mark.parametrize("engine_class", [BatchedSelfPlayEngine, SelfPlayEngine])
def test_pool_match_stats_log_the_learner_team_once_a_match(engine_class):
    """The opponent's team is no learner: its return and win are not the learner's stats."""
    stats = _stats_against_random(engine_class, seed=5, target=30, max_rounds=100, steps=40)
    matches = len(stats["rounds_per_match"])
    assert matches >= 8
    assert len(stats["win_vs_random"]) == len(stats["episodic_return"]) == matches
