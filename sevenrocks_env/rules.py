"""The rules of Seven Rocks (``docs/rules.md`` R1-R8) as small explicit state and pure functions.

The whole match lives in one mutable :class:`Match` made of ints and bitmasks (hands are 28-bit
tile sets, see :mod:`sevenrocks_env.tiles`).  ``legal_actions``/``apply_action`` are the only ways
to move it forward; scoring and deductions (:mod:`sevenrocks_env.scoring`), placing a tile and
a hand's legal moves (:mod:`sevenrocks_env.placement`) are pure functions tests can call directly
(re-exported here).

Layout, per slot (west, east, north, south):

* ``ends[slot]``: the open number there, or ``-1`` when the slot is not a legal place to play
  (north/south before the spinner is internal, R4);
* ``end_double[slot]``: the outer tile at that end is a double, so it counts both halves (R5;
  an opening spinner, the outer tile at both west and east, counts once: ``counted_ends``);
* ``branch_started[slot]``: for north/south, a tile has been played there (R5: an unopened
  branch counts 0).

``spinner`` is the number of the first double of the round or ``-1`` (R4).  While the spinner
still has an unfilled straight continuation it is the outer tile of the west and/or east end
(an ordinary double of the same number cannot exist), and the branches are closed.
"""

from __future__ import annotations

import numpy as np

from .checks import shown
from .dealing import deal, next_seat, partner_of, team_of
from .match_state import (check_match_state, check_state_fields, checked_deal, checked_round_index,
                          checked_scores, checked_settings)
from .placement import legal_moves, place_tile
from .scoring import deduction, end_sum, matching_tiles, placement_points, round_to_five
from .tiles import ALL_TILES, KNOCK, NUM_SEATS, WEST, WITH_NUMBER

DEFAULT_TARGET = 250  # R8
#: ``Round.result`` values (R7, R8).
DOMINO, BLOCKED, WON = "domino", "blocked", "won"


class Round:
    """Log of one round: how it was dealt, what was played, how it ended (the record's source)."""

    __slots__ = ("opener", "hands", "moves", "result", "finisher", "deductions", "scores")

    def __init__(self, opener: int, hands: list[int]):
        self.opener = opener
        self.hands = list(hands)  # as dealt
        self.moves: list[tuple[int, int, int, int]] = []  # (seat, action, end_sum, points)
        self.result: str | None = None
        self.finisher: int | None = None  # the seat that dominoed (R7); None if nobody did
        self.deductions = [0, 0, 0, 0]
        self.scores: list[int] | None = None

    def remaining_hands(self) -> list[int]:
        """Each seat's hand now (after the moves logged so far), as bitmasks."""
        hands = list(self.hands)
        for seat, action, _, _ in self.moves:
            if action != KNOCK:
                hands[seat] &= ~(1 << (action >> 2))
        return hands

    def copy(self) -> "Round":
        other = Round(self.opener, self.hands)
        other.moves = list(self.moves)
        other.result, other.finisher = self.result, self.finisher
        other.deductions = list(self.deductions)
        other.scores = None if self.scores is None else list(self.scores)
        return other


class Match:
    """A match in progress: the current round's layout and hands plus both partnerships' scores.

    Build one with :meth:`new` (deals from a seed) or :meth:`from_deal` (given hands, for
    records and tests).  ``history`` is a list of :class:`Round` unless ``keep_history=False``.
    """

    __slots__ = (
        "seed", "target", "max_rounds", "scores", "winner", "truncated", "round_index",
        "hands", "played", "played_by", "ends", "end_double", "branch_started", "spinner",
        "turn", "opener", "placements", "voids", "last_end_sum", "history",
    )

    @classmethod
    def new(cls, seed: int, target: int = DEFAULT_TARGET, max_rounds: int | None = None,
            keep_history: bool = True) -> "Match":
        """A match dealt from ``seed`` (R1, R2), to ``target`` (R8), cut after ``max_rounds``
        rounds if given; ``TypeError``/``ValueError`` naming a bad argument."""
        match = cls._blank(*checked_settings(seed, target, max_rounds, keep_history, True))
        match._lay_out(*deal(match.seed, 0))
        return match

    @classmethod
    def from_deal(cls, hands: list[int], opener: int, target: int = DEFAULT_TARGET,
                  scores=(0, 0), seed: int | None = None, max_rounds: int | None = None,
                  keep_history: bool = True, round_index: int = 0) -> "Match":
        """A match whose round ``round_index`` (0: the first) has the given hands (bitmasks, a
        deal: R1) and opener, from ``scores`` (two ints below the target: a partnership at the
        target has won, R8; as low as ``round_index`` rounds of deductions allow, R7).  With
        ``seed`` the later rounds are dealt from it (R2); without, the match waits at each
        round's end (:attr:`awaiting_deal`) for :meth:`start_round`.  Every argument is
        checked (:mod:`sevenrocks_env.match_state`): ``TypeError``/``ValueError`` naming it."""
        match = cls._blank(*checked_settings(seed, target, max_rounds, keep_history, False))
        match.scores = checked_scores(scores, match.target)
        match.round_index = checked_round_index(round_index, match.scores, match.max_rounds)
        match._lay_out(*checked_deal(hands, opener))
        return match

    @classmethod
    def _blank(cls, seed, target, max_rounds, keep_history) -> "Match":
        match = cls.__new__(cls)
        match.seed = seed
        match.target = target
        match.max_rounds = max_rounds
        match.scores = [0, 0]
        match.winner = None
        match.truncated = False
        match.round_index = 0
        match.history = [] if keep_history else None
        return match

    def start_round(self, hands: list[int], opener: int) -> None:
        """Lay out a fresh round with these hands (four disjoint 7-tile sets, R1); ``opener``
        moves first (R2).  ``ValueError`` saying what is wrong with the deal (its type too), and
        unless the match is :attr:`awaiting_deal` or when ``opener`` is not the
        seat that must open after a domino (:attr:`finisher_opens`)."""
        hands, opener = checked_deal(hands, opener)
        if not self.awaiting_deal:
            raise ValueError("start_round: " + ("the match is over" if self.over else
                             "the round in play has not ended (or this match deals its own)"))
        if self.finisher_opens not in (None, opener):
            raise ValueError(f"start_round: seat {self.finisher_opens} dominoed the last round "
                             f"and must open the next (R2), not seat {opener}")
        self._lay_out(hands, opener)

    def _lay_out(self, hands: list[int], opener: int) -> None:
        """:meth:`start_round` for a deal known to be one (the engine's own, checked ones)."""
        self.hands = list(hands)
        self.played = 0
        self.played_by = [0, 0, 0, 0]
        self.ends = [-1, -1, -1, -1]
        self.end_double = [False, False, False, False]
        self.branch_started = [False, False, False, False]
        self.spinner = -1
        self.turn = opener
        self.opener = opener
        self.placements = 0
        self.voids = [0, 0, 0, 0]  # per seat: 7-bit set of numbers it showed it lacks (knocks)
        self.last_end_sum = 0
        if self.history is not None:
            self.history.append(Round(opener, hands))

    #: The fields of :meth:`to_state` / :meth:`from_state`: everything but the history log.
    STATE_FIELDS = tuple(name for name in __slots__ if name != "history")

    def to_state(self) -> dict:
        """The match as plain Python values (ints, bools, lists, ``None``), without history.

        :meth:`from_state` rebuilds it; training checkpoints and search store matches this way.
        """
        return {name: (list(value) if isinstance(value, list) else value)
                for name in self.STATE_FIELDS for value in (getattr(self, name),)}

    @classmethod
    def from_state(cls, state: dict) -> "Match":
        """A match (without history) from :meth:`to_state`'s dict, checked field by field.

        The dict may come from an untrusted file: every field must be present with the right
        type and range, and the hands and played tiles must partition the 28 tiles (R1).
        Raises ``ValueError`` naming the first bad field.
        """
        if not isinstance(state, dict):
            raise ValueError(f"match state must be a dict, got {type(state).__name__}")
        check_state_fields(state, cls.STATE_FIELDS)
        match = cls.__new__(cls)
        for name in cls.STATE_FIELDS:
            value = state[name]
            setattr(match, name, list(value) if isinstance(value, list) else value)
        match.history = None
        check_match_state(match)
        return match

    def clone(self, keep_history: bool = False) -> "Match":
        """Copy for search; by default without the history log (cheap)."""
        other = Match.__new__(Match)
        for name in Match.__slots__:
            setattr(other, name, getattr(self, name))
        other.scores = list(self.scores)
        other.hands = list(self.hands)
        other.played_by = list(self.played_by)
        other.ends = list(self.ends)
        other.end_double = list(self.end_double)
        other.branch_started = list(self.branch_started)
        other.voids = list(self.voids)
        other.history = [r.copy() for r in self.history] if (
            keep_history and self.history is not None) else None
        return other

    # -- queries ------------------------------------------------------------------------------

    @property
    def over(self) -> bool:
        return self.winner is not None or self.truncated

    @property
    def awaiting_deal(self) -> bool:
        """A seedless match (replay, search) whose round ended: call :meth:`start_round`."""
        return self.turn < 0 and not self.over

    @property
    def finisher_opens(self) -> int | None:
        """Who must open the round this match awaits (:attr:`awaiting_deal`): after a domino its
        finisher, the seat whose hand is empty (R2); ``None`` when the opener is drawn (after a
        block no hand is empty) or no round is awaited.  Read from the state, so a clone or a
        :meth:`from_state` copy without history knows it too."""
        if not self.awaiting_deal:
            return None
        return next((seat for seat, hand in enumerate(self.hands) if not hand), None)

    @property
    def opening(self) -> bool:
        """No tile placed yet this round: the opener may play any tile (R3)."""
        return self.placements == 0

    def end_sum(self) -> int:
        return end_sum(self.ends, self.end_double, self.branch_started)

    def playable(self, seat: int) -> int:
        """Bitmask of ``seat``'s tiles that match some open end."""
        if self.placements == 0:
            return self.hands[seat]
        return self.hands[seat] & self.matching()

    def matching(self) -> int:
        """Bitmask of all tiles that show a number open at some end."""
        return matching_tiles(self.ends)


def legal_actions(match: Match) -> list[int]:
    """Legal actions of the seat on turn, ascending; ``[KNOCK]`` when it cannot place (R3, R4, R6);
    ``[]`` when no seat is on turn (the match is over, or its round ended and waits for a deal).
    ``TypeError`` naming a ``match`` that is no :class:`Match` (found only once it fails: this is
    called millions of times)."""
    try:
        if match.turn < 0 or match.over:
            return []
        return legal_moves(match.hands[match.turn], match.ends, match.placements == 0)
    except AttributeError:
        if not isinstance(match, Match):
            raise not_a_match(match) from None
        raise


def not_a_match(match) -> TypeError:
    """The ``TypeError`` for a ``match`` argument that is no :class:`Match`."""
    return TypeError(f"match must be a rules.Match, got {type(match).__name__} {shown(match)}")


def checked_match(match) -> Match:
    """``match`` if it is a :class:`Match`, else :func:`not_a_match`'s ``TypeError``."""
    if not isinstance(match, Match):
        raise not_a_match(match)
    return match


def plain_action(action):
    """A 0-d integer array (a member of gymnasium's ``Discrete``) as an int; anything else as it
    is (for :func:`is_legal` to judge)."""
    if type(action) is not int and isinstance(action, np.ndarray) and action.shape == () \
            and np.issubdtype(action.dtype, np.integer):
        return int(action)
    return action


def is_legal(match: Match, action) -> bool:
    """Whether ``action`` is legal for the seat on turn (without building the full list); never
    when no seat is on turn (the match is over, or its round waits for a deal).  ``TypeError``
    naming a ``match`` that is no :class:`Match`."""
    if type(action) is not int:  # plain ints skip the checks below (bools are not plain ints)
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            return False
        action = int(action)
    try:
        if match.over or match.turn < 0:
            return False
    except AttributeError:
        if not isinstance(match, Match):
            raise not_a_match(match) from None
        raise
    if action == KNOCK:
        return not match.playable(match.turn)
    if not 0 <= action < KNOCK:
        return False
    tile, slot = action >> 2, action & 3
    if not (match.hands[match.turn] >> tile) & 1:
        return False
    if match.placements == 0:
        return slot == WEST
    number = match.ends[slot]
    return number >= 0 and bool((WITH_NUMBER[number] >> tile) & 1)


def apply_action(match: Match, action: int) -> int:
    """Play ``action`` for the seat on turn and return the points it scored (0 for a knock).

    Handles everything that follows in the rules: scoring and the win check after a positive
    placement (R5, R8), the end of the round by domino or block with deductions (R6, R7), and
    dealing the next round with its opener (R2).  The caller must pass a legal action
    (see :func:`is_legal`); this function does not re-check.
    """
    seat = match.turn
    if action == KNOCK:
        voids = 0
        for number in match.ends:
            if number >= 0:
                voids |= 1 << number
        match.voids[seat] |= voids
        if match.history is not None:
            match.history[-1].moves.append((seat, KNOCK, match.last_end_sum, 0))
        match.turn = (seat + 1) & 3
        return 0

    tile, slot = action >> 2, action & 3
    bit = 1 << tile
    match.hands[seat] ^= bit
    match.played |= bit
    match.played_by[seat] |= bit
    place_tile(match, tile, slot)
    match.placements += 1
    total = end_sum(match.ends, match.end_double, match.branch_started)
    match.last_end_sum = total
    points = placement_points(total)  # R5
    if match.history is not None:
        match.history[-1].moves.append((seat, action, total, points))
    if points:
        team = seat & 1
        match.scores[team] += points
        if match.scores[team] >= match.target:  # R8: checked right after a positive placement
            match.winner = team
            _close_round(match, WON, None if match.hands[seat] else seat)  # dominoed too?
            return points
    if not match.hands[seat]:
        _close_round(match, DOMINO, seat)
    elif not (ALL_TILES & ~match.played & match.matching()):
        _close_round(match, BLOCKED, None)
    else:
        match.turn = (seat + 1) & 3
    return points


def _close_round(match: Match, result: str, finisher: int | None) -> None:
    """End the round (R7): deductions unless won (R8), then deal the next one or stop."""
    deductions = [0, 0, 0, 0]
    if result != WON:
        for seat in range(NUM_SEATS):
            deductions[seat] = deduction(match.hands[seat])
            match.scores[seat & 1] -= deductions[seat]
    if match.history is not None:
        log = match.history[-1]
        log.result, log.finisher = result, finisher
        log.deductions = deductions
        log.scores = list(match.scores)
    if result == WON:
        return
    match.round_index += 1
    if match.max_rounds is not None and match.round_index >= match.max_rounds:
        match.truncated = True
        return
    if match.seed is None:  # no dealer (records, search): wait for start_round()
        match.turn = -1
        return
    hands, drawn = deal(match.seed, match.round_index)
    match._lay_out(hands, finisher if result == DOMINO else drawn)


__all__ = [
    "BLOCKED", "DEFAULT_TARGET", "DOMINO", "WON", "Match", "Round", "apply_action", "deal",
    "deduction", "end_sum", "is_legal", "legal_actions", "legal_moves", "matching_tiles",
    "next_seat", "partner_of",
    "place_tile", "placement_points", "plain_action", "round_to_five", "team_of",
]
