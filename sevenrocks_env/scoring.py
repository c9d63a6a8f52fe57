"""Counting ends and scoring (R5), end-of-round deductions (R7): pure functions over plain values.

Used by the engine (:mod:`sevenrocks_env.rules`), the observation, the agents and the renderers.
"""

from __future__ import annotations

from .tiles import EAST, NORTH, SOUTH, TILE_PIPS, WEST, WITH_NUMBER, pips_of


def counted_ends(ends, end_double, branch_started) -> tuple[int, int, int, int]:
    """What each slot (west, east, north, south) adds to the end sum (R5).

    An ordinary outer end counts its number, a double at an outer end both halves; a slot
    that is not open and an unopened branch count 0.  An opening spinner with both straight
    sides open is one tile: it counts its pips once, at the west slot (east adds 0).
    ``sum(counted_ends(...)) == end_sum(...)``.
    """
    west, east = ends[WEST], ends[EAST]
    counted_west = (2 * west if end_double[WEST] else west) if west >= 0 else 0
    if end_double[WEST] and end_double[EAST] and west == east >= 0:
        counted_east = 0  # the opening spinner, seen from both sides, counts once
    else:
        counted_east = (2 * east if end_double[EAST] else east) if east >= 0 else 0
    north, south = ends[NORTH], ends[SOUTH]
    counted_north = (2 * north if end_double[NORTH] else north) if branch_started[NORTH] else 0
    counted_south = (2 * south if end_double[SOUTH] else south) if branch_started[SOUTH] else 0
    return counted_west, counted_east, counted_north, counted_south


def end_sum(ends, end_double, branch_started) -> int:
    """Sum of the counted ends of a layout (R5): see :func:`counted_ends`."""
    return sum(counted_ends(ends, end_double, branch_started))


def matching_tiles(ends) -> int:
    """Bitmask of the tiles that show a number open at some end (``-1`` = slot not open)."""
    mask = 0
    for number in ends:
        if number >= 0:
            mask |= WITH_NUMBER[number]
    return mask


def placement_points(total: int) -> int:
    """Points for a placement whose end sum is ``total``: the sum if positive and divisible by 5 (R5)."""
    return total if total > 0 and total % 5 == 0 else 0


def round_to_five(pips: int) -> int:
    """Round a pip count to the nearest multiple of 5: remainder 1-2 down, 3-4 up (R7)."""
    return (pips + 2) // 5 * 5


def deduction(hand: int) -> int:
    """What a remaining hand (bitmask) costs its partnership at round end (R7)."""
    return round_to_five(pips_of(hand))


#: The largest points one placement scores (R5: the largest scoring end sum).
MAX_PLACEMENT_POINTS = 35
_HEAVIEST = sorted(TILE_PIPS, reverse=True)
#: The most a partnership can lose at one round's end (R7): its two hands hold at most the 14
#: heaviest tiles, at most 7 each, and are rounded to five separately.
MAX_TEAM_DEDUCTION = max(
    round_to_five(a) + round_to_five(b)
    for a in range(sum(_HEAVIEST[:7]) + 1) for b in range(sum(_HEAVIEST[:7]) + 1)
    if a + b <= sum(_HEAVIEST[:14]))
