"""Ray RLlib (new API stack), the multi-agent env's refusals: masked-out, out-of-range and
non-index actions, a wrong ``env_config``, ``step`` after the episode ended or with anything but
a dict of the mover's action, and ``reset``'s options (a given match, checked as the AEC env
checks it).  Rewards, episodes and seeding: ``test_rllib.py``.  Needs the [rllib] extra (its own
venv, see docs/adapters.md); skipped where Ray is not installed."""

import numpy as np
import pytest

pytest.importorskip("ray.rllib", reason="needs the [rllib] extra (.venv-rllib)")

from sevenrocks_env.observation import view  # noqa: E402
from sevenrocks_env.rules import legal_actions  # noqa: E402

import test_rllib  # noqa: E402
from test_rllib import HistoryRecorder, play  # noqa: E402

rllib_ppo = test_rllib.rllib_ppo  # test_rllib's module fixture, shared rather than copied


def test_env_rejects_a_masked_out_action_in_raise_mode(rllib_ppo):
    env = rllib_ppo.SevenRocksMultiAgentEnv({"illegal_action": "raise"})
    obs, _ = env.reset(seed=0)
    (agent, o), = obs.items()
    bad = int(np.flatnonzero(o["action_mask"] == 0)[0])
    with pytest.raises(ValueError, match="illegal action"):
        env.step({agent: bad})
    assert env.illegal_actions == 1


def test_an_action_past_int64_is_refused_by_name_not_by_gymnasiums_overflow(rllib_ppo):
    """Under Ray's gymnasium (1.2.2, this venv) ``Discrete.contains(2**63)`` raised
    ``OverflowError: Python int too large to convert to C long`` in both adapters."""
    from sevenrocks_env.single_agent import SingleAgentEnv

    env = rllib_ppo.SevenRocksMultiAgentEnv({"opponent": "random"})
    obs, _ = env.reset(seed=0)
    with pytest.raises(ValueError, match="action 9223372036854775808 of player_.* outside the "
                                         "action space"):  # as sevenrocks_v0.env() says it
        env.step({next(iter(obs)): 2 ** 63})
    single = SingleAgentEnv(opponents="random")
    single.reset(seed=0)
    with pytest.raises(ValueError, match="action 9223372036854775808 of seat .* outside the "
                                         "action space"):  # the same words; its seat by number
        single.step(2 ** 63)


@pytest.mark.parametrize("opponent", ["self", "random"])
def test_a_masked_out_action_ends_the_match_by_default(rllib_ppo, opponent):
    """As TerminateIllegalWrapper: the mover gets exactly -1, every seat in the episode ends."""
    env = rllib_ppo.SevenRocksMultiAgentEnv({"opponent": opponent})
    rng = np.random.default_rng(1)
    obs, _ = env.reset(seed=1)
    seen = set(obs)
    for _ in range(5):  # a few legal moves first, so more than one seat is in the episode
        (agent, o), = obs.items()
        obs, *_ = env.step({agent: int(rng.choice(np.flatnonzero(o["action_mask"])))})
        seen |= set(obs)
    (agent, o), = obs.items()
    state = env._aec.match.to_state()
    bad = np.int64(np.flatnonzero(o["action_mask"] == 0)[0])
    obs, rewards, terminateds, truncateds, infos = env.step({agent: bad})
    assert rewards[agent] == -1.0 and infos[agent] == {"illegal_action": True}
    assert terminateds["__all__"] and not truncateds["__all__"]
    # every seat already in the episode ends with it, not the mover alone
    assert len(seen) > 1 and agent in seen
    assert set(obs) == set(rewards) == set(terminateds) - {"__all__"} == seen
    assert env._aec.match.to_state() == state and env.illegal_actions == 1
    assert not any(o["action_mask"].any() for o in obs.values())  # no action at an end
    assert not any(view(o["observations"], "turn").any() for o in obs.values())  # no seat to move
    (agent, _), = env.reset(seed=1)[0].items()
    with pytest.raises(ValueError, match="outside the action space"):  # a bug: always raised
        env.step({agent: 113})


def test_a_legal_action_as_a_0d_array_is_played(rllib_ppo):
    """gymnasium's Discrete contains np.array(k): it is that move, not an illegal one."""
    env = rllib_ppo.SevenRocksMultiAgentEnv({})
    obs, _ = env.reset(seed=2)
    (agent, o), = obs.items()
    legal = int(np.flatnonzero(o["action_mask"])[0])
    _, rewards, terminateds, _, infos = env.step({agent: np.array(legal)})
    assert not terminateds["__all__"] and env.illegal_actions == 0
    assert all(not info.get("illegal_action") for info in infos.values())


@pytest.mark.parametrize("config, words", [
    ({"opponents": "heuristic"}, "unknown env_config key.*'opponents'"),  # the Gymnasium spelling
    ({"skip_forced": "no"}, "skip_forced must be True or False, got str 'no'"),
    ({"skip_forced": 1}, "skip_forced must be True or False, got int 1"),
    ({"seed": -1}, "seed must be a non-negative int"),
    ({"seed": True}, "seed must be a non-negative int"),
])
def test_a_wrong_env_config_is_refused_in_words(rllib_ppo, config, words):
    """A typo or a wrong type in env_config was silently another set-up (four-seat self-play
    for "opponents"; "no" read as true) or an error from inside NumPy."""
    with pytest.raises((ValueError, TypeError), match=words):
        rllib_ppo.SevenRocksMultiAgentEnv(config)
    env = rllib_ppo.SevenRocksMultiAgentEnv({})
    with pytest.raises((ValueError, TypeError), match="seed must be a non-negative int"):
        env.reset(seed=-3)


def test_skip_forced_takes_a_numpy_bool_as_the_gymnasium_view_does(rllib_ppo):
    """np.bool_(True) was refused as "must be True or False, got True"."""
    for value in (np.bool_(True), np.bool_(False)):
        env = rllib_ppo.SevenRocksMultiAgentEnv({"skip_forced": value})
        assert env.skip_forced is bool(value)


@pytest.mark.parametrize("ending", ["played out", "illegal action"])
def test_step_after_the_episode_ended_is_refused(rllib_ppo, ending):
    """A step after the end booked a phantom illegal move (-1, illegal_actions + 1), or after
    an illegal-move termination went on playing the match."""
    env = rllib_ppo.SevenRocksMultiAgentEnv({"target": 30})
    with pytest.raises(RuntimeError, match="call reset"):
        env.step({"player_0": 0})
    rng = np.random.default_rng(4)
    obs, _ = env.reset(seed=4)
    while True:
        (agent, o), = obs.items()
        legal = np.flatnonzero(o["action_mask"])
        action = int(np.flatnonzero(o["action_mask"] == 0)[0]) if ending == "illegal action" \
            else int(rng.choice(legal))
        obs, _, terminateds, truncateds, _ = env.step({agent: action})
        if terminateds["__all__"] or truncateds["__all__"]:
            break
    state, count = env._aec.match.to_state(), env.illegal_actions
    with pytest.raises(RuntimeError, match="the episode is over: call reset"):
        env.step({f"player_{env._aec.match.turn}": 0})
    assert env._aec.match.to_state() == state and env.illegal_actions == count
    env.reset(seed=5)  # and a reset starts the next one


# -- hostile inputs: env_config, step's argument, bools as actions, reset's options ---------------

@pytest.mark.parametrize("config", ["opponent=heuristic", [("opponent", "heuristic")], 5])
def test_an_env_config_that_is_not_a_dict_is_a_type_error(rllib_ppo, config):
    """A list of pairs was read as a dict; a string or an int failed inside ``dict()``."""
    with pytest.raises(TypeError, match=f"env_config must be a dict or None, got "
                                        f"{type(config).__name__}"):
        rllib_ppo.SevenRocksMultiAgentEnv(config)


def test_step_takes_a_dict_of_agent_actions_only(rllib_ppo):
    """A list was an ``AttributeError: 'list' object has no attribute 'get'``."""
    env = rllib_ppo.SevenRocksMultiAgentEnv({})
    obs, _ = env.reset(seed=0)
    state = env._aec.match.to_state()
    legal = int(np.flatnonzero(next(iter(obs.values()))["action_mask"])[0])
    with pytest.raises(TypeError, match="step takes a dict of agent id -> action, got list"):
        env.step([legal])
    assert env._aec.match.to_state() == state
    # an action for a seat not on turn, or an unknown id, beside the seat's own: a routing bug
    agent = next(iter(obs))
    other = next(a for a in env.possible_agents if a != agent)
    for extra in (other, "bogus", 7):
        with pytest.raises(ValueError, match=rf"actions for '?{extra}'?: only {agent}, the seat "
                                             "to move, acts"):
            env.step({agent: legal, extra: legal})
        assert env._aec.match.to_state() == state
    env.step({agent: legal})


@pytest.mark.parametrize("mode", ["terminate", "raise"])
@pytest.mark.parametrize("action", [True, False, np.True_, 1.0])
def test_a_non_index_action_is_refused_as_the_aec_env_refuses_it(rllib_ppo, mode, action):
    """A bool was taken as an illegal move (counted, a ``ValueError``); ``env()`` refuses it as
    not an action index: the same ``ActionNotAnIndex`` (a ``TypeError``), nothing counted."""
    from sevenrocks_env import sevenrocks_v0
    from sevenrocks_env.wrappers import ActionNotAnIndex

    aec = sevenrocks_v0.env()
    aec.reset(seed=0)
    with pytest.raises(ActionNotAnIndex):
        aec.step(action)
    env = rllib_ppo.SevenRocksMultiAgentEnv({"illegal_action": mode})
    obs, _ = env.reset(seed=0)
    (agent, o), = obs.items()
    state = env._aec.match.to_state()
    with pytest.raises(ActionNotAnIndex, match=f"action of {agent} must be an int action index"):
        env.step({agent: action})
    assert env._aec.match.to_state() == state and env.illegal_actions == 0
    env.step({agent: int(np.flatnonzero(o["action_mask"])[0])})  # the episode goes on


@pytest.mark.parametrize("opponent", ["self", "random"])
def test_reset_starts_from_a_given_match_as_the_aec_env_does(rllib_ppo, opponent):
    """``reset(options={"match": m})`` was ignored: a fresh deal, silently."""
    from sevenrocks_env.rules import Match, apply_action

    start = Match.new(11, target=250, max_rounds=100)
    for _ in range(3):
        apply_action(start, legal_actions(start)[0])
    state = start.to_state()
    env = rllib_ppo.SevenRocksMultiAgentEnv({"opponent": opponent, "skip_forced": False})
    obs, _ = env.reset(seed=0, options={"match": start})
    played = env._aec.match
    assert played is not start and start.to_state() == state  # a copy, the caller's untouched
    assert played.seed == start.seed and played.history[0].hands == start.history[0].hands
    if opponent == "self":  # every seat learns: the first observation is the start's mover's
        assert played.to_state() == state and list(obs) == [f"player_{start.turn}"]
    play(env, np.random.default_rng(0), seed=0, options={"match": start})  # and on to the end
    assert env._aec.match.over and start.to_state() == state


def test_reset_options_are_checked_as_the_aec_env_checks_them(rllib_ppo):
    from sevenrocks_env.rules import Match

    env = rllib_ppo.SevenRocksMultiAgentEnv({})
    with pytest.raises(ValueError, match="unknown reset option.*'matc'"):
        env.reset(options={"matc": Match.new(1)})
    with pytest.raises(TypeError, match="options must be a dict or None, got list"):
        env.reset(options=[("match", Match.new(1))])
    with pytest.raises(ValueError, match="this env plays to 250"):
        env.reset(options={"match": Match.new(1, target=100)})
    with pytest.raises(RuntimeError, match="call reset"):  # nothing started
        env.step({"player_0": 0})
    reader = rllib_ppo.SevenRocksMultiAgentEnv({"opponent": "random"})
    reader._opponent = HistoryRecorder(reader)
    with pytest.raises(ValueError, match="keeps no history"):  # the opponent reads the round
        reader.reset(options={"match": Match.new(1, keep_history=False)})
