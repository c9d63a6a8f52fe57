"""Why a move is refused, in the rule book's words (R3, R4, R6).

The terminal game (:mod:`sevenrocks_env.play`) names legal moves; the page also needs to say
why a click is not a legal move: a tile that fits nowhere, an end it does not match, a branch
that is not open yet, a knock while holding a tile that fits.
"""

from __future__ import annotations

from ..checks import shown
from ..play import PLACE_WORDS
from ..play_answers import branch_closed_text
from ..rules import Match, is_legal
from ..tiles import KNOCK, NORTH, NUM_ACTIONS, tile_name


def open_ends_text(match: Match) -> str:
    """``"the west end shows 2, the east end shows 4"``."""
    return ", ".join(f"{PLACE_WORDS[slot]} shows {number}"
                     for slot, number in enumerate(match.ends) if number >= 0)


def why_illegal(match: Match, action) -> str:
    """The reason ``action`` is not legal for the seat on turn (``""`` if it is legal)."""
    if type(action) is not int or not 0 <= action < NUM_ACTIONS:
        return f"an action is an int from 0 to {NUM_ACTIONS - 1}, got {shown(action)}"
    if is_legal(match, action):
        return ""
    if match.over:
        return "the match is over"
    hand = match.hands[match.turn]
    if action == KNOCK:
        return "you hold a tile that fits an open end, so you must place one: knocking is only " \
               "for a player with no legal placement (R6)"
    tile, slot = divmod(action, 4)
    name = tile_name(tile)
    if not (hand >> tile) & 1:
        return f"you do not hold {name}"
    if match.opening:
        return f"the opening tile is played in the middle (slot 0): {name} opens the round (R3)"
    fits = [a for a in range(4 * tile, 4 * tile + 4) if is_legal(match, a)]
    if not fits:
        text = f"{name} fits no open end: {open_ends_text(match)} (R3)"
        if match.ends[NORTH] < 0:
            text += f"; {branch_closed_text(match)}"
        return text
    if match.ends[slot] < 0:
        return f"{PLACE_WORDS[slot]} is not open: {branch_closed_text(match)}"
    return f"{name} does not fit {PLACE_WORDS[slot]}, which shows {match.ends[slot]}: a tile " \
           f"joins by a half showing the same number (R3)"


def tile_reason(match: Match, tile: int) -> str:
    """Why a tile in the hand of the seat on turn cannot be played now (``""`` if it can)."""
    if match.opening or any(is_legal(match, a) for a in range(4 * tile, 4 * tile + 4)):
        return ""
    return why_illegal(match, 4 * tile + 1)  # the east end is always open after the opening


__all__ = ["open_ends_text", "tile_reason", "why_illegal"]
