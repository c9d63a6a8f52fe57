"""agents.inference: the round history, the batched replay's likelihoods against a replay in the
reference rules engine, and the inference-weighted search in the batched arena."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sevenrocks_env import rules
from sevenrocks_env.agents.belief import HIDDEN_SEATS, HandSampler
from sevenrocks_env.agents.inference import (InferenceSearch, play_log_likelihoods, resampled,
                                             world_weights)
from sevenrocks_env.agents.policy_search import PolicySearchAgent
from sevenrocks_env.agents.world_rollouts import Decision
from sevenrocks_env.arena_batched import play_pairs_batched
from sevenrocks_env.batched_agents import BatchedGreedy, BatchedSearchAgent
from sevenrocks_env.batched import VectorEnv
from sevenrocks_env.batched.history import RoundHistory
from sevenrocks_env.observation import action_mask, decode, encode
from sevenrocks_env.policy import MaskedCategorical, load_policy
from sevenrocks_env.record import validate


@pytest.fixture(scope="module")
def model():
    return load_policy("shipped").model.eval()


def _round_start(history, env, i):
    """Env ``i``'s round start as a ``rules.Match``, with the real hands (the history keeps
    none: each seat's hand now plus what it played this round)."""
    start = history.round_start.take(torch.tensor([i]))
    assert start.hands.eq(0).all()
    start.hands = env.state.hands[i:i + 1] | env.state.played_by[i:i + 1]
    return start.match(0, env.target)


def _random_steps(env, history, steps, generator):
    """Step ``env`` with uniform legal moves, recording them in ``history``."""
    for _ in range(steps):
        mask = env.action_mask.float()
        actions = torch.multinomial(mask, 1, generator=generator).squeeze(1)
        env.step(actions)
        history.record(env, actions)


def test_a_round_start_replayed_with_its_history_reaches_the_env_now():
    env = VectorEnv(16, target=100, max_rounds=None)
    env.reset(seed=3)
    history = RoundHistory(env, capacity=4)  # small: the history has to grow
    generator = torch.Generator().manual_seed(3)
    checked = 0
    for _ in range(40):
        _random_steps(env, history, 3, generator)
        for i in range(env.num_envs):
            replay = _round_start(history, env, i)
            for action in history.actions[i, :int(history.length[i])].tolist():
                rules.apply_action(replay, action)
            now = env.match(i)
            for name in ("hands", "played_by", "ends", "turn", "voids", "scores",
                         "placements", "round_index"):
                assert getattr(replay, name) == getattr(now, name), (i, name)
            checked += int(history.length[i])
    assert checked > 1000 and history.actions.shape[1] > 4


def _reference_log_likelihood(model, round_start, actions, now, world):
    """The same sum, replayed one world at a time in ``rules`` with ``observation.encode``."""
    state = round_start.to_state()
    hands = list(state["hands"])
    for k, hand in zip(HIDDEN_SEATS, world):
        seat = (now.turn + k) & 3
        hands[seat] = hand | now.played_by[seat]
    state["hands"] = hands
    replay = rules.Match.from_state(state)
    total = 0.0
    for action in actions:
        seat = replay.turn
        if seat != now.turn:
            obs = torch.as_tensor(encode(replay, seat))[None]
            mask = torch.as_tensor(action_mask(replay, seat), dtype=torch.bool)[None]
            with torch.inference_mode():
                dist = MaskedCategorical(model(obs, mask)[0], mask)
            total += float(dist.log_probs[0, action])
        rules.apply_action(replay, action)
    assert replay.hands[now.turn] == now.hands[now.turn]
    return total, replay


def test_batched_likelihoods_equal_a_replay_in_the_rules_engine(model):
    env = VectorEnv(8, target=250, max_rounds=None)
    env.reset(seed=11)
    history = RoundHistory(env)
    generator = torch.Generator().manual_seed(11)
    rng = np.random.default_rng(11)
    compared = truths = 0
    for _ in range(6):
        _random_steps(env, history, 5, generator)
        envs = torch.arange(env.num_envs)
        views = [decode(o) for o in env.observation.numpy()]
        worlds = []
        for i, view in enumerate(views):
            now = env.match(i)
            truth = tuple(now.hands[(now.turn + k) & 3] for k in HIDDEN_SEATS)
            worlds.append([truth] + [tuple(w) for w in HandSampler(view).sample_many(rng, 3)])
        logl = play_log_likelihoods(PolicySearchAgent(model), history, env, envs, worlds)
        for i, world_list in enumerate(worlds):
            now = env.match(i)
            actions = history.actions[i, :int(history.length[i])].tolist()
            for w, world in enumerate(world_list):
                expected, replay = _reference_log_likelihood(
                    model, _round_start(history, env, i), actions, now, world)
                assert logl[i][w] == pytest.approx(expected, abs=1e-4), (i, w)
                compared += 1
                if w == 0:  # the true world's replay is the real position
                    assert replay.hands == now.hands
                    truths += 1
    assert compared == 6 * 8 * 4 and truths == 48
    assert any(row.min() < -1.0 for row in logl)  # the plays did say something


def test_world_weights_normalise_and_temper():
    logl = np.array([-1.0, -3.0, -1.0])
    assert world_weights(logl, 1.0).sum() == pytest.approx(1.0)
    assert world_weights(logl, 0.0) == pytest.approx(np.full(3, 1 / 3))
    w1, w05 = world_weights(logl, 1.0), world_weights(logl, 0.5)
    assert w1[1] / w1[0] == pytest.approx(np.exp(-2.0))
    assert w05[1] / w05[0] == pytest.approx(np.exp(-1.0))
    assert world_weights(np.array([-1e6, -1e6 - 1]), 1.0)[0] == pytest.approx(1 / (1 + np.e ** -1))


def test_inference_power_zero_plays_the_plain_search_in_the_arena(model):
    searcher = PolicySearchAgent(model, samples=4)

    def records(agent):
        _, played = play_pairs_batched(agent, BatchedGreedy(), seed=5, first=0, pairs=1,
                                       target=25, max_rounds=100, records=True)
        for record in played:
            validate(record)
        return [[r["moves"] for r in record["rounds"]] for record in played]

    plain = records(BatchedSearchAgent(searcher))
    assert records(InferenceSearch(searcher, power=0.0)) == plain
    assert sum(len(moves) for game in plain for moves in game) > 20
    records(InferenceSearch(searcher, power=1.0))  # plays legal, valid games
    records(InferenceSearch(searcher, power=1.0, candidates=8))


def test_inference_power_is_bounded(model):
    with pytest.raises(ValueError, match="power"):
        InferenceSearch(PolicySearchAgent(model, samples=2), power=float("nan"))


def test_search_scores_with_all_weight_on_one_world_are_that_worlds_scores(model):
    searcher = PolicySearchAgent(model, samples=3)
    match = rules.Match.new(4)
    obs, mask = encode(match, match.turn), action_mask(match, match.turn)
    legal = np.flatnonzero(mask).tolist()
    decision = Decision.sample(decode(obs), legal, 3, np.random.default_rng(4))
    alone = Decision(decode(obs), legal, [decision.hidden[1]], [decision.streams[1]])
    [weighted] = searcher.scores([obs], [mask], [decision], [np.array([0.0, 1.0, 0.0])])
    assert weighted == pytest.approx(searcher.scores([obs], [mask], [alone])[0])
    assert weighted != pytest.approx(searcher.scores([obs], [mask], [decision])[0])


def test_resampling_draws_each_world_floor_or_ceil_of_its_share():
    view = decode(encode(rules.Match.new(2), 0))
    legal = [0, 1]
    rng = np.random.default_rng(2)
    decision = Decision.sample(view, legal, 6, rng)
    exact, shares = resampled(decision, np.array([0.0, 0.5, 0.25, 0.25, 0.0, 0.0]), 4, rng)
    assert exact.hidden == decision.hidden[1:4] and shares.tolist() == [0.5, 0.25, 0.25]
    assert exact.streams == decision.streams[1:4] and exact.legal == legal
    for _ in range(200):
        weights = rng.dirichlet(np.full(6, 0.3))
        kept, shares = resampled(decision, weights, 64, rng)
        drawn = {decision.hidden.index(world): share * 64 for world, share in zip(kept.hidden,
                                                                                 shares)}
        for w, weight in enumerate(weights):
            assert np.floor(64 * weight) - 1e-9 <= drawn.get(w, 0) <= np.ceil(64 * weight) + 1e-9
        assert shares.sum() == pytest.approx(1.0)


def test_inference_candidates_are_bounded_and_named(model):
    searcher = PolicySearchAgent(model, samples=4)
    assert InferenceSearch(searcher, candidates=16).name.endswith("candidates=16")
    for bad in (3, 10 ** 9, 4.5):
        with pytest.raises(ValueError, match="candidates"):
            InferenceSearch(searcher, candidates=bad)


class _HistorySpy(BatchedGreedy):
    """Greedy, checking at every decision that the arena's history replays to the env now."""

    needs_history = True

    def __init__(self):
        self.checked = 0

    def actions(self, env, envs, context):
        history = context["history"]
        for e in envs.tolist():
            replay = _round_start(history, env, e)
            for action in history.actions[e, :int(history.length[e])].tolist():
                rules.apply_action(replay, action)
            assert replay.to_state() == env.match(e).to_state()
            self.checked += 1
        return super().actions(env, envs, context)


def test_the_batched_arena_keeps_each_envs_round_history_for_agents_that_ask():
    spy = _HistorySpy()
    outcomes = play_pairs_batched(spy, BatchedGreedy(), seed=8, first=0, pairs=3, target=150,
                                  max_rounds=100)
    assert len(outcomes) == 3 and spy.checked > 100


def test_a_round_without_plays_yet_gives_every_world_the_same_weight(model):
    env = VectorEnv(4, target=250)
    env.reset(seed=1)
    history = RoundHistory(env)
    views = [decode(o) for o in env.observation.numpy()]
    worlds = [HandSampler(v).sample_many(np.random.default_rng(0), 5) for v in views]
    logl = play_log_likelihoods(PolicySearchAgent(model), history, env, torch.arange(4), worlds)
    assert [row.tolist() for row in logl] == [[0.0] * 5] * 4
    assert play_log_likelihoods(PolicySearchAgent(model), history, env, torch.arange(0), []) == []
