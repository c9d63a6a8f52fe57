"""Mutation-audit tests of the RLlib view (sevenrocks_env.rllib_env): each pins a behaviour that
a small change to it left unnoticed by tests/test_rllib.py.  Needs the [rllib] extra, as that
file does (run with .venv-rllib); skipped where Ray is not installed."""

import re

import numpy as np
import pytest

pytest.importorskip("ray.rllib", reason="needs the [rllib] extra (.venv-rllib)")

from sevenrocks_env.rllib_env import SevenRocksMultiAgentEnv  # noqa: E402
from sevenrocks_env.tiles import WEST, encode_action, parse_tile  # noqa: E402

from positions import opponent_wins_next_position  # noqa: E402
from rllib_example import Context, first_hands  # noqa: E402

OPEN_0_1 = encode_action(parse_tile("0|1"), WEST)


def test_a_config_seed_gives_each_runner_its_own_deals_and_stays_reproducible():
    one, two, again = (SevenRocksMultiAgentEnv(Context(w, seed=1)) for w in (1, 2, 1))
    assert first_hands(one) != first_hands(two)
    assert first_hands(again) == first_hands(SevenRocksMultiAgentEnv(Context(1, seed=1)))


def test_a_start_refused_as_over_leaves_no_episode_to_step():
    """Greedy seat 0 opens 0|5 for 250 (R8): over before a learner moves when the learners are
    team 1 (drawn per reset); a step after the refusal asks for a reset."""
    env = SevenRocksMultiAgentEnv({"opponent": "greedy"})
    for seed in range(20):
        obs, _ = env.reset(seed=seed)  # mid-episode when the bad start comes
        try:
            env.reset(seed=seed, options={"match": opponent_wins_next_position(scores=(245, 0))})
        except ValueError as refused:
            assert "over before a learner seat moves" in str(refused)
            break
    else:
        pytest.fail("the learners were never team 1")
    with pytest.raises(RuntimeError, match="call reset"):
        env.step({next(iter(obs)): 0})


def test_a_none_action_for_the_seat_to_move_is_no_action():
    env = SevenRocksMultiAgentEnv({})
    obs, _ = env.reset(seed=2)
    (agent, _), = obs.items()
    with pytest.raises(ValueError, match=f"no action for {agent}, the seat to move"):
        env.step({agent: None})


def test_an_illegal_action_costs_exactly_1_even_with_points_pending():
    """Seed 23: the opponents scored before player_2's first decision (reward="points")."""
    env = SevenRocksMultiAgentEnv({"opponent": "greedy", "reward": "points"})
    obs, _ = env.reset(seed=23)
    (agent, o), = obs.items()
    assert agent == "player_2" and env._pending[2] != 0  # the situation this test is about
    bad = int(np.flatnonzero(o["action_mask"] == 0)[0])
    _, rewards, terminateds, _, infos = env.step({agent: bad})
    assert rewards[agent] == -1.0
    assert terminateds["__all__"] and infos[agent] == {"illegal_action": True}


def test_observations_lie_in_the_observation_space_with_a_float32_mask():
    env = SevenRocksMultiAgentEnv({})
    obs, _ = env.reset(seed=4)
    (agent, o), = obs.items()
    assert o["action_mask"].dtype == np.float32
    assert env.observation_spaces[agent].contains(o)


def test_an_illegal_action_in_raise_mode_lists_the_legal_ones():
    env = SevenRocksMultiAgentEnv({"illegal_action": "raise"})
    obs, _ = env.reset(seed=2)
    (agent, o), = obs.items()
    legal = [int(a) for a in np.flatnonzero(o["action_mask"])]
    bad = int(np.flatnonzero(o["action_mask"] == 0)[0])
    with pytest.raises(ValueError, match=rf"illegal action {bad} for {agent}; legal: "
                                         rf"{re.escape(str(legal))}"):
        env.step({agent: bad})


def test_a_match_over_before_some_seats_moved_ends_only_for_the_seats_that_did():
    """Seat 0 opens 0|1; seat 1's forced 1|5 wins for team 1 (R8).  Seats 1-3 never had an
    observation: only player_0 gets the final observation, reward and done flag."""
    env = SevenRocksMultiAgentEnv({})
    obs, _ = env.reset(seed=0, options={"match": opponent_wins_next_position()})
    assert list(obs) == ["player_0"]
    obs, rewards, terminateds, truncateds, _ = env.step({"player_0": OPEN_0_1})
    assert list(obs) == ["player_0"] and rewards == {"player_0": -1.0}
    assert terminateds == {"player_0": True, "__all__": True}


def test_a_reward_goes_out_to_every_seat_that_acted_as_soon_as_it_is_scored():
    """reward="points", every seat a learner: a score pays each seat that has acted at once,
    not only the seat observed next."""
    env = SevenRocksMultiAgentEnv({"reward": "points"})
    obs, _ = env.reset(seed=1)
    for _ in range(200):
        (agent, o), = obs.items()
        action = int(np.flatnonzero(o["action_mask"])[0])
        obs, rewards, _, _, _ = env.step({agent: action})
        if any(rewards.values()):
            break
    assert set(rewards) == {"player_0", "player_1", "player_2", "player_3"}
    assert rewards["player_0"] == rewards["player_2"] == -rewards["player_1"] != 0


def test_the_opponents_draws_change_with_the_seed():
    """A random opponent is reseeded from the env's stream: its opening varies by seed."""
    env = SevenRocksMultiAgentEnv({"opponent": "random"})
    openings = set()
    for seed in range(16):
        obs, _ = env.reset(seed=seed, options={"match": opponent_wins_next_position(scores=(0, 0))})
        if list(obs) == ["player_1"]:  # the learners are team 1: the opponent at seat 0 opened
            openings.add(env._aec.match.played)
    assert len(openings) > 1
