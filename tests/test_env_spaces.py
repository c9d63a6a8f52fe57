"""The AEC environment sevenrocks_v0's spaces and pictures: every observation lies in the
declared space, whose score bounds are exactly the derived ones (R7's largest deduction
included), each agent keeps its own space objects, and ``render`` shows a seat its own hand and
no other (more of the env: ``test_env.py``)."""

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.env import MAX_PLACEMENT_POINTS, MAX_TEAM_DEDUCTION, observation_space
from sevenrocks_env.observation import OBS_SIZE, encode
from sevenrocks_env.rules import Match, deal, legal_actions
from sevenrocks_env.scoring import deduction

from test_env import play_out


def test_observation_matches_space():
    env = sevenrocks_v0.env()
    env.reset(seed=4)
    obs = env.observe(env.agent_selection)
    assert obs["observation"].shape == (OBS_SIZE,) and obs["observation"].dtype == np.float32
    assert obs["action_mask"].dtype == np.int8
    assert env.observation_space(env.agent_selection).contains(obs)


def test_each_agent_has_its_own_spaces_the_same_object_on_every_call():
    """The four agents shared one observation space, so seeding one seeded them all (PettingZoo's
    classic games build one per agent; ``seed_test`` seeds them one by one)."""
    env = sevenrocks_v0.env()
    for spaces_of in (env.observation_space, env.action_space):
        assert len({id(spaces_of(agent)) for agent in env.possible_agents}) == 4
        assert all(spaces_of(agent) is spaces_of(agent) for agent in env.possible_agents)
    first, second = (env.observation_space(a) for a in env.possible_agents[:2])
    first.seed(1)
    second.seed(2)
    drawn = first.sample()["observation"]
    first.seed(1)
    assert np.array_equal(first.sample()["observation"], drawn)  # player_1's seed plays no part
    assert first == second  # equal spaces all the same


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), target=st.sampled_from([5, 30, 250, 1000]),
       max_rounds=st.sampled_from([1, 3, 100]))
def test_every_observation_of_random_play_lies_in_the_declared_space(seed, target, max_rounds):
    """Each seat's observation after every step (and after the match) is in its space."""
    env = sevenrocks_v0.raw_env(target=target, max_rounds=max_rounds)
    space = env.observation_space("player_0")
    assert np.isfinite(space["observation"].low).all() and np.isfinite(space["observation"].high).all()

    def check(e, agent, action):
        for other in e.possible_agents:
            assert space.contains(e.observe(other)), (other, e.match.scores)

    play_out(env, seed, on_step=check)
    for agent in env.possible_agents:
        assert space.contains(env.observe(agent))


@pytest.mark.parametrize("target, max_rounds", [(250, 100), (5, 1000), (1000, 1)])
def test_the_score_bounds_are_exactly_the_derived_ones(target, max_rounds):
    """Scores at the derived extremes are inside the space, one point beyond is outside."""
    space = observation_space(target, max_rounds)
    hands, opener = deal(0, 0)
    lowest, highest = -MAX_TEAM_DEDUCTION * (max_rounds + 1), target - 1 + MAX_PLACEMENT_POINTS
    for scores, inside in (((lowest, highest), True), ((highest, lowest), True),
                           ((lowest - 1, 0), False), ((0, highest + 1), False)):
        match = Match.from_deal(hands, opener, target=target)
        match.scores = list(scores)  # the winner's score, past the target: set by hand
        obs = {"observation": encode(match, 0), "action_mask": np.zeros(113, np.int8)}
        assert space.contains(obs) is inside, scores
    env = sevenrocks_v0.raw_env(target=target, max_rounds=max_rounds)
    for agent in env.possible_agents:  # the env's own spaces follow its target and max_rounds
        assert env.observation_space(agent) == space, agent


def test_the_module_observation_space_defaults_to_the_env_s_defaults():
    """``observation_space()`` is "the observation space of every agent" of a default env."""
    assert observation_space() == sevenrocks_v0.raw_env().observation_space("player_0")


@settings(max_examples=200, deadline=None)
@given(st.permutations(range(28)))
def test_a_partnership_loses_at_most_max_team_deduction_per_round(order):
    """R7: two 7-tile hands of a team, rounded separately, never cost more than the bound."""
    first = sum(1 << t for t in order[:7])
    second = sum(1 << t for t in order[7:14])
    assert deduction(first) + deduction(second) <= MAX_TEAM_DEDUCTION
    assert MAX_PLACEMENT_POINTS == 35  # R5: the largest scoring placement


def test_max_team_deduction_is_reached_by_the_heaviest_hands():
    from sevenrocks_env.tiles import TILE_PIPS

    heaviest = sorted(range(28), key=lambda t: -TILE_PIPS[t])
    first, second = sum(1 << t for t in heaviest[:7]), sum(1 << t for t in heaviest[7:14])
    assert (deduction(first), deduction(second)) == (70, 50)
    assert MAX_TEAM_DEDUCTION == 120


@pytest.mark.parametrize("observer", [4, -1, 3.5, "0", 1.0, np.float64(2.0), 1 + 0j, np.True_])
def test_render_observer_must_be_a_seat(observer):
    """``render_observer`` "must be a seat 0-3 or None": 4 (one past the last seat) is refused,
    and so are values equal to a seat that are not ints (``1 + 0j`` crashed ``render()``)."""
    with pytest.raises(ValueError, match="render_observer"):
        sevenrocks_v0.raw_env(render_observer=observer)


@pytest.mark.parametrize("observer", [None, 0, 3, np.int64(2)])
def test_render_observer_takes_a_seat_or_none(observer):
    assert sevenrocks_v0.raw_env(render_observer=observer).render_observer == observer


@pytest.mark.parametrize("mode", ["ansi", "rgb_array"])
def test_render_after_a_round_ends_shows_how_it_ended(mode):
    """The next round is dealt at once, so the render after a round's last move showed a fresh
    table: the last tile, the hands, the deductions were never seen (env videos neither)."""
    env = sevenrocks_v0.raw_env(render_mode=mode)
    env.reset(seed=3)
    rng = random.Random(0)
    while len(env.match.history) == 1:
        env.step(rng.choice(legal_actions(env.match)))
    ended = env.render()
    if mode == "ansi":
        assert "round over" in ended and "round 1 " in ended
    else:  # the round that ended, not the fresh deal the match holds now
        from sevenrocks_env.render.picture import render_picture
        from sevenrocks_env.render.text import just_ended_round
        assert np.array_equal(ended, render_picture(just_ended_round(env.match), spectator=True))
        assert not np.array_equal(ended, render_picture(env.match, spectator=True))
    env.step(rng.choice(legal_actions(env.match)))  # the next round's first tile
    after = env.render()
    if mode == "ansi":
        assert "round over" not in after and "round 2 " in after
    else:
        assert ended.shape == after.shape and not np.array_equal(ended, after)


def test_a_seat_s_rgb_render_shows_no_hidden_hand():
    """With ``render_observer`` a seat, the picture is that seat's view (a video of what the
    agent saw): exchanging a tile between two other hands changes nothing in it, while the
    spectator picture (no observer) shows the change."""
    pictures = {observer: _picture_unchanged_by_an_exchange(observer, 1, 2)
                for observer in (0, None)}
    assert pictures == {0: True, None: False}


def _picture_unchanged_by_an_exchange(observer, a: int, b: int) -> bool:
    """Whether the rgb picture for ``render_observer=observer`` stays the same when seats ``a``
    and ``b`` exchange the first tile of their hands (seed 3)."""
    from sevenrocks_env.tiles import tiles_of

    env = sevenrocks_v0.raw_env(render_mode="rgb_array", render_observer=observer)
    env.reset(seed=3)
    before = env.render()
    hands = env.match.hands
    one, two = tiles_of(hands[a])[0], tiles_of(hands[b])[0]
    hands[a] ^= (1 << one) | (1 << two)
    hands[b] ^= (1 << one) | (1 << two)
    return np.array_equal(before, env.render())


def test_the_target_entry_is_declared_as_0_to_target_over_1000():
    """The module docs' ``[0, target / 1000]``: the bound is the value every observation holds."""
    from sevenrocks_env.observation import OFFSETS

    entry = OFFSETS["scores"].start + 2
    for target in (5, 250, 5000):
        space = observation_space(target, 100)["observation"]
        value = encode(Match.new(0, target=target), 0)[entry]
        assert (space.low[entry], space.high[entry]) == (0, value) == (0, np.float32(target / 1000))


def test_human_mode_prints_the_table_at_reset_and_after_every_step(capsys):
    """``render_mode="human"`` prints the ansi table (and ``render()`` returns None): at reset and
    after each step, what a person watching the match reads."""
    env = sevenrocks_v0.raw_env(render_mode="human", render_observer=0)
    env.reset(seed=3)
    printed = capsys.readouterr().out
    assert "Seven Rocks - round 1 " in printed
    ansi = sevenrocks_v0.raw_env(render_mode="ansi", render_observer=0)
    ansi.reset(seed=3)
    assert printed == ansi.render() + "\n"
    action = legal_actions(env.match)[0]
    env.step(action)
    ansi.step(action)
    assert capsys.readouterr().out == ansi.render() + "\n"
    assert env.render() is None and capsys.readouterr().out == ansi.render() + "\n"


def test_a_seat_s_rgb_render_shows_that_seat_s_own_hand():
    """The seat's view shows its own hand: exchanging a tile between the observer's hand and
    another's changes the picture (the no-leak test above checks only the other hands)."""
    assert not _picture_unchanged_by_an_exchange(0, 0, 1)
