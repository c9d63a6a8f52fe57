"""Gaps a mutation audit of the core modules (scoring, tiles, placement, dealing, starts,
observation) found in the suite: each test here kills a mutant the existing tests let through."""

import numpy as np
import pytest

from sevenrocks_env.dealing import deal
from sevenrocks_env.observation import OBS_SIZE, action_mask, decode, encode
from sevenrocks_env.rules import Match, apply_action, legal_actions

from sevenrocks_env.tiles import (NUM_NUMBERS, NUM_TILES, OTHER_HALF, TILE_NUMBERS_NP, TILES,
                                  mask_of, parse_tile, tile_index)


def test_tile_index_refuses_a_tile_outside_the_set_in_words():
    """``tile_index``: a half past 6 is a ``ValueError`` naming the tile, never an index."""
    for low, high in ((7, 7), (3, 7), (-1, 2)):
        with pytest.raises(ValueError, match=rf"no tile {min(low, high)}\|{max(low, high)} in"):
            tile_index(low, high)


@pytest.mark.parametrize("text", ["356", "3 5 6", "3566"])
def test_more_than_two_digits_without_a_bar_is_not_a_tile(text):
    """R1: "ab" is the short spelling of a|b; "abc" is no tile (not a|b with c dropped)."""
    with pytest.raises(ValueError, match="not a tile"):
        parse_tile(text)


def test_mask_of_is_a_set_a_repeated_tile_counts_once():
    assert mask_of([3, 3]) == 1 << 3
    assert mask_of([0, 5, 0, 5, 0]) == (1 << 0) | (1 << 5)


def test_the_per_tile_tables_agree_with_the_tiles():
    """``OTHER_HALF[t][n]`` is -1 where ``t`` does not show ``n`` (the policy features read -1 as
    "no fit"); ``TILE_NUMBERS_NP[t]`` marks both halves of ``t``."""
    for tile, (low, high) in enumerate(TILES):
        for number in range(NUM_NUMBERS):
            expected = high if number == low else low if number == high else -1
            assert OTHER_HALF[tile][number] == expected, (tile, number)
            assert TILE_NUMBERS_NP[tile, number] == (number in (low, high)), (tile, number)
    assert TILE_NUMBERS_NP.shape == (NUM_TILES, NUM_NUMBERS)


@pytest.mark.parametrize("seed, round_index, error, words", [
    (None, 0, TypeError, "seed must be a non-negative int, got None"),
    (0, -1, ValueError, r"round_index must be in \[0, inf\], got -1"),
    (0, True, TypeError, "round_index must be an int, got bool True"),
    (0, "1", TypeError, "round_index must be an int, got str '1'"),
    (0, 1.0, TypeError, "round_index must be an int, got float 1.0"),
])
def test_deal_names_a_bad_seed_or_round_index(seed, round_index, error, words):
    """``dealing.deal``: NumPy's seeding would take True, "1" or 1.0 as a round index (the deal
    of another round) and [seed, -1] with its own words; the deal names the argument."""
    with pytest.raises(error, match=words):
        deal(seed, round_index)


@pytest.mark.parametrize("function", [encode, action_mask], ids=["encode", "action_mask"])
@pytest.mark.parametrize("seat, error, words", [
    (-1, ValueError, r"seat must be in \[0, 3\], got -1"),
    (4, ValueError, r"seat must be in \[0, 3\], got 4"),
    (True, TypeError, "seat must be an int, got bool True"),
    (1.0, TypeError, "seat must be an int, got float 1.0"),
])
def test_the_observation_and_the_mask_name_a_bad_seat(function, seat, error, words):
    """-1 would be read as seat 3 and True as seat 1 (the docstrings of both)."""
    with pytest.raises(error, match=words):
        function(Match.new(0), seat)


def test_a_numpy_seat_is_a_seat():
    match = Match.new(0)
    assert (encode(match, np.int64(2)) == encode(match, 2)).all()
    assert (action_mask(match, np.int8(match.turn)) == action_mask(match, match.turn)).all()


@pytest.mark.parametrize("size", [OBS_SIZE - 1, OBS_SIZE + 1, 2 * OBS_SIZE])
def test_decode_refuses_a_vector_of_another_size(size):
    with pytest.raises(ValueError, match=rf"observation must have shape \({OBS_SIZE},\), got"):
        decode(np.zeros(size, np.float32))


def test_decode_reads_tile_counts_to_the_nearest_count():
    """A count k is k/7 in the vector; decode rounds to the nearest count, so an observation
    a rounding step off (k/7 a hair low, times 7 is 2.9999...) decodes to the same counts."""
    match = Match.new(3)
    seen = set()
    while not match.over and len(seen) < 8:
        for seat in range(4):
            obs = encode(match, seat)
            counts = decode(obs).tile_counts
            low = np.nextafter(obs.astype(np.float64), -1.0)  # one float64 step below
            assert decode(low).tile_counts == counts, (seat, counts)
            seen.update(counts)
        apply_action(match, legal_actions(match)[0])
    assert len(seen) >= 6, seen  # the counts 7 down to at most 2 were checked
