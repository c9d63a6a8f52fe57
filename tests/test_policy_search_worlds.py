"""Policy-guided determinized search: the worlds it samples.

The sampler is :class:`~sevenrocks_env.agents.belief.HandSampler` (shared with ``search``;
``tests/test_agents.py`` checks it on one position with one knocking seat).  Here: every sample
over random positions is consistent with counts and knocks, ``sample_many`` draws what
``sample`` draws, and the sampler is uniform on positions where two seats knocked, by a
chi-square test strong enough to reject a naive sampler.  The search's rollouts, legality,
information and settings: ``test_policy_search.py``.
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from sevenrocks_env.agents.belief import HIDDEN_SEATS, HandSampler, excluded_tiles, world_match
from sevenrocks_env.agents.layout import view_of
from sevenrocks_env.tiles import mask_of, tiles_of
from positions import random_state


# (seed, moves) of random positions where two seats showed voids by knocking, 7-8 unseen tiles
TWO_KNOCKERS = [(6, 22), (7, 23), (32, 21), (52, 23), (53, 21)]


def consistent(view, hidden) -> bool:
    """The hidden hands hold exactly the unseen tiles, in the right counts, none excluded by a
    knock (R6)."""
    if hidden[0] & hidden[1] or hidden[0] & hidden[2] or hidden[1] & hidden[2]:
        return False
    if hidden[0] | hidden[1] | hidden[2] != view.unseen:
        return False
    for hand, k in zip(hidden, HIDDEN_SEATS):
        if hand.bit_count() != view.tile_counts[k] or hand & excluded_tiles(view.voids[k]):
            return False
    return True


def all_consistent_deals(view) -> list[tuple[int, int, int]]:
    unseen = tiles_of(view.unseen)
    deals = []
    for owners in itertools.product(range(3), repeat=len(unseen)):
        hidden = tuple(mask_of(t for t, o in zip(unseen, owners) if o == j) for j in range(3))
        if consistent(view, hidden):
            deals.append(hidden)
    return deals


def chi_square(counts: dict, support: list, draws: int) -> tuple[float, float]:
    """Pearson's statistic against uniform over ``support``, and a bound it exceeds with
    negligible probability under uniformity (mean k-1 plus 6 standard deviations)."""
    expected = draws / len(support)
    stat = sum((counts.get(d, 0) - expected) ** 2 / expected for d in support)
    dof = len(support) - 1
    return stat, dof + 6 * (2 * dof) ** 0.5


def naive_sample(view, rng) -> tuple[int, int, int]:
    """A tempting but biased sampler: each tile to a uniformly chosen seat that may still take it
    (restarting on a dead end).  The uniformity test must reject it."""
    while True:
        hands, room = [0, 0, 0], [view.tile_counts[k] for k in HIDDEN_SEATS]
        for tile in tiles_of(view.unseen):
            seats = [j for j in range(3) if room[j]
                     and not (excluded_tiles(view.voids[HIDDEN_SEATS[j]]) >> tile) & 1]
            if not seats:
                break
            j = seats[int(rng.integers(len(seats)))]
            hands[j] |= 1 << tile
            room[j] -= 1
        else:
            return tuple(hands)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), moves=st.integers(0, 80))
def test_every_sampled_world_is_consistent_with_counts_and_knocks(seed, moves):
    match = random_state(seed, moves)
    if match.over:
        return
    view = view_of(match, match.turn)
    truth = tuple(match.hands[(match.turn + k) & 3] for k in HIDDEN_SEATS)
    assert consistent(view, truth)  # the real deal is one of the worlds the seat must consider
    sampler = HandSampler(view)
    rng = np.random.default_rng(seed)
    for _ in range(20):
        hidden = sampler.sample(rng)
        assert consistent(view, hidden), (view, hidden)
        world = world_match(view, hidden)
        assert view_of(world, 0) == view  # the world looks the same from the observer's seat


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), moves=st.integers(0, 80), count=st.integers(0, 70))
def test_sample_many_draws_the_same_worlds_as_sample_one_by_one(seed, moves, count):
    """The search's numpy sampler (``sample_many``) makes every choice ``sample`` makes, from
    the same draws, and leaves the generator where ``sample`` leaves it (so the uniformity
    tests of ``sample`` hold for it, and search's results did not move)."""
    match = random_state(seed, moves)
    if match.over:
        return
    sampler = HandSampler(view_of(match, match.turn))
    one_by_one, together = np.random.default_rng(seed), np.random.default_rng(seed)
    assert sampler.sample_many(together, count) == [sampler.sample(one_by_one)
                                                    for _ in range(count)]
    assert together.bit_generator.state == one_by_one.bit_generator.state


@pytest.mark.parametrize("seed, moves", TWO_KNOCKERS)
def test_sampler_is_uniform_over_consistent_deals_with_two_knocking_seats(seed, moves):
    match = random_state(seed, moves)
    view = view_of(match, match.turn)
    assert sum(1 for k in HIDDEN_SEATS if view.voids[k]) >= 2
    support = all_consistent_deals(view)
    sampler = HandSampler(view)
    assert sampler.consistent_deals == len(support) >= 5
    rng = np.random.default_rng(seed)
    draws = 200 * len(support)
    counts = {}
    for _ in range(draws):
        hidden = sampler.sample(rng)
        counts[hidden] = counts.get(hidden, 0) + 1
    assert set(counts) <= set(support)
    stat, bound = chi_square(counts, support, draws)
    assert stat < bound, (stat, bound)


def test_the_uniformity_test_rejects_a_naive_sampler():
    """The chi-square check above has power: tile-by-tile uniform choices are biased here."""
    rejected = 0
    for seed, moves in TWO_KNOCKERS:
        view = view_of(random_state(seed, moves), random_state(seed, moves).turn)
        support = all_consistent_deals(view)
        rng = np.random.default_rng(seed)
        draws = 200 * len(support)
        counts = {}
        for _ in range(draws):
            hidden = naive_sample(view, rng)
            counts[hidden] = counts.get(hidden, 0) + 1
        stat, bound = chi_square(counts, support, draws)
        rejected += stat >= bound
    assert rejected == len(TWO_KNOCKERS)
