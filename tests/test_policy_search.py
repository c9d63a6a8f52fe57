"""Policy-guided determinized search: its rollouts, legality, information, settings and devices.

Batched rollouts equal the rules' own playout, the match horizon and the prior, legal play from
random positions and whole matches, the observation alone deciding, bad settings refused, the
batched arena and copies on another device.  The worlds it samples (the sampler's consistency
and uniformity): ``test_policy_search_worlds.py``.
"""

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from sevenrocks_env import rules
from sevenrocks_env.agents import GreedyAgent
from sevenrocks_env.agents.belief import HandSampler, world_match
from sevenrocks_env.agents.inference import InferenceSearch
from sevenrocks_env.agents.layout import view_of
from sevenrocks_env.agents.policy_search import PolicySearchAgent
from sevenrocks_env.agents.world_rollouts import Decision
from sevenrocks_env.arena import evaluate
from sevenrocks_env.driver import MatchDriver, agent_action
from sevenrocks_env.observation import action_mask, encode
from sevenrocks_env.policy import MaskedCategorical, load_policy
from policy_files import assert_unseeded_agents_draw_fresh_seeds
from positions import choices_grouped_and_alone, knock_inputs, random_state, two_deals_one_view


@pytest.fixture(scope="module")
def shipped():
    return load_policy("shipped").model


@pytest.mark.parametrize("seed, moves", [(1, 0), (2, 5), (3, 9), (4, 14), (7, 45)])
def test_search_sees_only_the_observation(shipped, seed, moves):
    """Asked as every driver asks, the policy search and the search with inference (which
    also reads the round's public plays) answer alike in two deals the seat cannot tell apart
    (``two_deals_one_view``: other hidden tiles, dealt and held, the same public round)."""
    match, twin = two_deals_one_view(seed, moves)
    seat = match.turn
    obs, mask = encode(match, seat), action_mask(match, seat)
    values = PolicySearchAgent(shipped, samples=4, seed=7).action_values(obs, mask)
    twin_values = PolicySearchAgent(shipped, samples=4, seed=7).action_values(
        encode(twin, seat), action_mask(twin, seat))
    assert values == twin_values
    for make in (lambda: PolicySearchAgent(shipped, samples=4, seed=7),
                 lambda: InferenceSearch(PolicySearchAgent(shipped, samples=4, seed=7), 0.5)):
        assert agent_action(make(), match, seat) == agent_action(make(), twin, seat)


def policy_rollout(model, world: rules.Match, action: int, win_bonus: float) -> float:
    """The rollout value by the rules: ``action``, then the policy's argmax for every seat from
    its own observation of the world, to the round's end (or a win)."""
    start = world.scores[0] - world.scores[1]
    rules.apply_action(world, action)
    while not world.over and not world.awaiting_deal:
        legal = rules.legal_actions(world)
        if len(legal) > 1:
            obs = torch.as_tensor(encode(world, world.turn))[None]
            mask = torch.as_tensor(action_mask(world, world.turn))[None]
            logits, _ = model(obs, mask)
            legal = [int(MaskedCategorical(logits, mask).mode()[0])]
        rules.apply_action(world, legal[0])
    value = float(world.scores[0] - world.scores[1] - start)
    if world.winner is not None:
        value += win_bonus if world.winner == 0 else -win_bonus
    return value


@pytest.mark.parametrize("seed, moves, scores", [(11, 0, (0, 0)), (12, 6, (40, 90)),
                                                 (13, 3, (235, 230)), (14, 10, (245, 240))])
def test_batched_rollouts_equal_rule_rollouts(shipped, seed, moves, scores):
    """Every (world, action) value from the batched engine equals the rules' own playout: the
    round's end is detected (no points from the auto-reset's next round), deductions and the
    win (R7, R8) counted.  ``reach=0`` keeps even near-target positions to one round."""
    match = random_state(seed, moves)
    match.scores = list(scores)
    view = view_of(match, match.turn)
    legal = rules.legal_actions(match)
    agent = PolicySearchAgent(shipped, samples=3, seed=seed, reach=0, win_bonus=50.0)
    sampler = HandSampler(view)
    hidden = [sampler.sample(np.random.default_rng(seed + s)) for s in range(3)]
    with torch.inference_mode():
        [batched] = agent.world_values([Decision(view, legal, hidden)])
        expected = [[policy_rollout(shipped, world_match(view, h), a, 50.0) for a in legal]
                    for h in hidden]
    assert batched.tolist() == expected


def test_match_horizon_goes_past_the_round_only_when_the_target_is_in_reach(shipped):
    """With a three-round budget some copies play on into the next deal (values change) and most
    values count a win or loss (R8); the agent asks for that budget exactly when a partnership
    is within ``reach`` of the target."""
    match = random_state(21, 4)
    match.scores = [220, 215]
    view = view_of(match, match.turn)
    legal = rules.legal_actions(match)
    sampler = HandSampler(view)
    hidden = [sampler.sample(np.random.default_rng(s)) for s in range(4)]
    values = {}
    with torch.inference_mode():
        for label, rounds in (("one", 1), ("three", 3)):
            agent = PolicySearchAgent(shipped, samples=4, seed=0, win_bonus=1000.0)
            [values[label]] = agent.world_values([Decision(view, legal, hidden, range(4), rounds)])
    assert not np.array_equal(values["one"], values["three"])
    decided = np.abs(values["three"]) > 500  # the bonus dwarfs three rounds' points
    assert decided.mean() > 0.5
    # the agent asks for the match horizon exactly when a partnership is within reach
    seen = []
    for reach, horizon in ((0, 3), (60, 1), (60, 3), (30, 3)):  # 220 = 250 - 30: in reach
        agent = PolicySearchAgent(shipped, samples=1, seed=0, reach=reach, horizon=horizon)
        agent.world_values = lambda decisions: seen.append(decisions[0].rounds) or [
            np.zeros((1, len(legal)))]
        agent.act(encode(match, match.turn), action_mask(match, match.turn))
    assert seen == [1, 1, 3, 3]


def test_the_prior_adds_the_policy_s_log_probabilities(shipped):
    """An action's score is its mean rollout value plus ``prior`` points per nat of the policy's
    log-probability: the same worlds (same seed) with and without the prior differ by exactly
    that."""
    match = random_state(8, 9)
    obs, mask = encode(match, match.turn), action_mask(match, match.turn)
    legal = rules.legal_actions(match)
    assert len(legal) > 1
    plain = PolicySearchAgent(shipped, samples=4, seed=3, prior=0.0).action_values(obs, mask)
    with_prior = PolicySearchAgent(shipped, samples=4, seed=3, prior=2.5).action_values(obs, mask)
    with torch.inference_mode():
        logits, _ = shipped(torch.from_numpy(obs)[None], torch.from_numpy(mask)[None].bool())
        log_probs = MaskedCategorical(logits, torch.from_numpy(mask)[None].bool()).log_probs[0]
    np.testing.assert_allclose(np.subtract(with_prior, plain), 2.5 * log_probs[legal].numpy(),
                               rtol=1e-4, atol=1e-4)
    # the default weight (5 since v3, docs/agents.md) is the one the agents table documents
    from sevenrocks_env.agents import __doc__ as table
    default = PolicySearchAgent(shipped, samples=1).prior
    assert default == 5.0 and f"samples=64,prior={default:g}," in table


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), moves=st.integers(0, 60))
def test_search_plays_legal_actions_from_random_positions(shipped, seed, moves):
    match = random_state(seed, moves)
    if match.over:
        return
    seat = match.turn
    agent = PolicySearchAgent(shipped, samples=2, seed=seed)
    action = agent.act(encode(match, seat), action_mask(match, seat))
    assert rules.is_legal(match, action), (action, rules.legal_actions(match))


def test_search_never_plays_an_illegal_move_over_random_matches(shipped):
    """Whole (short) matches with the search at two seats; the driver raises on an illegal move."""
    agent = PolicySearchAgent(shipped, samples=2, seed=0)
    for seed in range(2):
        match = rules.Match.new(seed, target=80, max_rounds=6)
        driver = MatchDriver(match, [agent, GreedyAgent(), agent, GreedyAgent()])
        driver.run()
        assert match.over
        assert driver.decisions[0] + driver.decisions[2] > 0


def test_small_arena_against_greedy_runs_the_match_horizon_rollouts(shipped, monkeypatch):
    """Target 30: every decision is within ``reach`` of it, so every search the arena asks for
    rolls its worlds out over ``horizon`` rounds (with the engine's next deals), and the matches
    end."""
    searched = []
    world_values = PolicySearchAgent.world_values

    def recording(agent, decisions):
        searched.extend(decision.rounds for decision in decisions)
        return world_values(agent, decisions)

    monkeypatch.setattr(PolicySearchAgent, "world_values", recording)
    result = evaluate(PolicySearchAgent(shipped, samples=2, horizon=3), GreedyAgent(), pairs=1,
                      seed=5, target=30)
    assert result.matches == 2 and result.pairs == 1
    assert len(searched) >= 2 and set(searched) == {3}


def test_search_plays_the_action_of_the_best_score_ties_to_the_lower_action(shipped):
    """``act`` / ``choose_many`` play the legal action with the highest score (mean rollout
    margin for the seat's own partnership, ``prior`` 0 here), ties to the lower action number --
    not the lowest score (the opponents' best), the first or the last of the best."""
    match = next(m for m in (random_state(s, 9) for s in range(100))
                 if not m.over and len(rules.legal_actions(m)) == 3)
    obs, mask = encode(match, match.turn), action_mask(match, match.turn)
    legal = rules.legal_actions(match)
    agent = PolicySearchAgent(shipped, samples=2, seed=0, prior=0.0)
    for means, best in (([1.0, 5.0, -2.0], 1), ([-3.0, -1.0, -1.0], 1), ([4.0, 4.0, 0.0], 0),
                        ([-1.0, -2.0, 0.5], 2)):
        agent.world_values = lambda decisions, means=means: [np.array([means, means])]
        assert agent.act(obs, mask) == legal[best], means
        assert agent.choose_many([obs], [mask], [np.random.default_rng(0)]) == [legal[best]]


def test_forced_move_is_played_without_search(shipped):
    agent = PolicySearchAgent(shipped, samples=1, seed=0)
    agent._rollouts = None  # any search would fail
    assert agent.act(*knock_inputs()) == 112


@pytest.mark.parametrize("kwargs, words", [
    ({"samples": 0}, "samples"), ({"samples": 10_000}, "samples"), ({"rollout": "mcts"}, "rollout"),
    ({"prior": -1.0}, "prior"), ({"win_bonus": float("nan")}, "win_bonus"),
    ({"horizon": 0}, "horizon"), ({"threads": 0}, "threads"), ({"threads": 2.5}, "threads"),
    ({"threads": True}, "threads"), ({"horizon": 2.5}, "horizon"), ({"reach": "60"}, "reach"),
])
def test_bad_settings_are_refused_with_their_name(shipped, kwargs, words):
    with pytest.raises(ValueError, match=words):
        PolicySearchAgent(shipped, **kwargs)


def test_bad_policy_path_is_refused(tmp_path):
    with pytest.raises(ValueError, match="search:policy: cannot load policy.*missing"):
        PolicySearchAgent(str(tmp_path / "missing.pt"))


def test_threads_setting_is_restored_after_a_decision(shipped):
    match = random_state(2, 5)
    before = torch.get_num_threads()
    torch.set_num_threads(3)  # not the agent's 1, whatever this process runs with
    try:
        PolicySearchAgent(shipped, samples=1, seed=0, threads=1).act(
            encode(match, match.turn), action_mask(match, match.turn))
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)


def test_threads_apply_to_action_values_too(shipped, monkeypatch):
    """Not only act/choose_many: distillation calls action_values_many directly."""
    match = random_state(2, 5)
    agent = PolicySearchAgent(shipped, samples=1, seed=0, threads=1)
    seen, world_values = [], agent.world_values
    monkeypatch.setattr(agent, "world_values",
                        lambda d: seen.append(torch.get_num_threads()) or world_values(d))
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        agent.action_values(encode(match, match.turn), action_mask(match, match.turn))
        assert seen == [1] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_agent_spec_builds_the_policy_search():
    from sevenrocks_env.agents import SearchAgent, make_agent
    assert isinstance(make_agent("search:policy=shipped,samples=4"), PolicySearchAgent)
    assert isinstance(make_agent("search:samples=4"), SearchAgent)
    with pytest.raises(ValueError, match="parameters: policy, samples"):
        make_agent("search:policy=shipped,bogus=1")


def test_choices_do_not_depend_on_how_decisions_are_grouped(shipped):
    """``choose_many`` (the batched arena's call) equals one decision at a time, each decision
    sampling from its own generator: grouping only changes the batch, never a value."""
    agent = PolicySearchAgent(shipped, samples=3)
    matches = [m for m in (random_state(s, 4 + s % 30) for s in range(16))
               if not m.over and len(rules.legal_actions(m)) > 1]
    together, alone = choices_grouped_and_alone(agent.choose_many, matches)
    assert together == alone and len(matches) > 5


def test_batched_arena_refuses_sampled_rollouts(shipped):
    from sevenrocks_env.arena_batched import evaluate_batched
    with pytest.raises(ValueError, match="rollout=argmax"):
        evaluate_batched(PolicySearchAgent(shipped, samples=2, rollout="sample"), "greedy", 1)


def test_batched_arena_plays_the_policy_search_end_to_end():
    """The batched arena hands choose_many numpy arrays of observations and masks (a bare
    ``if not observations`` on them once broke every batched run while the unit tests, which
    pass lists, stayed green)."""
    from sevenrocks_env.arena_batched import evaluate_batched

    result = evaluate_batched("search:policy=shipped,samples=2", "greedy", 2, seed=5,
                              target=100, batch=2)
    assert result.pairs == 2 and result.matches == 4


def test_on_its_own_device_the_agent_is_itself(shipped):
    agent = PolicySearchAgent(shipped, samples=2)
    for device in ("cpu", "cpu:0", torch.device("cpu")):
        assert agent.on(device) is agent


def test_on_another_device_a_copy_with_its_own_streams_in_the_same_state(shipped, monkeypatch):
    """(``meta``, let through the engine's device check: another device on any machine; the
    copy is built, not played.)"""
    from sevenrocks_env.agents import policy_search
    monkeypatch.setattr(policy_search, "checked_device", torch.device)
    agent = PolicySearchAgent(shipped, samples=2, seed=4)
    moved = agent.on("meta")
    assert moved is not agent and moved.device == torch.device("meta")
    assert next(moved.model.parameters()).is_meta and not next(agent.model.parameters()).is_meta
    assert moved._rng is not agent._rng and moved._generator is not agent._generator
    assert moved._rng.bit_generator.state == agent._rng.bit_generator.state
    assert torch.equal(moved._generator.get_state(), agent._generator.get_state())
    moved._rng.random(3)  # drawing from the copy leaves the agent's stream where it was
    assert moved._rng.bit_generator.state != agent._rng.bit_generator.state


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_the_batched_arena_on_cuda_plays_a_cpu_agent_on_a_copy(shipped):
    """The arena on a GPU moves the search there (network and rollouts); the caller's agent
    stays on the CPU, with its own random streams, and the GPU copy scores the decisions as the
    CPU agent does (nearly all values equal: a float32 near-tie may flip one rollout move)."""
    from sevenrocks_env.arena_batched import evaluate_batched

    agent = PolicySearchAgent(shipped, samples=4, seed=0)
    result = evaluate_batched(agent, "greedy", 4, seed=5, target=100, device="cuda")
    assert result.pairs == 4 and agent.device.type == "cpu"
    assert next(agent.model.parameters()).device.type == "cpu"
    moved = agent.on("cuda")
    assert next(moved.model.parameters()).device.type == "cuda"
    assert moved._rng is not agent._rng and moved._generator is not agent._generator
    assert agent.on("cuda:0").device == moved.device
    matches = [m for m in (random_state(s, 4 + s % 30) for s in range(12))
               if not m.over and len(rules.legal_actions(m)) > 1]
    views = [(encode(m, m.turn), action_mask(m, m.turn)) for m in matches]
    observations, masks = zip(*views)
    values = [a.action_values_many(observations, masks,
                                   [np.random.default_rng(i) for i in range(len(views))])
              for a in (agent, moved)]
    assert len(values[0]) == len(matches) > 5
    close = [np.isclose(cpu, gpu, atol=1e-4) for cpu, gpu in zip(*values)]
    assert np.concatenate(close).mean() >= 0.9, close


def test_unseeded_agents_do_not_share_their_rollout_draws():
    """seed(None) draws a fresh generator seed for the sampled rollouts, as for the worlds."""
    from sevenrocks_env.agents import make_agent

    assert_unseeded_agents_draw_fresh_seeds(
        *(make_agent("search:policy=shipped,samples=2,rollout=sample") for _ in range(2)))
