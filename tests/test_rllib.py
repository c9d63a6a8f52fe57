"""Ray RLlib (new API stack): the multi-agent env's rewards and masks, and one PPO iteration on a
local Ray instance with the masked shared policy (``test_rllib_example.py``).  Needs the
[rllib] extra (its own venv, see docs/adapters.md: Ray pins a gymnasium of its own); skipped
where Ray is not installed."""

import logging

import numpy as np
import pytest

pytest.importorskip("ray.rllib", reason="needs the [rllib] extra (.venv-rllib)")

from sevenrocks_env.rules import legal_actions  # noqa: E402

from rllib_example import Context, first_hands, load_example  # noqa: E402


@pytest.fixture(scope="module")
def rllib_ppo():
    return load_example()


def play(env, rng, seed, options=None):
    """Random legal play through the MultiAgentEnv API; per-agent reward sums and checks."""
    obs, _ = env.reset(seed=seed, options=options)
    totals, finals = {}, None
    while True:
        assert len(obs) == 1  # turn-based: only the seat to move gets an observation
        (agent, o), = obs.items()
        assert agent == f"player_{env._aec.match.turn}"
        legal = np.flatnonzero(o["action_mask"])
        assert legal.tolist() == legal_actions(env._aec.match)
        obs, rewards, terminateds, truncateds, _ = env.step({agent: int(rng.choice(legal))})
        for a, r in rewards.items():
            totals[a] = totals.get(a, 0.0) + r
        if terminateds["__all__"] or truncateds["__all__"]:
            finals = obs
            return totals, finals, terminateds


@pytest.mark.parametrize("opponent", ["self", "random"])
def test_every_learner_seat_gets_its_final_reward(rllib_ppo, opponent):
    env = rllib_ppo.SevenRocksMultiAgentEnv({"opponent": opponent, "target": 100})
    rng = np.random.default_rng(0)
    for seed in range(4):
        totals, finals, terminateds = play(env, rng, seed)
        winner = env._aec.match.winner
        learners = [f"player_{s}" for s in env._learners]
        assert winner in (0, 1) and set(terminateds) == set(learners) | {"__all__"}
        # every learner seat gets a final observation and its team's +-1, whoever moved last
        assert set(finals) == set(learners)
        for agent, final in finals.items():  # each seat its own (not one seat's for all)
            assert np.array_equal(final["observations"], env._aec.observe(agent)["observation"])
        assert totals == {a: (1.0 if int(a[-1]) % 2 == winner else -1.0) for a in learners}
        if opponent == "random":
            assert len(learners) == 2 and int(learners[0][-1]) % 2 == int(learners[1][-1]) % 2


def test_points_scored_before_a_seat_first_decides_are_not_lost(rllib_ppo):
    """reward="points": each learner seat's episode sum is its team's final margin / 100, also
    when opponents score before the learner's first decision (reset used to drop that)."""
    env = rllib_ppo.SevenRocksMultiAgentEnv({"opponent": "heuristic", "reward": "points"})
    rng = np.random.default_rng(1)
    for seed in range(40):
        totals, _, _ = play(env, rng, seed)
        scores = env._aec.match.scores
        for agent, total in totals.items():
            team = int(agent[-1]) % 2
            assert total == pytest.approx((scores[team] - scores[1 - team]) / 100), (seed, agent)


def test_rllib_s_episodes_keep_every_reward_the_env_delivers(rllib_ppo):
    """A reward that came with a seat's first observation (points scored before it decides) is
    filed by RLlib's MultiAgentEpisode before every transition and lost to the seat's return:
    the env holds it until after the seat's first action, so each RLlib return is the team's
    margin / 100."""
    from ray.rllib.env.multi_agent_episode import MultiAgentEpisode

    rng = np.random.default_rng(1)
    for seed in range(100, 112):
        env = rllib_ppo.SevenRocksMultiAgentEnv({"opponent": "heuristic", "reward": "points",
                                                 "seed": seed})
        episode = MultiAgentEpisode(observation_space=env.observation_spaces,
                                    action_space=env.action_spaces)
        obs, infos = env.reset()
        episode.add_env_reset(observations=obs, infos=infos)
        while True:
            (agent, o), = obs.items()
            action = int(rng.choice(np.flatnonzero(o["action_mask"])))
            obs, rewards, terminateds, truncateds, infos = env.step({agent: action})
            episode.add_env_step(observations=obs, actions={agent: action}, rewards=rewards,
                                 infos=infos, terminateds=terminateds, truncateds=truncateds)
            if terminateds["__all__"] or truncateds["__all__"]:
                break
        scores = env._aec.match.scores
        for agent, single in episode.agent_episodes.items():
            team = int(agent[-1]) % 2
            assert float(single.get_return()) == pytest.approx(
                (scores[team] - scores[1 - team]) / 100), (seed, agent)


def test_reset_always_hands_a_learner_seat_an_observation(rllib_ppo):
    """A tiny target can end a match before a learner moves: reset deals another."""
    env = rllib_ppo.SevenRocksMultiAgentEnv({"opponent": "heuristic", "target": 5})
    for seed in range(30):
        obs, _ = env.reset(seed=seed)
        assert len(obs) == 1 and not env._aec.match.over


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
    with pytest.raises(ValueError, match="action 9223372036854775808 of player_.* outside the "
                                         "action space"):  # the same words in all three views
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
    (agent, _), = env.reset(seed=1)[0].items()
    with pytest.raises(ValueError, match="outside the action space"):  # a bug: always raised
        env.step({agent: 113})


def test_rllib_env_pre_check_passes_without_warnings(rllib_ppo, caplog):
    """RLlib's own check (what every env runner runs on the example's env), on fresh envs."""
    from ray.rllib.utils.pre_checks.env import check_multiagent_environments

    for config in ({}, {"opponent": "heuristic"}, {"reward": "shaped", "target": 60}):
        for seed in range(3):
            env = rllib_ppo.SevenRocksMultiAgentEnv({**config, "seed": seed})
            with caplog.at_level(logging.WARNING):
                check_multiagent_environments(env)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_sub_envs_seeded_by_rllib_deal_different_matches(rllib_ppo):
    """RLlib seeds sub-env i of runner w with seed + w + i: runner 1's env 1 and runner 2's env 0
    get the same seed, yet must not play the same deals; unseeded envs draw fresh entropy."""
    one = rllib_ppo.SevenRocksMultiAgentEnv(Context(1, seed=1))
    two = rllib_ppo.SevenRocksMultiAgentEnv(Context(2, seed=1))
    assert first_hands(one, 1 + 1 + 1) != first_hands(two, 1 + 2 + 0)
    again = rllib_ppo.SevenRocksMultiAgentEnv(Context(1, seed=1))
    assert first_hands(again, 3) == first_hands(one, 3)  # still reproducible
    # two sub-envs of one runner that RLlib reseeds alike (its old stack's vector index)
    first, second = (rllib_ppo.SevenRocksMultiAgentEnv(Context(1, v, seed=1)) for v in (0, 1))
    assert first_hands(first, 5) != first_hands(second, 5)
    unseeded = [rllib_ppo.SevenRocksMultiAgentEnv(Context(1)) for _ in range(2)]
    assert first_hands(unseeded[0], None) != first_hands(unseeded[1], None)


def test_a_legal_action_as_a_0d_array_is_played(rllib_ppo):
    """gymnasium's Discrete contains np.array(k): it is that move, not an illegal one."""
    env = rllib_ppo.SevenRocksMultiAgentEnv({})
    obs, _ = env.reset(seed=2)
    (agent, o), = obs.items()
    legal = int(np.flatnonzero(o["action_mask"])[0])
    _, rewards, terminateds, _, infos = env.step({agent: np.array(legal)})
    assert not terminateds["__all__"] and env.illegal_actions == 0
    assert all(not info.get("illegal_action") for info in infos.values())


class HistoryRecorder:
    """A fake opponent that reads the round's plays: plays its first legal action and checks
    each ``history`` against the env's own match."""

    name, needs_history = "history-recorder", True

    def __init__(self, env):
        self.env, self.calls = env, 0

    def seed(self, seed):
        pass

    def act(self, observation, action_mask, history=None):
        from sevenrocks_env.public_round import public_round

        assert history == public_round(self.env._aec.match)
        self.calls += 1
        return int(np.flatnonzero(action_mask)[0])


def test_an_opponent_that_reads_the_round_gets_its_plays(rllib_ppo):
    env = rllib_ppo.SevenRocksMultiAgentEnv({"opponent": "random", "target": 100})
    recorder = env._opponent = HistoryRecorder(env)
    totals, _, _ = play(env, np.random.default_rng(1), seed=3)
    assert recorder.calls > 20 and totals
    # the real one: the search with inference refuses to play without the round's plays
    env = rllib_ppo.SevenRocksMultiAgentEnv(
        {"opponent": "search:policy=shipped,samples=2,inference=0.5", "target": 30})
    totals, _, terminateds = play(env, np.random.default_rng(2), seed=4)
    assert terminateds["__all__"] and env._aec.match.winner in (0, 1)


@pytest.mark.parametrize("config, words", [
    ({"opponents": "heuristic"}, "unknown env_config key.*'opponents'"),  # the Gymnasium spelling
    ({"skip_forced": "no"}, "skip_forced must be True or False"),
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


def test_rewards_go_only_to_seats_that_have_had_an_observation(rllib_ppo):
    """Points scored while a learner seat is not yet in the episode (its first moves were forced,
    played inside the env) wait for its first observation: RLlib takes no reward for an agent
    before it has been observed."""
    env = rllib_ppo.SevenRocksMultiAgentEnv({"opponent": "heuristic", "reward": "points",
                                             "target": 30})
    rng = np.random.default_rng(5)
    waited = 0
    for seed in range(40):
        obs, _ = env.reset(seed=seed)
        seen = set(obs)
        while True:
            (agent, o), = obs.items()
            obs, rewards, terminateds, truncateds, _ = env.step(
                {agent: int(rng.choice(np.flatnonzero(o["action_mask"])))})
            assert set(rewards) <= seen | set(obs), (seed, rewards, seen)
            seen |= set(obs)
            # (a learner seat whose first moves were forced is not in the episode yet)
            waited += any(env._pending[s] for s in env._learners if f"player_{s}" not in seen)
            if terminateds["__all__"] or truncateds["__all__"]:
                break
    assert waited > 0  # the case happened: points were held for a seat not yet seen


def test_a_max_rounds_cut_off_is_a_truncation(rllib_ppo):
    """A match stopped by max_rounds has no winner: truncated for every seat, not terminated."""
    env = rllib_ppo.SevenRocksMultiAgentEnv({"max_rounds": 1})
    rng = np.random.default_rng(0)
    for seed in range(2):
        obs, _ = env.reset(seed=seed)
        total = 0.0
        while True:
            (agent, o), = obs.items()
            obs, rewards, terminateds, truncateds, _ = env.step(
                {agent: int(rng.choice(np.flatnonzero(o["action_mask"])))})
            total += sum(rewards.values())
            if terminateds["__all__"] or truncateds["__all__"]:
                break
        assert env._aec.match.winner is None and env._aec.match.truncated
        assert terminateds == {"__all__": False}
        assert truncateds == {**{agent: True for agent in obs}, "__all__": True} and obs
        assert total == 0.0  # no winner, no +-1


def test_the_learner_side_is_drawn_per_match(rllib_ppo):
    """Against an opponent the learner partnership is drawn at each reset: it plays both sides."""
    env = rllib_ppo.SevenRocksMultiAgentEnv({"opponent": "heuristic", "seed": 0})
    teams = set()
    for _ in range(20):
        obs, _ = env.reset()
        (agent, _), = obs.items()
        teams.add(int(agent[-1]) % 2)
    assert teams == {0, 1}


def test_shaped_rewards_use_the_configured_weights(rllib_ppo):
    env = rllib_ppo.SevenRocksMultiAgentEnv({"reward": "shaped", "points_scale": 0.5,
                                             "win_reward": 3.0, "target": 60})
    rng = np.random.default_rng(2)
    for seed in range(2):
        totals, _, _ = play(env, rng, seed)
        match = env._aec.match
        for agent, total in totals.items():
            team = int(agent[-1]) % 2
            margin = match.scores[team] - match.scores[1 - team]
            assert total == pytest.approx(0.5 * margin + (3.0 if match.winner == team else -3.0))


def test_a_seeded_env_replays_the_same_episodes_opponent_moves_included(rllib_ppo):
    """The opponent is seeded from the env's stream: a seeded run is reproducible."""
    def trace():
        env = rllib_ppo.SevenRocksMultiAgentEnv({"opponent": "random", "seed": 4, "target": 60})
        seen = []
        for _ in range(2):
            obs, _ = env.reset()
            while True:
                (agent, o), = obs.items()
                seen.append(o["observations"].tobytes())
                obs, _, terminateds, truncateds, _ = env.step(
                    {agent: int(np.flatnonzero(o["action_mask"])[0])})
                if terminateds["__all__"] or truncateds["__all__"]:
                    break
            seen.append(str(env._aec.match.scores))
        return seen

    assert trace() == trace()


@pytest.mark.parametrize("skip_forced", [True, False])
def test_skip_forced_false_asks_the_learner_about_forced_moves(rllib_ppo, skip_forced):
    env = rllib_ppo.SevenRocksMultiAgentEnv({"skip_forced": skip_forced, "target": 100})
    rng = np.random.default_rng(3)
    forced = 0
    for seed in range(2):
        obs, _ = env.reset(seed=seed)
        while True:
            (agent, o), = obs.items()
            legal = np.flatnonzero(o["action_mask"])
            forced += len(legal) == 1
            obs, _, terminateds, truncateds, _ = env.step({agent: int(rng.choice(legal))})
            if terminateds["__all__"] or truncateds["__all__"]:
                break
    assert (forced > 0) != skip_forced


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
