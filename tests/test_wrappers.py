"""Our wrapper subclasses (fast paths, direct attributes) behave exactly like PettingZoo's own."""

import random

import numpy as np
import pytest
import torch
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
            # ours refuses an action outside the space with a TypeError or ValueError that is
            # also the AssertionError PettingZoo's wrapper raised
            trace.append("AssertionError" if isinstance(error, AssertionError)
                         else type(error).__name__)
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


def half_blind_trace(env, seed, illegal_at=None):
    """Play a match observing the seat on turn through the wrapped env before every other step
    only (PettingZoo's AEC API does not require an ``observe``/``last()`` before a step;
    ``drive``'s snapshots call ``last()`` after every step, so it never steps blind): legal
    actions, except an illegal one at step ``illegal_at``.  Returns, per step, the mover, its
    action and the reward, cumulative reward, termination and truncation dicts."""
    env.reset(seed=seed)
    raw, rng, trace = env.unwrapped, random.Random(seed), []
    for step in range(2000):
        if not raw.agents:
            break
        agent = raw.agent_selection
        if step % 2 == 0:
            env.observe(agent)
        if raw.terminations[agent] or raw.truncations[agent]:
            action = None
        else:
            mask = raw.observe(agent)["action_mask"]  # the raw env's: the wrappers see nothing
            pool = np.flatnonzero(mask == 0 if step == illegal_at else mask)
            action = int(pool[rng.randrange(len(pool))])
        env.step(action)
        trace.append((agent, action, dict(raw.rewards), dict(raw._cumulative_rewards),
                      dict(raw.terminations), dict(raw.truncations)))
    return trace


@pytest.mark.parametrize("seed, illegal_at", [(0, None), (1, None), (2, 3), (3, 8), (4, 0)])
def test_same_trace_as_pettingzoo_wrappers_when_not_every_step_is_observed(seed, illegal_at):
    """The illegal-move check reads the mask of the seat on turn, never one observed for the
    seat that moved before: a blind legal move is played, a blind illegal one ends the match."""
    env = sevenrocks_v0.env(target=60)
    ours = half_blind_trace(env, seed, illegal_at)
    assert ours == half_blind_trace(pettingzoo_env(target=60), seed, illegal_at)
    if illegal_at is None:  # played to its end (R8), every move taken
        assert env.unwrapped.match.winner is not None
        assert not any(trunc for *_, truncations in ours for trunc in truncations.values())
    else:  # the mover gets -1 and every seat is terminated and truncated (module docs)
        mover, action, rewards, _, terminations, truncations = ours[illegal_at]
        assert action is not None and rewards[mover] == -1
        assert all(terminations.values()) and all(truncations.values())
        assert not any(any(step[4].values()) for step in ours[:illegal_at])


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


# -- an action outside the action space ----------------------------------------------------------

OUTSIDE = [  # (action, error type, words of the message)
    (113, ValueError, "action 113 of player_0 is outside the action space [0, 112]"),
    (-1, ValueError, "action -1 of player_0 is outside the action space"),
    (2 ** 70, ValueError, "action <int of 71 bits> of player_0 is outside"),
    (np.int64(200), ValueError, "action 200 of player_0 is outside"),
    (1e300, TypeError, "must be an int action index in [0, 112], got float 1e+300"),
    (np.float64(4.0), TypeError, "got float64 4.0"),
    ("3", TypeError, "got str '3'"),
    (None, TypeError, "None is the step of a terminated or truncated agent only"),
    ([0], TypeError, "got list [0]"),
    (np.array([0]), TypeError, "got ndarray <ndarray> (shape (1,), dtype int64: pass a Python "
                               "int, e.g. int(a.item()))"),
    (torch.tensor(0), TypeError, "got Tensor <Tensor> (shape (), dtype int64: pass a Python"),
    (np.array(0.0), TypeError, "shape (), dtype float64"),
]


@pytest.mark.parametrize("action, error, words", OUTSIDE)
def test_an_action_outside_the_space_is_a_clear_error_and_changes_nothing(action, error, words):
    """PettingZoo's wrapper raised a bare ``AssertionError: action is not in action space``; ours
    raises a TypeError or ValueError saying what is wrong, that is still an AssertionError."""
    env = sevenrocks_v0.env()
    env.reset(seed=1)
    state = env.unwrapped.match.to_state()
    with pytest.raises(error) as raised:
        env.step(action)
    assert words in str(raised.value) and isinstance(raised.value, AssertionError)
    assert env.unwrapped.match.to_state() == state and not any(env.terminations.values())


def test_an_action_outside_the_space_is_refused_under_python_dash_o_too():
    """Under ``python -O`` PettingZoo's assert vanished: 113 was a numpy IndexError, -1 and [0]
    were played as illegal moves (the match ended), None a 'truth value' ValueError."""
    import subprocess
    import sys

    code = ("import numpy as np; from sevenrocks_env import sevenrocks_v0\n"
            "for action in (113, -1, 2 ** 70, 1e300, np.float64(4.0), '3', None, [0]):\n"
            "    env = sevenrocks_v0.env(); env.reset(seed=1)\n"
            "    try:\n"
            "        env.step(action)\n"
            "    except (TypeError, ValueError) as error:\n"
            "        assert 'player_0' in str(error), error\n"
            "        assert not any(env.terminations.values())\n"
            "    else:\n"
            "        raise SystemExit(f'{action!r} was taken')\n"
            "print('refused')\n")
    proc = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "refused", proc.stderr[-2000:]


def test_any_numpy_int_in_range_is_played_and_none_still_ends_a_dead_agents_turn():
    """A 0-d array and a uint64 (which Discrete.contains refused: it does not cast to int64)
    are played, as the raw env plays them."""
    env = sevenrocks_v0.env(target=30)
    env.reset(seed=0)
    legal = np.flatnonzero(env.observe(env.agent_selection)["action_mask"])
    env.step(np.array(legal[0]))  # a 0-d array, as Discrete.sample gives
    legal = np.flatnonzero(env.observe(env.agent_selection)["action_mask"])
    env.step(np.uint64(legal[0]))
    assert env.unwrapped.match.placements == 2
    env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"] == 0)[0]))
    for _ in env.agent_iter():  # the illegal move ended the match: each seat steps None
        env.step(None)
    assert not env.agents


# -- the parallel env --------------------------------------------------------------------------------

def test_the_parallel_env_before_reset_says_to_reset():
    """It was ``AttributeError: 'TurnBasedParallel' object has no attribute 'agents'``."""
    env = sevenrocks_v0.parallel_env()
    for actions in ({}, {"player_0": 4}):
        with pytest.raises(RuntimeError, match=r"reset\(\) needs to be called before step"):
            env.step(actions)
    with pytest.raises(AttributeError, match="agents cannot be accessed before reset"):
        env.agents
    env.reset(seed=6)
    assert env.agents == env.possible_agents


def test_the_parallel_env_refuses_none_for_the_seat_on_turn_by_name():
    env = sevenrocks_v0.parallel_env()
    env.reset(seed=6)
    mover = env.aec_env.agent_selection
    with pytest.raises(TypeError, match=f"action of {mover} must be an int action index"):
        env.step(dict.fromkeys(env.agents))
    assert env.unwrapped.match.placements == 0


def test_observing_another_seat_after_the_mover_does_not_change_what_the_mover_may_play():
    """The illegal-move wrapper judges a step by the mask the *mover* last saw: observing
    another seat in between (a logger, a spectator's view) must not make a legal move of the
    mover's look illegal and end the match."""
    env = sevenrocks_v0.env()
    for seed in range(5):
        env.reset(seed=seed)
        for _ in range(12):
            mover = env.agent_selection
            mask = env.last()[0]["action_mask"]
            others = [agent for agent in env.agents if agent != mover]
            seen = [env.observe(agent)["action_mask"] for agent in others]
            action = int(np.flatnonzero(mask)[-1])
            assert not any(other[action] for other in seen)  # illegal for the seat seen last
            env.step(action)
            assert not any(env.terminations.values()), (seed, mover, action)
