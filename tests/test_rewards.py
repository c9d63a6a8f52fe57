"""One reward definition (sevenrocks_env.rewards) in every env view: each mode's per-step rewards sum
over a match to what the rewards table says, and ``shaped`` is the trainer's reward,
``points_scale * margin + win_reward * winner_sign`` (R5, R7 score changes; R8 the win)."""

import random

import gymnasium
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.registration import GYMNASIUM_ID, PETTINGZOO_ID, pettingzoo_has_registry
from sevenrocks_env.rewards import FIXED_WEIGHTS, SHAPED_DEFAULTS, reward_weights, team0_reward
from sevenrocks_env.single_agent import SingleAgentEnv

seeds = st.integers(0, 2**32 - 1)
# small targets and round limits: matches end quickly, by a win or by truncation
match_settings = st.fixed_dictionaries({"target": st.sampled_from([20, 60, 150, 250]),
                                        "max_rounds": st.sampled_from([1, 2, 5, 100])})
weights = st.floats(0, 10, allow_nan=False, allow_infinity=False)


def expected_team0_total(match, points_scale, win_reward):
    """The rewards table: a whole match sums to points_scale * margin + win_reward * sign."""
    sign = 0 if match.winner is None else (1 if match.winner == 0 else -1)
    return points_scale * (match.scores[0] - match.scores[1]) + win_reward * sign


def play_random(env, seed, actions=None):
    """One match with random legal actions through the AEC API; per-agent reward sums, the
    per-step reward dicts and the actions played (replayed from ``actions`` if given)."""
    env.reset(seed=seed)
    rng = random.Random(seed)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    played, steps = [], []
    for agent in env.agent_iter():
        obs, reward, term, trunc, _ = env.last()
        totals[agent] += reward
        if term or trunc:
            action = None
        elif actions is not None:
            action = actions[len(played)]
        else:
            action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        if action is not None:
            played.append(action)
        env.step(action)
        if action is not None:
            steps.append(dict(env.unwrapped.rewards))
    return totals, steps, played


@settings(max_examples=25, deadline=None)
@given(seed=seeds, setting=match_settings, mode=st.sampled_from(["win", "points", "shaped"]))
def test_each_mode_sums_over_a_match_to_the_table(seed, setting, mode):
    env = sevenrocks_v0.env(reward=mode, **setting)
    totals, _, _ = play_random(env, seed)
    points_scale, win_reward = reward_weights(mode)
    team0 = expected_team0_total(env.unwrapped.match, points_scale, win_reward)
    for seat in range(4):
        assert totals[f"player_{seat}"] == pytest.approx(team0 if seat % 2 == 0 else -team0,
                                                         abs=1e-9)


def test_the_table_of_the_fixed_modes():
    assert reward_weights("win") == FIXED_WEIGHTS["win"] == (0.0, 1.0)
    assert reward_weights("points") == FIXED_WEIGHTS["points"] == (0.01, 0.0)
    assert reward_weights("shaped") == SHAPED_DEFAULTS == (0.01, 1.0)


@settings(max_examples=15, deadline=None)
@given(seed=seeds, setting=match_settings, points_scale=weights, win_reward=weights)
def test_shaped_is_the_trainers_reward_step_by_step(seed, setting, points_scale, win_reward):
    """The same match in three envs: at every step ``shaped`` equals
    ``points_scale * margin change + win_reward * winner sign`` -- that is, points_scale / 0.01
    times the ``points`` reward plus win_reward times the ``win`` reward -- and sums to the
    trainer's match return."""
    shaped = sevenrocks_v0.env(reward="shaped", points_scale=points_scale, win_reward=win_reward,
                               **setting)
    totals, shaped_steps, actions = play_random(shaped, seed)
    _, points_steps, _ = play_random(sevenrocks_v0.env(reward="points", **setting), seed, actions)
    _, win_steps, _ = play_random(sevenrocks_v0.env(reward="win", **setting), seed, actions)
    assert len(shaped_steps) == len(points_steps) == len(win_steps) == len(actions)
    for s, p, w in zip(shaped_steps, points_steps, win_steps):
        for agent in s:
            margin_change = p.get(agent, 0.0) / 0.01
            assert s[agent] == pytest.approx(team0_reward(margin_change, w.get(agent, 0.0),
                                                          points_scale, win_reward), abs=1e-9)
    match = shaped.unwrapped.match
    team0 = expected_team0_total(match, points_scale, win_reward)
    assert totals["player_0"] == pytest.approx(team0, abs=1e-9)
    assert totals["player_3"] == pytest.approx(-team0, abs=1e-9)


@settings(max_examples=10, deadline=None)
@given(seed=seeds, mode=st.sampled_from(["win", "points", "shaped"]), seat=st.integers(0, 3),
       partner=st.sampled_from(["self", "random"]))
def test_single_agent_view_sums_to_the_table_for_the_learner_team(seed, mode, seat, partner):
    env = SingleAgentEnv(opponents="random", seat=seat, partner=partner, reward=mode, target=100)
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    total, done = 0.0, False
    while not done:
        action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        obs, reward, terminated, truncated, _ = env.step(action)
        total += reward
        done = terminated or truncated
    team0 = expected_team0_total(env.match, *reward_weights(mode))
    assert total == pytest.approx(team0 if seat % 2 == 0 else -team0, abs=1e-9)


def test_shaped_parameters_reach_every_view():
    kwargs = {"reward": "shaped", "points_scale": 0.5, "win_reward": 3.0}
    views = [sevenrocks_v0.raw_env(**kwargs), sevenrocks_v0.env(**kwargs).unwrapped,
             sevenrocks_v0.parallel_env(**kwargs).unwrapped,
             SingleAgentEnv(opponents="random", **kwargs).aec_env,
             gymnasium.make(GYMNASIUM_ID, opponents="random", **kwargs).unwrapped.aec_env]
    if pettingzoo_has_registry():  # PettingZoo < 1.27 has none
        import pettingzoo

        views.append(pettingzoo.make("aec", PETTINGZOO_ID, **kwargs).unwrapped)
    for raw in views:
        assert (raw.reward_mode, raw.points_scale, raw.win_reward) == ("shaped", 0.5, 3.0)


@pytest.mark.parametrize("kwargs, message", [
    ({"reward": "money"}, "reward must be one of"),
    ({"reward": "win", "points_scale": 0.1}, "parameters of reward='shaped'"),
    ({"reward": "points", "win_reward": 1.0}, "parameters of reward='shaped'"),
    ({"reward": "shaped", "points_scale": float("nan")}, "points_scale"),
    ({"reward": "shaped", "win_reward": -1.0}, "win_reward"),
    ({"reward": "shaped", "win_reward": float("inf")}, "win_reward"),
    ({"reward": "shaped", "points_scale": "0.1"}, "points_scale"),
    ({"reward": "shaped", "points_scale": True}, "points_scale"),
])
def test_bad_reward_arguments_are_clear_errors(kwargs, message):
    for make in (sevenrocks_v0.raw_env, sevenrocks_v0.env, sevenrocks_v0.parallel_env,
                 lambda **kw: SingleAgentEnv(opponents="random", **kw)):
        with pytest.raises(ValueError, match=message):
            make(**kwargs)


@pytest.mark.parametrize("kwargs, message", [
    ({"points_scale": 10 ** 400}, "points_scale must be a finite number"),
    ({"win_reward": 2 ** 1024}, "win_reward must be a finite number"),
    ({"win_reward": 10 ** 5000}, "win_reward must be a finite number"),
    ({"points_scale": -10 ** 400}, "points_scale must be a finite number"),
])
def test_weights_too_large_for_a_float_are_the_same_clear_error(kwargs, message):
    """``math.isfinite(10**400)`` raised ``OverflowError: int too large to convert to float``,
    and an int past 4300 digits could not be put in the message."""
    with pytest.raises(ValueError, match=message) as info:
        reward_weights("shaped", **kwargs)
    assert len(str(info.value)) < 200


def test_a_reward_mode_that_is_no_string_is_named_in_short():
    for mode in (10 ** 5000, ["win"], np.array(["win", "points"])):
        with pytest.raises(ValueError, match="reward must be one of") as info:
            reward_weights(mode)
        assert len(str(info.value)) < 200


def test_shaped_weights_are_bounded_at_a_million():
    """The documented bound of ``points_scale`` and ``win_reward`` is 1e6, inclusive."""
    assert reward_weights("shaped", points_scale=1e6) == (1e6, SHAPED_DEFAULTS[1])
    assert reward_weights("shaped", win_reward=1e6) == (SHAPED_DEFAULTS[0], 1e6)
    for kwargs in ({"points_scale": 1e6 * 1.0001}, {"win_reward": 1e6 * 1.0001}):
        with pytest.raises(ValueError, match=r"finite number in \[0, 1e\+06\]"):
            reward_weights("shaped", **kwargs)


@pytest.mark.parametrize("value", [np.float32(0.25), np.float64(0.25), 2, np.int64(2)])
def test_shaped_weights_come_back_as_python_floats(value):
    """Whatever number type goes in, the weights are plain floats (they are stored on envs,
    written to configs and multiplied into tensors)."""
    weights = reward_weights("shaped", points_scale=value, win_reward=value)
    assert [type(w) for w in weights] == [float, float]
    assert weights == (float(value), float(value))
