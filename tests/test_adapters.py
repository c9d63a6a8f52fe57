"""Adapters for standard RL libraries: registration and the Gymnasium single-agent view's
rewards, seats and truncation (the rest of its API, and parallel_env: test_adapters_api.py).

The key property of the single-agent view: every reward that belongs to the learner reaches it,
including the final reward when another seat's move ends the match (R8).
"""

import warnings

import gymnasium
import numpy as np
import pettingzoo
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sevenrocks_env
from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.observation import OFFSETS
from sevenrocks_env.registration import GYMNASIUM_ID, PETTINGZOO_ID, pettingzoo_has_registry, register
from sevenrocks_env.rules import Match, deal, legal_actions
from sevenrocks_env.single_agent import SingleAgentEnv
from sevenrocks_env.tiles import WEST, encode_action, parse_tile

from positions import opponent_wins_next_position


OPEN_0_1 = encode_action(parse_tile("0|1"), WEST)


# -- registration ------------------------------------------------------------------------------

def test_gymnasium_id_is_registered_on_import():
    assert GYMNASIUM_ID in gymnasium.registry
    env = gymnasium.make(GYMNASIUM_ID, opponents="random", seat=0, partner="self")
    assert isinstance(env.unwrapped, SingleAgentEnv)
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"observation", "action_mask"}
    assert env.observation_space.contains(obs)


def test_gymnasium_module_prefix_form():
    env = gymnasium.make(f"sevenrocks_env:{GYMNASIUM_ID}", opponents="random")
    assert isinstance(env.unwrapped, SingleAgentEnv)


@pytest.mark.skipif(not pettingzoo_has_registry(), reason="this PettingZoo has no registry (< 1.27)")
def test_pettingzoo_ids_are_registered():
    aec = pettingzoo.make("aec", PETTINGZOO_ID, reward="points")
    aec.reset(seed=3)
    assert aec.unwrapped.reward_mode == "points"
    assert type(aec) is type(sevenrocks_v0.env())
    par = pettingzoo.make("parallel", PETTINGZOO_ID)
    observations, _ = par.reset(seed=3)
    assert set(observations) == set(par.possible_agents)
    with pytest.raises(ValueError, match="max_rounds"):
        pettingzoo.make("aec", PETTINGZOO_ID, max_cycles=10)


def test_registering_again_is_a_silent_no_op():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        register()
        register()
    assert sevenrocks_env.__version__


# -- the final reward reaches the learner ---------------------------------------------------------

@pytest.mark.parametrize("partner", ["self", "random"])
def test_final_reward_reaches_learner_when_opponent_ends_the_match(partner):
    env = SingleAgentEnv(opponents="random", seat=0, partner=partner)
    env.reset(seed=1, options={"match": opponent_wins_next_position()})
    assert env.match.turn == 0 and env.match.scores == [0, 245]
    obs, reward, terminated, truncated, info = env.step(OPEN_0_1)
    # the learner's own move scored nothing and did not end the match: seat 1's move did
    # (the round's log: a match dealt at 0-245 has no game record, which would not replay)
    moves = env.match.history[-1].moves
    assert [seat for seat, *_ in moves] == [0, 1]
    assert moves[0][3] == 0 and moves[1][3] == 5
    assert (terminated, truncated) == (True, False)
    assert reward == -1.0
    assert info["won"] is False and info["scores"] == (0, 250)
    assert not obs["action_mask"].any()
    # the last observation is the learner's own, though seat 1 moved last
    assert np.array_equal(obs["observation"], env.aec_env.observe("player_0")["observation"])
    with pytest.raises(RuntimeError, match="reset"):
        env.step(OPEN_0_1)


def test_final_points_reward_reaches_learner_when_opponent_ends_the_match():
    env = SingleAgentEnv(opponents="random", seat=0, partner="self", reward="points")
    env.reset(options={"match": opponent_wins_next_position()})
    _, reward, terminated, _, _ = env.step(OPEN_0_1)
    assert terminated and reward == pytest.approx(-0.05)


def test_learners_own_winning_move_returns_the_win_at_once():
    # team 0 at 245: opening 0|5 leaves ends 0 and 5, end sum 5 (R5) -> 250, the match is won (R8)
    env = SingleAgentEnv(opponents="random", seat=0, partner="self")
    env.reset(options={"match": opponent_wins_next_position(scores=(245, 0))})
    _, reward, terminated, truncated, info = env.step(encode_action(parse_tile("0|5"), WEST))
    assert (reward, terminated, truncated, info["won"]) == (1.0, True, False, True)
    assert env.match.scores == [250, 0]


@pytest.mark.parametrize("illegal_action", ["terminate", "raise"])
def test_a_start_refused_as_over_leaves_no_episode_to_step(illegal_action):
    """A start that is over before the learner moves (greedy seat 0 opens 0|5 for 250, R8) is a
    ``ValueError``; a ``step`` after it played on the finished match as if mid-episode (a fake
    illegal action with -1, or "legal actions: []") instead of asking for a reset."""
    env = SingleAgentEnv(opponents="greedy", seat=1, illegal_action=illegal_action)
    env.reset(seed=0)  # mid-episode when the bad start comes
    with pytest.raises(ValueError, match="over before the learner moves"):
        env.reset(options={"match": opponent_wins_next_position(scores=(245, 0))})
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(OPEN_0_1)
    env.reset(seed=0)  # and a reset starts a fresh episode
    env.step(int(np.flatnonzero(env.action_masks())[0]))


def test_info_scores_put_the_learners_team_first():
    env = SingleAgentEnv(opponents="random", seat=1)
    _, info = env.reset(options={"match": opponent_wins_next_position((10, 240), opener=1)})
    assert info["seat"] == 1 and info["scores"] == (240, 10)


class SeatRecorder:
    """Plays the first legal action and remembers the seats it was asked to play."""

    def __init__(self, name: str):
        self.name, self.env, self.seats = name, None, set()

    def seed(self, seed):
        pass

    def act(self, observation, action_mask):
        self.seats.add(self.env.match.turn)
        return int(np.flatnonzero(action_mask)[0])


def test_opponents_sit_left_and_right_as_given():
    left, right = SeatRecorder("left"), SeatRecorder("right")
    env = SingleAgentEnv(opponents=(left, right), seat=0, partner="self")
    left.env = right.env = env
    for seed in range(3):
        env.reset(seed=seed)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))
            done = terminated or truncated
    assert left.seats == {1} and right.seats == {3}  # left: seat + 1, right: seat + 3


def test_options_match_is_validated_and_not_mutated():
    env = SingleAgentEnv(opponents="random", render_mode="human")
    match = opponent_wins_next_position()
    env.reset(seed=1, options={"match": match})
    # the AEC env under it plays the match given from the start: its seed (the later deals)
    # and its board (the human-mode board printed at reset was the discarded fresh deal)
    assert env.aec_env.seed_used == match.seed == 7
    assert env.aec_env.match.scores == [0, 245]
    env.step(OPEN_0_1)
    assert match.placements == 0 and match.scores == [0, 245]  # the caller's object is untouched
    with pytest.raises(ValueError, match="Match"):
        env.reset(options={"match": "not a match"})
    no_seed = Match.from_deal(deal(0, 0)[0], opener=0)
    with pytest.raises(ValueError, match="seed"):
        env.reset(options={"match": no_seed})
    # the observation space is derived from target and max_rounds: a match must share them
    for other in (dict(target=4000), dict(max_rounds=7)):
        with pytest.raises(ValueError, match="this env plays to 250 with max_rounds 100"):
            env.reset(options={"match": Match.new(5, **other)})
    env.reset(options={"match": Match.new(5)})  # max_rounds None: the env's
    assert env.match.max_rounds == 100
    broken = Match.new(5)
    broken.ends = [-1, -1, -1, -1]
    broken.placements = 1  # no open end after a tile: from_state's checks
    with pytest.raises(ValueError, match="match state"):
        env.reset(options={"match": broken})
    with pytest.raises(TypeError, match="options must be a dict"):
        env.reset(options="x")
    for seat, error in ((1.0, TypeError), ("1", ValueError), (True, TypeError), (4, ValueError)):
        with pytest.raises(error, match="seat must be 0-3"):
            SingleAgentEnv(opponents="random", seat=seat)
    assert SingleAgentEnv(opponents="random", seat=np.int64(2)).seat == 2


# -- rewards over whole matches (property) -------------------------------------------------------

@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), partner=st.sampled_from(["self", "random", "greedy"]),
       seat=st.sampled_from([0, 1, 2, 3, "random"]), skip_forced=st.booleans(),
       reward=st.sampled_from(["win", "points"]))
def test_rewards_sum_to_the_learner_teams_outcome(seed, partner, seat, skip_forced, reward):
    env = SingleAgentEnv(opponents="random", seat=seat, partner=partner, reward=reward,
                         skip_forced=skip_forced, target=150)
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    total, steps = 0.0, 0
    while True:
        assert info["seat"] in env.learner_seats
        mask = env.action_masks()
        assert np.array_equal(np.flatnonzero(mask), legal_actions(env.match))
        assert np.array_equal(mask, obs["action_mask"].astype(bool))
        if skip_forced:
            assert mask.sum() > 1
        obs, r, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        total += r
        steps += 1
        if terminated or truncated:
            break
    team = env.seat % 2
    scores = env.match.scores
    if reward == "win":
        assert total == (1.0 if env.match.winner == team else -1.0)
    else:
        assert total == pytest.approx((scores[team] - scores[1 - team]) / 100)


def test_partner_self_interleaves_both_seats_in_play_order():
    env = SingleAgentEnv(opponents="random", seat=1, partner="self")
    obs, info = env.reset(seed=4)
    seats, rng = [], np.random.default_rng(0)
    turn = OFFSETS["turn"].start
    for _ in range(60):
        seats.append(info["seat"])
        assert obs["observation"][turn] == 1.0  # seat-relative: "I am to move"
        obs, _, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        if terminated or truncated:
            break
    assert set(seats) == {1, 3}
    assert env.learner_seats == (1, 3)


def test_partner_spec_leaves_the_learner_one_seat():
    env = SingleAgentEnv(opponents="random", seat=2, partner="greedy")
    _, info = env.reset(seed=0)
    assert env.learner_seats == (2,)
    assert env.action_masks().dtype == np.bool_  # what sb3-contrib's MaskablePPO asks for
    for _ in range(30):
        assert info["seat"] == 2
        _, _, terminated, truncated, info = env.step(int(np.flatnonzero(env.action_masks())[0]))
        if terminated or truncated:
            break


# -- the learner's seat, team and truncation ---------------------------------------------------

def _play_out(env, seed, rng):
    """Random legal play from ``reset(seed=seed)`` to the end: the last step's results."""
    env.reset(seed=seed)
    while True:
        step = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        if step[2] or step[3]:
            return step


def test_max_rounds_cut_off_is_a_truncation_with_no_reward():
    """A match stopped by max_rounds has no winner: truncated, not terminated, reward 0."""
    env = SingleAgentEnv(opponents="random", seat=1, max_rounds=1)
    rng = np.random.default_rng(0)
    for seed in range(3):
        _, reward, terminated, truncated, info = _play_out(env, seed, rng)
        assert env.match.winner is None and env.match.truncated
        assert (terminated, truncated, reward, info["won"]) == (False, True, 0.0, None)


def test_seat_random_draws_every_seat():
    env = SingleAgentEnv(opponents="random", seat="random")
    seats = set()
    for seed in range(40):
        _, info = env.reset(seed=seed)
        assert info["learner_seat"] == env.seat
        seats.add(env.seat)
    assert seats == {0, 1, 2, 3}


@pytest.mark.parametrize("seat", [1, 2, 3])
def test_the_end_of_the_match_is_reported_for_the_learners_seat_and_team(seat):
    """info["won"] is the learner team's result and the final observation the learner's own,
    not seat 0's (the mover's turn is gone when the match is over)."""
    env = SingleAgentEnv(opponents="random", seat=seat, partner="greedy", target=60)
    rng = np.random.default_rng(seat)
    for seed in range(3):
        obs, reward, terminated, _, info = _play_out(env, seed, rng)
        winner = env.match.winner
        assert terminated and winner in (0, 1)
        assert info["won"] == (winner == seat % 2) and reward == (1.0 if info["won"] else -1.0)
        assert info["seat"] == seat
        own = env.aec_env.observe(f"player_{seat}")["observation"]
        assert np.array_equal(obs["observation"], own)


def test_each_opponent_seat_is_seeded_on_its_own_from_the_match_seed():
    """Two opponents of one spec draw differently (one seed per seat), and the same match seed
    seeds them alike again."""
    env = SingleAgentEnv(opponents="random", seat=0, partner="random")
    seeds = []
    for agent in (*env._others, env._partner):
        agent.seed = lambda value, seen=seeds: seen.append(value)
    env.reset(seed=11)
    first, seeds[:] = list(seeds), []
    env.reset(seed=11)
    assert len(first) == 3 and len(set(first)) == 3 and seeds == first
    seeds[:] = []
    env.reset(seed=12)  # from the match seed: another match seeds every seat otherwise
    assert len(seeds) == 3 and not set(seeds) & set(first)
