"""Placing tiles on the layout (R3, R4) and the legal moves it allows (R3, R4, R6): pure
functions over the layout's plain values.

The layout is the per-slot summary :class:`~sevenrocks_env.rules.Match` keeps (``ends``,
``end_double``, ``branch_started``, ``spinner``, ``placements``; see :mod:`sevenrocks_env.rules`).
:func:`legal_moves` says where a hand's tiles may go, :func:`place_tile` what joining one does to
the layout.  Used by the engine (:mod:`sevenrocks_env.rules`, which re-exports both), the
observation and the agents' look-ahead layouts, so there is exactly one implementation of R3/R4;
the batched engine's tensor twins are in :mod:`sevenrocks_env.batched.layout`.
"""

from __future__ import annotations

from .tiles import (EAST, KNOCK, NORTH, OTHER_HALF, SOUTH, TILE_HIGH, TILE_IS_DOUBLE, TILE_LOW,
                    WEST, WITH_NUMBER)


def legal_moves(hand: int, ends, opening: bool) -> list[int]:
    """The legal actions, ascending, of a seat holding ``hand`` (a tile bitmask) at the layout's
    open ``ends`` (number per slot, -1 where closed): any tile at slot 0 when ``opening`` (R3),
    else each tile showing a slot's number at that slot (R3; north and south once open, R4),
    else ``[KNOCK]`` (R6)."""
    if opening:
        actions = []
        while hand:
            low_bit = hand & -hand
            actions.append(4 * (low_bit.bit_length() - 1))
            hand ^= low_bit
        return actions
    actions = []
    for slot, number in enumerate(ends):
        if number >= 0:
            fits = hand & WITH_NUMBER[number]
            while fits:
                low_bit = fits & -fits
                actions.append(4 * (low_bit.bit_length() - 1) + slot)
                fits ^= low_bit
    if not actions:
        return [KNOCK]
    actions.sort()
    return actions


def place_tile(match, tile: int, slot: int) -> None:
    """Join ``tile`` at ``slot`` and update ends, doubles, spinner and branches (R3, R4).

    ``match`` is anything with ``ends``, ``end_double``, ``branch_started`` (lists of 4),
    ``spinner`` and ``placements`` (the count *before* this tile): a
    :class:`~sevenrocks_env.rules.Match`, or a scratch layout of an agent looking ahead.  Only the
    layout changes; hands, scores and the turn are :func:`~sevenrocks_env.rules.apply_action`'s
    business.
    """
    ends, end_double = match.ends, match.end_double
    double = TILE_IS_DOUBLE[tile]
    if match.placements == 0:  # the opening: low half west, high half east (line A west)
        ends[WEST], ends[EAST] = TILE_LOW[tile], TILE_HIGH[tile]
        end_double[WEST] = end_double[EAST] = double
        if double:
            match.spinner = TILE_LOW[tile]
        return
    joined = ends[slot]
    ends[slot] = OTHER_HALF[tile][joined]
    end_double[slot] = double
    if slot >= NORTH:
        match.branch_started[slot] = True
        return
    spinner = match.spinner
    if double and spinner < 0:
        match.spinner = joined  # first double of the round: the spinner, attached by line A
    elif spinner >= 0 and ends[NORTH] < 0:
        exposed = (end_double[WEST] and ends[WEST] == spinner) or (
            end_double[EAST] and ends[EAST] == spinner)
        if not exposed:  # both straight continuations filled: the branches open (R4)
            ends[NORTH] = ends[SOUTH] = spinner
