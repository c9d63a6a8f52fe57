"""Scores below -120, which real matches reach after a few blocked rounds (R7 has no floor):
the agents that rebuild the round from what a seat sees (search, IS-MCTS) gave it round index 0,
where the state checker allows at least -120, and crashed; and a match loaded low through
``reset(options={"match": m})`` gave observations outside the declared space."""

import numpy as np
import pytest

from sevenrocks_env import rules, sevenrocks_v0
from sevenrocks_env.agents import make_agent
from sevenrocks_env.agents.belief import world_match
from sevenrocks_env.dealing import deal
from sevenrocks_env.match_state import check_match_state, fewest_rounds_before
from sevenrocks_env.observation import action_mask, decode, encode


def _low_position() -> rules.Match:
    """A position of a match whose team is below -120 (as after a few blocked rounds), with a
    choice for the seat on turn."""
    hands, opener = deal(3, 5)
    match = rules.Match.from_deal(hands, opener, scores=(-130, -65), seed=3, round_index=5)
    rng = np.random.default_rng(0)
    while len(rules.legal_actions(match)) < 2:
        rules.apply_action(match, int(rng.choice(rules.legal_actions(match))))
    return match


@pytest.mark.parametrize("scores, rounds", [((0, 0), 0), ((-120, 5), 0), ((-125, 0), 1),
                                            ((0, -240), 1), ((-245, -10), 2)])
def test_fewest_rounds_before_is_the_first_round_the_checker_accepts(scores, rounds):
    assert fewest_rounds_before(scores) == rounds
    match = rules.Match.new(0)
    match.scores, match.round_index = list(scores), rounds
    check_match_state(match)
    if rounds:
        match.round_index = rounds - 1
        with pytest.raises(ValueError, match="scores must be at least"):
            check_match_state(match)


@pytest.mark.parametrize("spec", ["search:samples=2", "search:samples=2,rollout=defensive"])
def test_search_plays_a_position_below_minus_120(spec):
    match = _low_position()
    seat = match.turn
    action = make_agent(spec, seed=0).act(encode(match, seat), action_mask(match, seat))
    assert rules.is_legal(match, action)


def test_a_world_of_a_low_position_is_a_valid_match():
    match = _low_position()
    view = decode(encode(match, match.turn))
    hidden = tuple(match.hands[(match.turn + k) % 4] for k in (1, 2, 3))
    world = world_match(view, hidden)
    check_match_state(world)
    assert world.round_index == fewest_rounds_before(view.scores)


def test_observations_of_a_match_loaded_low_are_in_the_space():
    lowest = 0
    for seed in range(6):
        env = sevenrocks_v0.raw_env(max_rounds=1)
        hands, opener = deal(seed, 0)
        env.reset(options={"match": rules.Match.from_deal(hands, opener, seed=seed,
                                                          scores=(-110, -110))})
        rng = np.random.default_rng(seed)
        for agent in env.agent_iter(max_iter=500):
            observation, _, terminated, truncated, _ = env.last()
            assert env.observation_space(agent).contains(observation), (seed, agent)
            lowest = min(lowest, *env.unwrapped.match.scores)
            if terminated or truncated:
                env.step(None)
            else:
                env.step(int(rng.choice(np.flatnonzero(observation["action_mask"]))))
    assert lowest < -120  # below the bound of before (-120 * max_rounds)
