"""Mutation audit of the determinized search agents and their hidden-hand sampler: tests for
what the existing tests left open (each kills a mutant that survived them)."""

import numpy as np
import pytest

from sevenrocks_env import rules
from sevenrocks_env.agents.belief import HIDDEN_SEATS, HandSampler, excluded_tiles
from sevenrocks_env.agents.layout import view_of
from sevenrocks_env.agents.search import SearchAgent
from sevenrocks_env.agents.search_batched import BatchedSearch
from sevenrocks_env.observation import action_mask, encode
from positions import positions_with_a_choice, random_state


class _ZeroDraws:
    """A generator whose every uniform draw is 0.0 (``Generator.random`` can return it)."""

    def random(self, size=None):
        return 0.0 if size is None else np.zeros(size)


def _consistent(view, hands) -> bool:
    """The hands hold exactly the unseen tiles, each seat its count, none a knock excludes."""
    return (sum(hands) == view.unseen == hands[0] | hands[1] | hands[2]
            and all(h.bit_count() == view.tile_counts[k] for h, k in zip(hands, HIDDEN_SEATS))
            and not any(h & excluded_tiles(view.voids[k]) for h, k in zip(hands, HIDDEN_SEATS)))


@pytest.mark.parametrize("seed, moves", [(3, 18), (5, 4), (11, 30), (6, 22), (52, 23)])
def test_a_zero_draw_never_gives_a_tile_to_a_seat_of_weight_zero(seed, moves):
    """At a draw of exactly 0 the walk over the seats must skip those whose weight is 0 (full,
    or left with no consistent completion): ``pick <= weight`` took the first of them."""
    match = random_state(seed, moves)
    view = view_of(match, match.turn)
    sampler = HandSampler(view)
    for hands in [sampler.sample(_ZeroDraws())] + sampler.sample_many(_ZeroDraws(), 2):
        assert _consistent(view, hands), (seed, moves, hands)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"samples": 0}, ValueError, r"^search: samples must be an int in \[1, 579\], got 0$"),
    ({"time_limit": 3600.5}, ValueError,  # docs/agents.md: time_limit at most 3600 s
     r"^search: time_limit must be in \(0, 3600\.0\] seconds, got 3600\.5$"),
    ({"time_limit": 0}, ValueError, r"^search: time_limit must be in \(0, 3600\.0\] seconds"),
    ({"win_bonus": -1.0}, ValueError, r"^search: win_bonus must be in \[0, 1e6\], got -1\.0$"),
    ({"rollout": "mcts"}, ValueError,
     r"^search: rollout must be one of greedy, defensive, heuristic, got 'mcts'$"),
    ({"seed": -1}, ValueError, r"^seed must be a non-negative int or None, got int -1$"),
    ({"seed": True}, TypeError, r"^seed must be a non-negative int or None, got bool True$"),
])
def test_search_refuses_bad_settings_in_its_own_words(kwargs, error, message):
    with pytest.raises(error, match=message):
        SearchAgent(**kwargs)


def test_search_takes_its_documented_limits():
    agent = SearchAgent(samples=1, time_limit=3600, win_bonus=0, rollout="heuristic", seed=0)
    assert (agent.samples, agent.time_limit, agent.win_bonus, agent.rollout) == (
        1, 3600, 0, "heuristic")



def _positions(count):
    return positions_with_a_choice(count, min_legal=3)


def test_an_actions_value_does_not_depend_on_the_other_actions_evaluated():
    """Every action is rolled out from a fresh copy of the same world: evaluating the legal
    actions in reverse order, or one alone, gives each the same value (a world reused across
    actions gave every action after the first a round already played out)."""
    for match in _positions(3):
        view, legal = view_of(match, match.turn), rules.legal_actions(match)
        values = SearchAgent(seed=5, samples=3).action_values(view, legal)
        assert SearchAgent(seed=5, samples=3).action_values(view, legal[::-1])[::-1] == values
        assert [SearchAgent(seed=5, samples=3).action_values(view, [a])[0]
                for a in legal] == values


@pytest.mark.parametrize("rollout, win_bonus", [("defensive", 30.0), ("greedy", 0.0)])
def test_the_batched_search_gives_the_agents_values_from_the_same_generator(rollout, win_bonus):
    """``BatchedSearch`` samples the same worlds from a generator in the same state as the
    agent's and returns exactly ``SearchAgent.action_values``' numbers (its docstring)."""
    for k, match in enumerate(_positions(4)):
        seat = match.turn
        agent = SearchAgent(seed=k, samples=4, rollout=rollout, win_bonus=win_bonus)
        batched = BatchedSearch(SearchAgent(samples=4, rollout=rollout, win_bonus=win_bonus))
        expected = agent.action_values(view_of(match, seat), rules.legal_actions(match))
        got = batched.action_values_many([encode(match, seat)], [action_mask(match, seat)],
                                         [np.random.default_rng(k)])
        assert got == [expected], k


def test_policy_search_scores_the_mean_over_worlds_plus_the_prior(monkeypatch):
    """Each action's score is its *mean* rollout value over the worlds (not the best world's)
    plus ``prior`` times the policy's log-probability of it at the real observation."""
    from sevenrocks_env.agents.policy_search import PolicySearchAgent
    from sevenrocks_env.policy import PolicyNet
    import torch
    torch.manual_seed(0)
    match, = positions_with_a_choice(1, min_legal=2)
    obs, mask = encode(match, match.turn), action_mask(match, match.turn)
    legal = rules.legal_actions(match)
    values = np.arange(3 * len(legal), dtype=np.float64).reshape(3, len(legal)) ** 2
    values[1] *= -1.0
    for prior in (0.0, 2.5):
        agent = PolicySearchAgent(PolicyNet([8]), samples=3, seed=0, prior=prior)
        monkeypatch.setattr(agent, "world_values", lambda decisions: [values])
        with torch.inference_mode():
            log_probs = agent._log_probs([obs], [mask])[0][legal]
        expected = values.mean(0) + prior * log_probs
        assert np.allclose(agent.action_values(obs, mask), expected, rtol=0, atol=1e-12)


def test_the_worlds_of_a_decision_get_deal_streams_of_their_own():
    """Rollouts past the round deal each world's later rounds from its own stream: the worlds
    of a decision do not all share one future deal."""
    from sevenrocks_env.agents.world_rollouts import Decision
    match, = positions_with_a_choice(1)
    decision = Decision.sample(view_of(match, match.turn), rules.legal_actions(match), 16,
                               np.random.default_rng(0), rounds=3)
    assert len(set(decision.streams)) == 16
