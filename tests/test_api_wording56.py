"""What the PettingZoo env and the Gymnasium view say at their edges (found by a review of both
against PettingZoo's and Gymnasium's conventions): the masks after an illegal move's end, and
the Gymnasium view's errors in its own words."""

from __future__ import annotations

import numpy as np
import pytest

from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.public_round import public_round
from sevenrocks_env.rules import Match
from sevenrocks_env.single_agent import SingleAgentEnv


def test_after_an_illegal_move_s_end_no_seat_has_a_legal_action():
    """env()'s wrapper ends the match at an illegal move and leaves it as it was: the mover's
    last observation still offered its legal moves (every other end gives all zeros)."""
    env = sevenrocks_v0.env()
    env.reset(seed=1)
    rng = np.random.default_rng(0)
    for _ in range(9):
        observation, *_ = env.last()
        env.step(int(rng.choice(np.flatnonzero(observation["action_mask"]))))
    observation, *_ = env.last()
    offender = env.agent_selection
    env.step(int(np.flatnonzero(observation["action_mask"] == 0)[0]))
    seen = {}
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, _ = env.last()
        assert terminated and truncated
        seen[agent] = (reward, int(observation["action_mask"].sum()))
        env.step(None)
    assert seen[offender] == (-1.0, 0) and all(count == 0 for _, count in seen.values())
    assert int(env.unwrapped.observe(offender)["action_mask"].sum()) == 0  # removed: none


def test_the_gymnasium_view_names_the_seat_and_knows_no_dead_step():
    env = SingleAgentEnv(opponents="greedy", seat=2)
    observation, _ = env.reset(seed=0)
    with pytest.raises(ValueError) as error:
        env.step(None)
    assert "action of seat 2 must be an int" in str(error.value)
    assert "terminated or truncated" not in str(error.value)  # PettingZoo's meaning of None
    observation, reward, terminated, *_ = env.step(
        int(np.flatnonzero(observation["action_mask"] == 0)[0]))  # illegal: ends it
    assert reward == -1.0 and terminated
    assert not observation["action_mask"].any() and not env.action_masks().any()  # as any end
    assert not env.match.over  # the match is left as it was, so "the match is over" was false
    with pytest.raises(RuntimeError, match="the episode is over .* an illegal action ended it"):
        env.step(0)


def test_a_match_without_history_names_from_state_as_a_cause():
    match = Match.from_state(Match.new(3).to_state())
    with pytest.raises(ValueError, match="keep_history=False, or by Match.from_state"):
        public_round(match)
