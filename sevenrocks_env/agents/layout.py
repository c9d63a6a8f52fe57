"""Looking one placement ahead, and a seat's view of a Match without the vector round trip.

Agents reason about *what a placement would do* (R3-R5) without touching the Match: the layout
(ends, doubles, started branches, spinner) is copied into a scratch :class:`LookaheadLayout` and
the rules' own placement code (:func:`rules.place_tile`) is applied to it, so there is exactly one
implementation of R3/R4.  (Not to be confused with the renderer's
:class:`~sevenrocks_env.render.layout.BoardDrawing`, which records where every tile lies.)

:func:`view_of` builds the :class:`~sevenrocks_env.observation.SeatView` of a seat straight from a
Match (equal to ``decode(encode(match, seat))``, tested); search rollouts use it to run
observation-only agents fast inside sampled worlds.
"""

from __future__ import annotations

import numpy as np

from .. import rules
from ..observation import SeatView
from ..tiles import KNOCK, TILE_PIPS


class LookaheadLayout:
    """Scratch copy of a layout's open ends for looking ahead: the attributes
    :func:`rules.place_tile` reads and writes, nothing else."""

    __slots__ = ("ends", "end_double", "branch_started", "spinner", "placements")

    def __init__(self, ends, end_double, branch_started, spinner: int, opening: bool):
        self.ends = list(ends)
        self.end_double = list(end_double)
        self.branch_started = list(branch_started)
        self.spinner = spinner
        self.placements = 0 if opening else 1

    @classmethod
    def of(cls, view: SeatView) -> "LookaheadLayout":
        return cls(view.ends, view.end_double, view.branch_started, view.spinner, view.opening)

    @classmethod
    def of_match(cls, match: rules.Match) -> "LookaheadLayout":
        return cls(match.ends, match.end_double, match.branch_started, match.spinner,
                   match.placements == 0)

    def after(self, action: int) -> "LookaheadLayout":
        """The layout once ``action`` (a placement, not the knock) is played (R3, R4)."""
        other = LookaheadLayout(self.ends, self.end_double, self.branch_started, self.spinner,
                                False)
        other.placements = self.placements
        rules.place_tile(other, action >> 2, action & 3)
        other.placements += 1
        return other

    def end_sum(self) -> int:
        """Counted ends (R5); 0 before the opening."""
        if not self.placements:
            return 0
        return rules.end_sum(self.ends, self.end_double, self.branch_started)

    def matching(self) -> int:
        """Bitmask of the tiles that show a number open at some end (every tile at the opening)."""
        if not self.placements:
            return (1 << 28) - 1
        return rules.matching_tiles(self.ends)

    def placements_of(self, tile: int) -> list[int]:
        """Actions placing ``tile`` on this layout (slot 0 only at the opening, R3)."""
        moves = rules.legal_moves(1 << tile, self.ends, not self.placements)
        return [] if moves == [rules.KNOCK] else moves

    def best_points(self, tile: int) -> int:
        """Most points ``tile`` scores on this layout (0 if it cannot score or be placed)."""
        best = 0
        for action in self.placements_of(tile):
            points = rules.placement_points(self.after(action).end_sum())
            if points > best:
                best = points
        return best


def points_after(layout: LookaheadLayout, action: int) -> int:
    """Points the placement ``action`` scores on ``layout`` (R5); 0 for the knock."""
    if action == KNOCK:
        return 0
    return rules.placement_points(layout.after(action).end_sum())


def legal_from_mask(action_mask: np.ndarray) -> list[int]:
    """Legal actions, ascending, from an action mask; ``ValueError`` if none is legal."""
    legal = np.flatnonzero(np.asarray(action_mask)).tolist()
    if not legal:
        raise ValueError("action mask has no legal action (is it this seat's turn?)")
    return legal


def best_action(legal: list[int], values) -> int:
    """The legal action with the highest value (``values[i]`` is ``legal[i]``'s); ties go to the
    lower action, so a search's choice does not depend on float noise in the order."""
    best = max(range(len(legal)), key=lambda i: (values[i], -legal[i]))
    return legal[best]


def tile_pips(action: int) -> int:
    return 0 if action == KNOCK else TILE_PIPS[action >> 2]


def view_of(match: rules.Match, seat: int) -> SeatView:
    """``seat``'s SeatView of ``match`` without building the vector: the same as
    ``decode(encode())`` while a seat is on turn (the only states agents see; once the match is
    over, or a round awaits its deal, decode's ``turn`` is -1 and this one's the last mover's)."""
    rel = [(seat + k) & 3 for k in range(4)]
    played_by = tuple(match.played_by[s] for s in rel)
    hand = match.hands[seat]
    counts = tuple(7 - bin(p).count("1") for p in played_by)
    voids = (0,) + tuple(match.voids[s] for s in rel[1:])
    ours, theirs = rules.team_of(seat), rules.team_of(rules.next_seat(seat))
    ends = tuple(match.ends)
    end_double = tuple(d and n >= 0 for d, n in zip(match.end_double, ends))
    return SeatView(hand, played_by, ends, end_double, tuple(match.branch_started),
                    match.spinner, counts, voids,
                    (match.scores[ours], match.scores[theirs]), match.target,
                    (match.turn - seat) & 3 if match.turn >= 0 else 0, match.placements == 0)
