"""Counting ends and scoring (R5), end-of-round deductions (R7): pure functions over plain values.

Used by the engine (:mod:`sevenrocks_env.rules`), the observation, the agents and the renderers.
"""

from __future__ import annotations

from .tiles import EAST, NORTH, SOUTH, WEST, WITH_NUMBER, pips_of


def end_sum(ends, end_double, branch_started) -> int:
    """Sum of the counted ends of a layout (R5).

    Ordinary outer ends count their number, doubles at an outer end both halves; an unopened
    branch counts 0.  An opening spinner with both straight sides open is one tile and counts
    its pips once.
    """
    total = 0
    for slot in (WEST, EAST):
        number = ends[slot]
        if number >= 0:
            total += 2 * number if end_double[slot] else number
    for slot in (NORTH, SOUTH):
        if branch_started[slot]:
            number = ends[slot]
            total += 2 * number if end_double[slot] else number
    if end_double[WEST] and end_double[EAST] and ends[WEST] == ends[EAST] >= 0:
        total -= 2 * ends[WEST]  # the opening spinner, seen from both sides, counts once
    return total


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
