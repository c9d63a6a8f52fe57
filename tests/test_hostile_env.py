"""Env edges (hostile or careless callers) get clear errors, in PettingZoo's words where it has
them: unknown agents, use before reset, use after every agent left, odd action types, bad seeds."""

import copy
import pickle

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.record import MAX_ROUNDS, MAX_TARGET, validate
from sevenrocks_env.rules import legal_actions
from sevenrocks_env.single_agent import SingleAgentEnv

MAX_MESSAGE = 4000


def finished(env):
    """Play ``env`` (raw or wrapped) to the end and step every agent out."""
    env.reset(seed=1)
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else int(np.flatnonzero(obs["action_mask"])[0]))
    assert env.agents == []
    return env


@pytest.mark.parametrize("agent", ["player_4", "player_-1", "", "PLAYER_0", 0, None, ("player_0",),
                                   ["player_0"], b"player_0"])
def test_observe_an_unknown_agent(agent):
    env = sevenrocks_v0.raw_env()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="unknown agent") as info:
        env.observe(agent)
    assert "player_0" in str(info.value) and len(str(info.value)) < MAX_MESSAGE
    for space in (env.observation_space, env.action_space):  # a list: not a TypeError
        with pytest.raises(ValueError, match="unknown agent"):
            space(agent)


def test_raw_env_before_reset_says_so_in_pettingzoo_words():
    env = sevenrocks_v0.raw_env()
    with pytest.raises(RuntimeError, match=r"reset\(\) needs to be called before step"):
        env.step(0)
    with pytest.raises(RuntimeError, match=r"reset\(\) needs to be called before observe"):
        env.observe("player_0")
    with pytest.raises(RuntimeError, match=r"reset\(\) needs to be called before last"):
        env.last()
    with pytest.raises(ValueError, match="unknown agent"):  # a bad name is named first
        env.observe("player_4")
    with pytest.raises(RuntimeError, match="reset"):
        env.game_record()


def test_raw_env_after_every_agent_left():
    env = finished(sevenrocks_v0.raw_env(target=60))
    with pytest.raises(RuntimeError, match="all agents are terminated or truncated"):
        env.step(None)
    with pytest.raises(RuntimeError, match="all agents are terminated or truncated"):
        env.last()
    env.observe("player_0")  # the final position stays observable (replays, renders)
    env.reset(seed=2)  # and reset starts over
    assert env.agents == env.possible_agents


def test_wrapped_env_after_every_agent_left_warns_as_pettingzoo_does():
    """``env()`` keeps PettingZoo's OrderEnforcingWrapper behaviour: a warning, no step."""
    from unittest import mock

    from pettingzoo.utils.env_logger import EnvLogger
    env = finished(sevenrocks_v0.env(target=60))
    before = env.unwrapped.match.to_state()
    with mock.patch.object(EnvLogger, "warn_step_after_terminated_truncated") as warned:
        env.step(None)  # PettingZoo's wrapper only warns (EnvLogger) here
    assert warned.call_count == 1
    assert env.agents == [] and env.unwrapped.match.to_state() == before


@pytest.mark.parametrize("make", [np.array, lambda a: np.array(a, dtype=np.int8),
                                  lambda a: np.array(a, dtype=np.uint64), np.int64, np.int32])
def test_a_0d_integer_array_or_numpy_int_is_that_action(make):
    """gymnasium's Discrete counts 0-d integer arrays as members, so the env accepts them."""
    env = sevenrocks_v0.raw_env()
    env.reset(seed=0)
    reference = sevenrocks_v0.raw_env()
    reference.reset(seed=0)
    action = legal_actions(env.match)[0]
    env.step(make(action))
    reference.step(action)
    assert env.match.to_state() == reference.match.to_state()


@pytest.mark.parametrize("action", [np.array([0]), np.array([[0]]), np.array(0.0), np.array(True),
                                    np.float64(0), np.array("0"), np.array(None), 1e300,
                                    float("nan"), 2**70, -2**70, object(), [0], {"a": 0}])
def test_other_action_types_are_illegal_actions_with_a_clear_message(action):
    env = sevenrocks_v0.raw_env()
    env.reset(seed=0)
    state = env.match.to_state()
    with pytest.raises(ValueError, match="illegal action") as info:
        env.step(action)
    assert "legal actions" in str(info.value) and len(str(info.value)) < MAX_MESSAGE
    assert env.match.to_state() == state


@pytest.mark.parametrize("seed, error", [(True, TypeError), (False, TypeError), (np.bool_(True), TypeError),
                                         (1.0, TypeError), ("1", TypeError), (b"1", TypeError),
                                         ([1], TypeError), (-1, ValueError), (np.int64(-5), ValueError)])
def test_bad_seeds(seed, error):
    env = sevenrocks_v0.raw_env()
    with pytest.raises(error, match="seed must be a non-negative int or None"):
        env.reset(seed=seed)


@settings(max_examples=50, deadline=None)
@given(st.one_of(st.integers(-2**80, -1), st.floats(), st.text(max_size=5), st.booleans(),
                 st.lists(st.integers(), max_size=3)))
def test_any_bad_seed_is_a_clear_type_or_value_error(seed):
    for env in (sevenrocks_v0.raw_env(), sevenrocks_v0.env()):
        with pytest.raises((TypeError, ValueError), match="seed") as info:
            env.reset(seed=seed)
        assert len(str(info.value)) < MAX_MESSAGE


def test_huge_seeds_are_fine():
    env = sevenrocks_v0.raw_env()
    env.reset(seed=2**200)
    assert env.agents


@pytest.mark.parametrize("kwargs", [{"target": True}, {"target": 2.5}, {"target": MAX_TARGET + 1},
                                    {"max_rounds": MAX_ROUNDS + 1}, {"max_rounds": "5"},
                                    {"target": -1}])
def test_bad_settings_are_bounded(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        sevenrocks_v0.raw_env(**kwargs)
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        SingleAgentEnv(opponents="random", **kwargs)
    with pytest.raises((TypeError, ValueError), match=next(iter(kwargs))):  # TypeError: not an int
        sevenrocks_v0.vector_env(num_envs=2, **kwargs)


@pytest.mark.parametrize("target, max_rounds", [(MAX_TARGET, 2), (60, MAX_ROUNDS)])
def test_the_largest_settings_play_matches_whose_records_load_back(target, max_rounds):
    """The env's bounds are the record's: a match at the largest target or round cap saves."""
    record = finished(sevenrocks_v0.raw_env(target=target, max_rounds=max_rounds)).game_record()
    validate(record)
    assert record["target"] == target
    venv = sevenrocks_v0.vector_env(num_envs=2, target=target, max_rounds=max_rounds,
                                    records=True)
    venv.reset(seed=1)
    while not (records := venv.pop_finished_records()):
        mask = venv.action_mask
        venv.step(torch.multinomial(mask.float(), 1).squeeze(1))
    for _, record in records:
        validate(record)
        assert record["target"] == target


@pytest.mark.parametrize("mode", ["terminate", "raise"])
@pytest.mark.parametrize("action", [True, False, np.True_])
def test_a_bool_is_never_a_single_agent_action(mode, action):
    """``Discrete.contains(True)`` is true, but a bool is not an action: a ``ValueError`` in
    both modes (as for any non-int: ``ActionNotAnIndex``, as ``env()`` raises), not an illegal
    move that ends the episode."""
    from sevenrocks_env.wrappers import ActionNotAnIndex
    env = SingleAgentEnv(opponents="random", illegal_action=mode)
    env.reset(seed=0)
    before = env.match.to_state()
    with pytest.raises(ActionNotAnIndex, match=r"\(a bool\)"):
        env.step(action)
    assert env.match.to_state() == before
    env.step(int(np.flatnonzero(env.action_masks())[0]))  # the episode goes on


def test_single_agent_settings_and_order_errors_say_what_is_wrong():
    with pytest.raises(ValueError, match="skip_forced"):
        SingleAgentEnv(opponents="random", skip_forced="no")
    with pytest.raises(RuntimeError, match="call reset"):
        SingleAgentEnv(opponents="random").step(0)  # not "the match is over"
    with pytest.raises(RuntimeError, match="call reset"):
        sevenrocks_v0.vector_env(num_envs=2).match(0)


# -- options={"match": m}: a match edited by hand plays on, but its history gives no record ------

def _played(seed: int, moves: int = 3):
    import random

    from sevenrocks_env.rules import Match, apply_action

    match, rng = Match.new(seed), random.Random(seed)
    for _ in range(moves):
        apply_action(match, rng.choice(legal_actions(match)))
    return match, rng


def _puzzle():
    """Three moves in, seats 1 and 3 swap one unplayed tile: a legitimate position to play
    from, but the round's log says they were dealt the other tiles."""
    match, rng = _played(4)
    a, b = match.hands[1] & -match.hands[1], match.hands[3] & -match.hands[3]
    match.hands[1] ^= a | b
    match.hands[3] ^= a | b
    return match, rng


def _to_the_end(env, rng):
    for _ in env.agent_iter():
        _, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else rng.choice(legal_actions(env.unwrapped.match)))


def test_an_edited_match_plays_on_but_hands_out_no_record_that_would_not_replay():
    """The AEC env kept the edited match's history, and ``game_record()`` then returned a
    record that ``record.validate`` refused ("illegal action"): silently wrong data.  The
    history is still kept (the board and the round's plays read it); the record is refused."""
    match, rng = _puzzle()
    env = sevenrocks_v0.raw_env(render_mode="ansi")
    env.reset(options={"match": match})
    assert env.unwrapped.match.to_state() == dict(match.to_state(), max_rounds=100)
    assert len(env.unwrapped.match.history) == len(match.history)
    assert "not known" not in env.render()  # the board drawn from the round's plays
    _to_the_end(env, rng)
    with pytest.raises(ValueError, match="no game record: it started from a match given to "
                                         "reset.*whose history does not replay to it"):
        env.unwrapped.game_record()
    for copied in (copy.deepcopy(env), pickle.loads(pickle.dumps(env))):  # (a copy forgot)
        with pytest.raises(ValueError, match="no game record: it started"):
            copied.unwrapped.game_record()
    env.reset(seed=3)  # a new match has its record again
    validate(env.unwrapped.game_record())
    # a match played from its deal keeps its history, and its record replays
    for env in (sevenrocks_v0.raw_env(), SingleAgentEnv(opponents="random")):
        match, rng = _played(8, moves=9)
        env.reset(options={"match": match})
        aec = getattr(env, "aec_env", env)
        assert len(aec.match.history) == len(match.history)
        if env is aec:
            _to_the_end(env, rng)
        validate(aec.game_record())



def test_an_edited_match_has_no_record_even_before_it_plays_on():
    """The edited hands of :func:`_puzzle` are caught by comparing the replayed state with the
    match's own, not by a later move the log cannot replay: right after the reset, every
    logged move still replays (R1: the same tiles were played), only the hands differ."""
    from sevenrocks_env.match_state import replays_to_its_state
    match, _ = _puzzle()
    assert not replays_to_its_state(match)
    env = sevenrocks_v0.raw_env()
    env.reset(options={"match": match})
    with pytest.raises(ValueError, match="no game record: it started from a match given to "
                                         "reset.*whose history does not replay to it"):
        env.unwrapped.game_record()

@pytest.mark.parametrize("edit, words", [
    ("scores", "no game record: it started"),       # the log starts at 0-0, not at 40-15
    ("history_junk", "keeps no history"),           # clone() raised TypeError on history 5
    ("history_empty", "no game record: it started"),
])
def test_a_match_whose_log_does_not_lead_to_it_plays_without_a_record(edit, words):
    match, rng = _played(6, moves=5)
    if edit == "scores":
        match.scores = [40, 15]
    elif edit == "history_junk":
        match.history = 5
    else:
        match.history = []
    for env in (sevenrocks_v0.raw_env(), SingleAgentEnv(opponents="random", seat=match.turn)):
        env.reset(options={"match": match})
        aec = getattr(env, "aec_env", env)
        assert aec.match.to_state()["hands"] == match.hands
        with pytest.raises(ValueError, match=words):
            aec.game_record()
