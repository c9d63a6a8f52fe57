"""Our wrapper subclasses (fast paths, direct attributes) behave exactly like PettingZoo's own."""

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pettingzoo.utils import wrappers as pz_wrappers

from sevenrocks_env import sevenrocks_v0


def pettingzoo_env(**kwargs):
    """sevenrocks_v0.env() built from PettingZoo's unmodified wrapper classes."""
    env = sevenrocks_v0.raw_env(**kwargs)
    env = pz_wrappers.TerminateIllegalWrapper(env, illegal_reward=-1)
    env = pz_wrappers.AssertOutOfBoundsWrapper(env)
    return pz_wrappers.OrderEnforcingWrapper(env)


def snapshot(env):
    if not env.agents:  # after the last agent left: only the dicts remain
        return dict(env.rewards), dict(env._cumulative_rewards)
    obs, reward, term, trunc, info = env.last()
    return (env.agent_selection, obs["observation"].tobytes(), obs["action_mask"].tobytes(),
            reward, term, trunc, info, dict(env.rewards), dict(env._cumulative_rewards), dict(env.terminations),
            dict(env.truncations), list(env.agents))


def drive(env, seed, choices):
    """Play with actions picked by ``choices`` (legal ints, numpy ints, illegal, out of range,
    None); before a step the wrapped env is observed through ``last()``, or not at all
    (``blind``), or another agent is observed first (``other``).  Returns the trace of
    snapshots and the exceptions raised."""
    env.reset(seed=seed)
    rng = random.Random(seed)
    trace = [snapshot(env)]
    for kind in choices:
        if not env.agents:
            break
        raw = env.unwrapped
        agent = raw.agent_selection
        if kind == "other":
            other = raw.agents[(raw.agents.index(agent) + 1) % len(raw.agents)]
            trace.append(env.observe(other)["action_mask"].tobytes())
        if kind != "blind":
            env.last()
        mask = raw.observe(agent)["action_mask"]  # chosen without touching the wrappers
        legal = np.flatnonzero(mask)
        if raw.terminations[agent] or raw.truncations[agent] or kind == "none":
            action = None
        elif kind == "illegal":
            action = int(np.flatnonzero(mask == 0)[0])
        elif kind == "out_of_range":
            action = 113
        elif kind == "numpy":
            action = np.int64(legal[rng.randrange(len(legal))])
        else:
            action = int(legal[rng.randrange(len(legal))])
        try:
            env.step(action)
            trace.append(snapshot(env))
        except (AssertionError, ValueError) as error:
            trace.append(type(error).__name__)
    return trace


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000),
       choices=st.lists(st.sampled_from(["legal"] * 12 + ["numpy", "illegal", "out_of_range",
                                                          "none", "blind", "other"]),
                        max_size=80))
def test_same_trace_as_pettingzoo_wrappers(seed, choices):
    assert drive(sevenrocks_v0.env(), seed, choices) == drive(pettingzoo_env(), seed, choices)


def test_same_trace_for_whole_matches():
    for seed in range(3):
        choices = ["legal"] * 2000
        assert drive(sevenrocks_v0.env(), seed, choices) == drive(pettingzoo_env(), seed, choices)


def test_same_errors_before_reset():
    for make in (sevenrocks_v0.env, pettingzoo_env):
        env = make()
        for name in ("agent_selection", "agents", "rewards", "num_agents"):
            with pytest.raises(AttributeError, match=f"{name} cannot be accessed before reset"):
                getattr(env, name)
        env.reset(seed=0)
        assert env.agents == list(env.possible_agents) and env.num_agents == 4


def test_a_bool_action_is_a_type_error_and_changes_nothing():
    """gymnasium's Discrete contains True (as 1): a bool is refused, not played as a move."""
    env = sevenrocks_v0.env()
    env.reset(seed=0)
    state = env.unwrapped.match.to_state()
    for action in (True, False):
        with pytest.raises(TypeError, match="a bool"):
            env.step(action)
    assert env.unwrapped.match.to_state() == state


def test_observe_before_reset_is_refused_as_pettingzoo_does():
    for make in (sevenrocks_v0.env, pettingzoo_env):
        with pytest.raises(AssertionError, match="reset.. needs to be called before observe"):
            make().observe("player_0")


def test_last_after_the_match_names_the_problem():
    """PettingZoo's own wrapper gave a bare KeyError of the agent's name."""
    env = sevenrocks_v0.env(target=30)
    env.reset(seed=0)
    while env.agents:
        agent = env.agent_selection
        obs, *_ = env.last()
        done = env.terminations[agent] or env.truncations[agent]
        env.step(None if done else int(np.flatnonzero(obs["action_mask"])[0]))
    with pytest.raises(RuntimeError, match="call reset"):
        env.last()
