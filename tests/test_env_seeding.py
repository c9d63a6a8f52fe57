"""The AEC environment sevenrocks_v0's determinism: the same seed gives the same match byte for
byte, a round's deal depends only on the seed and the round (R2's draw too), unseeded resets go
on from the last seed as Gymnasium's do, and a copy (``copy.deepcopy``, ``pickle``) of an env
goes on, and resets, exactly as the original (more of the env: ``test_env.py``)."""

import json
import pickle
import random

import numpy as np
import pytest

from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.rules import deal
from sevenrocks_env.tiles import mask_of, parse_tile

from test_env import play_out


def test_same_seed_same_match_byte_for_byte():
    records = []
    for _ in range(2):
        env = sevenrocks_v0.env()
        play_out(env, seed=7)
        records.append(json.dumps(env.unwrapped.game_record(), sort_keys=True))
    assert records[0] == records[1]


def test_round_deal_depends_only_on_seed_and_round_index():
    """Two different plays from the same seed see the same deals and drawn openers per round."""
    env = sevenrocks_v0.env()
    play_out(env, seed=11)
    first = env.unwrapped.game_record()["rounds"]
    play_out(env, seed=11, policy=lambda agent, obs: int(np.flatnonzero(obs["action_mask"])[-1]))
    second = env.unwrapped.game_record()["rounds"]
    for r in range(min(len(first), len(second))):
        assert first[r]["hands"] == second[r]["hands"]
        hands, _ = deal(11, r)
        assert [mask_of(parse_tile(t) for t in hand) for hand in first[r]["hands"]] == hands
    drawn_after_a_block = 0
    for rounds in (first, second):  # the opener is the draw, except after a domino (R2)
        for r, rnd in enumerate(rounds):
            if r == 0 or rounds[r - 1]["result"] == "blocked":
                assert rnd["opener"] == deal(11, r)[1], r
                drawn_after_a_block += r > 0
    assert drawn_after_a_block  # a draw that follows play, not only round 0's


def _deals_after(env, seed, resets):
    """The first round's hands of ``resets`` unseeded resets after ``reset(seed=seed)``."""
    env.reset(seed=seed)
    hands = []
    for _ in range(resets):
        env.reset()
        hands.append(env.unwrapped.match.hands)
    return hands


@pytest.mark.parametrize("make", [sevenrocks_v0.env, sevenrocks_v0.parallel_env])
def test_seeding_once_makes_the_unseeded_resets_after_it_reproducible(make):
    """As Gymnasium's ``np_random``: ``reset()`` without a seed goes on from the last seed (what
    TorchRL's ``PettingZooWrapper(seed=...)`` relies on), and each reset deals a new match."""
    first, second = _deals_after(make(), 42, 3), _deals_after(make(), 42, 3)
    assert first == second
    assert len({tuple(hands) for hands in first}) == 3
    assert _deals_after(make(), 43, 3) != first


def test_an_unseeded_reset_records_the_seed_that_dealt_it():
    env = sevenrocks_v0.raw_env()
    env.reset(seed=5)
    env.reset()
    again = sevenrocks_v0.raw_env()
    again.reset(seed=env.seed_used)
    assert 0 <= env.seed_used <= (1 << 63) - 1 and again.match.hands == env.match.hands
    fresh = [sevenrocks_v0.raw_env() for _ in range(2)]
    for unseeded in fresh:  # never seeded: fresh entropy, as before
        unseeded.reset()
    assert fresh[0].seed_used != fresh[1].seed_used


def test_unseeded_resets_after_a_seed_each_deal_a_new_match():
    """The seeds of unseeded resets are drawn from the whole seed range, not a handful: 300 of
    them (from a seeded generator, so the test is reproducible) never repeat a seed."""
    env = sevenrocks_v0.raw_env()
    env.reset(seed=12)
    seeds = set()
    for _ in range(300):
        env.reset()
        seeds.add(env.seed_used)
    assert len(seeds) == 300


def test_a_copy_resets_to_what_the_original_resets_to():
    """The generator of the unseeded resets travels with ``pickle`` and ``copy.deepcopy``."""
    import copy

    env = sevenrocks_v0.raw_env()
    env.reset(seed=9)
    clone, pickled = copy.deepcopy(env), pickle.loads(pickle.dumps(env))
    for other in (clone, pickled):
        other.reset()
    env.reset()
    assert clone.seed_used == pickled.seed_used == env.seed_used


def test_raw_env_is_picklable():
    env = sevenrocks_v0.raw_env(target=100, reward="points")
    clone = pickle.loads(pickle.dumps(env))
    assert clone.target == 100 and clone.reward_mode == "points" and clone.points_scale == 0.01 and clone.win_reward == 0.0


def _rest_of_match(env, rng) -> list:
    """Play ``env`` to its end with ``rng``'s legal choices; every step's (agent, observation,
    reward, termination, truncation) in order."""
    trace = []
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, _ = env.last()
        trace.append((agent, observation["observation"].tobytes(), reward, terminated, truncated))
        legal = np.flatnonzero(observation["action_mask"])
        env.step(None if terminated or truncated else int(legal[rng.randrange(len(legal))]))
    return trace


@pytest.mark.parametrize("make", [sevenrocks_v0.raw_env, sevenrocks_v0.env])
@pytest.mark.parametrize("copy_of", ["deepcopy", "pickle"])
def test_a_copy_of_an_env_mid_match_goes_on_from_the_same_position(make, copy_of):
    """``copy.deepcopy`` and ``pickle`` keep the game in progress (a search copies the env
    before trying a move); the copy and the original go on apart."""
    import copy

    env = make(reward="points", target=150)
    env.reset(seed=8)
    rng = random.Random(1)
    for _ in range(37):  # into the second round or late in the first
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(int(rng.choice(np.flatnonzero(mask))))
    clone = copy.deepcopy(env) if copy_of == "deepcopy" else pickle.loads(pickle.dumps(env))
    assert clone.unwrapped.match is not env.unwrapped.match
    assert clone.agent_selection == env.agent_selection and clone.agents == env.agents
    copied = _rest_of_match(clone, random.Random(2))
    assert _rest_of_match(env, random.Random(2)) == copied and len(copied) > 4


@pytest.mark.parametrize("copy_of", ["deepcopy", "pickle"])
def test_a_copy_draws_only_the_seat_the_original_draws(copy_of):
    """The Gymnasium view sets the AEC env's ``render_observer`` to the learner's seat after
    construction; a copy of it mid-match (``pickle`` rebuilds from the constructor's arguments)
    drew every hidden hand, the original only the learner's."""
    import copy

    from sevenrocks_env.single_agent import SingleAgentEnv

    view = SingleAgentEnv(opponents="random", seat=1, partner="random", render_mode="ansi")
    view.reset(seed=0)
    raw = sevenrocks_v0.raw_env(render_mode="ansi")
    raw.reset(seed=0)
    raw.render_observer = 3
    for env, seat in ((view, 1), (raw, 3)):
        clone = copy.deepcopy(env) if copy_of == "deepcopy" else pickle.loads(pickle.dumps(env))
        hands = [line.split()[1] for line in clone.render().splitlines()
                 if line.startswith("  seat ") and " hand: " in line]
        assert hands == [str(seat)]
        assert clone.render() == env.render()
