"""Ray RLlib (new API stack): the multi-agent env's rewards and masks, and one PPO iteration on a
local Ray instance with the masked shared policy (``test_rllib_example.py``).  Its refusals of
bad actions, configs, steps and reset options: ``test_rllib_inputs.py``.  Needs the [rllib]
extra (its own venv, see docs/adapters.md: Ray pins a gymnasium of its own); skipped where Ray
is not installed."""

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


def test_sub_envs_built_on_one_context_deal_different_matches(rllib_ppo):
    """RLlib's new stack builds a runner's sub-envs from one context object, vector index 0
    for all: seeded by env_config alone (no ``.debugging(seed=...)``, so no reset seed) they
    dealt the same matches.  Built again on a fresh context, the same streams come back."""
    def hands():
        shared = Context(1, seed=1)
        return [first_hands(rllib_ppo.SevenRocksMultiAgentEnv(shared)) for _ in range(3)]

    first = hands()
    assert len({str(h) for h in first}) == 3
    assert hands() == first
    # the first env of a context is an env of a plain dict config, as before
    plain = rllib_ppo.SevenRocksMultiAgentEnv({"seed": 1})
    assert first_hands(plain) == first_hands(rllib_ppo.SevenRocksMultiAgentEnv(Context(0, seed=1)))


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


class ForcedCounter:
    """A random opponent that counts the masks of one legal action it is shown."""

    name = "forced-counter"

    def __init__(self):
        self.forced = self.real = 0
        self.rng = np.random.default_rng(0)

    def seed(self, seed):
        self.rng = np.random.default_rng(seed)

    def act(self, observation, action_mask):
        legal = np.flatnonzero(action_mask)
        self.forced += len(legal) == 1
        self.real += len(legal) > 1
        return int(self.rng.choice(legal))


@pytest.mark.parametrize("skip_forced", [True, False])
def test_an_opponent_is_not_asked_about_its_forced_moves(rllib_ppo, skip_forced):
    """The match flow is MatchDriver's, as in the arena and the single-agent view: an
    opponent's knock played itself there but asked the opponent here (its random stream then
    drew other moves for the same seed)."""
    env = rllib_ppo.SevenRocksMultiAgentEnv({"opponent": "random", "target": 100,
                                             "skip_forced": skip_forced})
    counter = env._opponent = ForcedCounter()
    knocks = 0
    for seed in range(4):
        play(env, np.random.default_rng(seed), seed=seed)
        knocks += sum(seat not in env._learners and action == 112
                      for rnd in env._aec.match.history for seat, action, *_ in rnd.moves)
    assert counter.real > 50 and knocks > 10  # the opponents' knocks, all forced (R6)
    assert counter.forced == 0


def test_an_opponent_s_illegal_answer_names_the_opponent(rllib_ppo):
    from sevenrocks_env.driver import IllegalActionError

    class Knocker(ForcedCounter):
        def act(self, observation, action_mask):
            return 112 if action_mask.sum() > 1 else int(np.flatnonzero(action_mask)[0])

    env = rllib_ppo.SevenRocksMultiAgentEnv({"opponent": "random", "target": 100, "seed": 0})
    env._opponent = Knocker()
    with pytest.raises(IllegalActionError, match=r"agent 'forced-counter' at seat \d chose "
                                                 r"illegal action 112; legal: \["):
        for seed in range(10):
            play(env, np.random.default_rng(seed), seed=seed)
