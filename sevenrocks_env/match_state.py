"""Validation of a :class:`~sevenrocks_env.rules.Match` built from user data (R1-R8).

``Match.from_state`` calls :func:`check_match_state` on every state it builds: the state may
come from an untrusted file (a training checkpoint, a search request), so every field must have
the right type and range, the hands and played tiles must partition the 28 tiles, and the layout
must fit the tiles on the table: a layout no play reaches could stall a round (no open end) or
score past R5's 35.  ``Match.new``/``from_deal``/``start_round`` check their arguments with
:func:`checked_settings`, :func:`checked_scores` and :func:`checked_deal` (never the moves: the
engine's hot path trusts what these let in); :func:`deal_problem` words a bad deal for it and
for the batched engine's ``reset(deals=...)``.  :func:`replays_to_its_state` says whether a
match's history log can be kept as its game record.
"""

from __future__ import annotations

import itertools

import numpy as np

from .checks import checked_int, checked_seed, is_int, is_plain_int, shown, shown_kind
from .scoring import MAX_TEAM_DEDUCTION, end_sum, matching_tiles
from .tiles import (ALL_TILES, DOUBLE_OF, EAST, HAND_SIZE, NORTH, NUM_NUMBERS, NUM_SEATS, NUM_TILES,
                    SOUTH, TILE_HIGH, TILE_LOW, WEST, tile_name, tiles_of, tiles_showing)

#: Bound of the counts and scores of a match state (far beyond any real match).
BIG = 10 ** 9
#: Largest match target (R8) any match, env or game record may have (the picture's score track
#: has at most 100 holes; records from other people are bounded before they size any work).
MAX_TARGET = 5000
#: Most rounds a match may be cut after, and a record may hold (a match to 250 takes 5-15).
MAX_ROUNDS = 1000
#: Most moves (placements and knocks) a round can hold: 28 placements and at most 3 knocks
#: before each (a 4th knock in a row would be a blocked round, which ends at its last
#: placement: R6, R7). A loose bound (a hand that empties ends the round well before).
MAX_ROUND_MOVES = 4 * NUM_TILES


def checked_settings(seed, target, max_rounds, keep_history, seed_needed: bool) -> tuple:
    """``(seed, target, max_rounds, keep_history)`` of a new match, the ints plain ones: ``seed``
    a non-negative int (as the envs', no upper bound; ``None`` only where not ``seed_needed``;
    ``from_state`` takes seeds up to 2**64 only), ``target`` (R8) and ``max_rounds`` (``None``:
    no limit) within a game record's bounds, so that every match can be saved; ``keep_history``
    a bool (NumPy's, or 0/1).  ``TypeError``/``ValueError`` naming the argument."""
    if seed_needed and seed is None:
        raise TypeError("seed must be a non-negative int (the match is dealt from it), got None")
    seed = checked_seed(seed)  # None or a plain int
    target = checked_int("target", target, 1, MAX_TARGET)
    if max_rounds is not None:
        max_rounds = checked_int("max_rounds", max_rounds, 1, MAX_ROUNDS)
    if not isinstance(keep_history, (bool, np.bool_)) and not is_int(keep_history, 0, 1):
        raise TypeError(f"keep_history must be a bool, got {type(keep_history).__name__} "
                        f"{shown(keep_history)}")
    return seed, target, max_rounds, bool(keep_history)


def _listed(values) -> list | None:
    """``values`` as a list if it is a list, a tuple or a 1-D array (NumPy's), else ``None``."""
    if isinstance(values, (list, tuple)) or (isinstance(values, np.ndarray) and values.ndim == 1):
        return list(values)
    return None


def fewest_rounds_before(scores) -> int:
    """The smallest round index at which :func:`check_match_state` accepts ``scores``: a
    partnership loses at most ``MAX_TEAM_DEDUCTION`` a round (R7), so a score of -130 needs a
    round index of at least 1.  For a position rebuilt from what a seat sees (its scores, not
    the round's number: a sampled world, an inferred start)."""
    return max(0, -(min(scores) // MAX_TEAM_DEDUCTION) - 1)


def checked_round_index(round_index, scores: list[int], max_rounds: int | None) -> int:
    """``round_index`` (rounds already played) as a plain int, below ``max_rounds`` if given,
    and enough rounds for ``scores``: a partnership loses at most ``MAX_TEAM_DEDUCTION`` a
    round (R7), as :func:`check_match_state` requires.  ``ValueError`` otherwise."""
    top = BIG if max_rounds is None else max_rounds - 1
    if not is_int(round_index, 0, top):
        raise ValueError(f"round_index must be an int in [0, {top}] (the rounds played before "
                         f"this one{'' if max_rounds is None else ', below max_rounds'}), got "
                         f"{shown(round_index)}")
    if round_index < fewest_rounds_before(scores):
        raise ValueError(f"scores {scores} need a round_index of at least "
                         f"{fewest_rounds_before(scores)} (a partnership loses at most "
                         f"{MAX_TEAM_DEDUCTION} a round, R7), got {round_index}")
    return int(round_index)


def checked_scores(scores, target: int) -> list[int]:
    """``scores`` (the partnerships', team 0 first) as two plain ints below ``target`` (a
    partnership at the target has won, R8), multiples of 5.  ``ValueError`` otherwise."""
    values = _listed(scores)
    if not (values is not None and len(values) == 2
            and all(is_int(v, -BIG, target - 1) for v in values)):
        raise ValueError(f"scores must be two ints below the target {target} (R8) and at "
                         f"least -{BIG}, got {shown(scores)}")
    if values[0] % 5 or values[1] % 5:
        raise ValueError(f"scores must be {SCORES_STEP}, got {shown(scores)}")
    return [int(v) for v in values]


#: What every score is: placements score multiples of 5 (R5), deductions are rounded to 5 (R7).
SCORES_STEP = "multiples of 5 (placements score them, R5; deductions are rounded to them, R7)"


#: What a deal is, said after what is wrong with one (:func:`deal_problem`).
DEAL_RULE = "a deal is four disjoint 7-tile hands covering all 28 tiles (R1) and an opener 0-3 (R2)"


def deal_problem(hands: list[int], opener) -> str | None:
    """The first thing that keeps ``hands`` (ints) and ``opener`` from being a round's deal, in
    tile names: four disjoint 7-tile sets (28-bit masks) covering the 28 tiles (R1), an opener
    seat (R2); ``None`` if they are one.  The words of both engines: :func:`checked_deal`'s,
    and the batched engine's for the first bad env its tensor test finds."""
    def names(mask: int) -> str:
        return " ".join(tile_name(tile) for tile in tiles_of(mask))
    if len(hands) != NUM_SEATS:
        return f"got {len(hands)} hands, not 4"
    for seat, hand in enumerate(hands):
        if not 0 <= hand <= ALL_TILES:  # a negative "hand" never empties (hand & -hand)
            return f"seat {seat}'s hand {shown(hand)} is not a set of tiles (0 to 2**28 - 1)"
    for seat, other in itertools.combinations(range(NUM_SEATS), 2):
        if hands[seat] & hands[other]:
            return f"seats {seat} and {other} both hold {names(hands[seat] & hands[other])}"
    for seat, hand in enumerate(hands):  # four disjoint sets of 7 of the 28: all 28 are dealt
        if hand.bit_count() != HAND_SIZE:
            return (f"seat {seat} holds {hand.bit_count()} tiles ({names(hand) or 'none'}), "
                    f"not {HAND_SIZE}")
    if not is_int(opener, 0, NUM_SEATS - 1):
        return f"the opener is {shown(opener)}, not a seat 0-3"
    return None


def checked_deal(hands, opener) -> tuple[list[int], int]:
    """A round's deal as plain ints: ``hands`` a list (tuple, 1-D array) of ints, and
    :func:`deal_problem` finds nothing wrong (R1, R2); ``ValueError`` saying what is."""
    listed = _listed(hands)
    if listed is None or not all(is_int(hand) for hand in listed):
        raise ValueError(f"hands must be a list of four tile bitmasks (ints), got "
                         f"{type(hands).__name__} {shown(hands)}")
    hands = [int(hand) for hand in listed]
    problem = deal_problem(hands, opener)
    if problem:
        raise ValueError(f"deal: {problem}; {DEAL_RULE}")
    return hands, int(opener)


def starting_scores(match) -> list[int]:
    """The scores the match's history started from (a record replays from 0-0)."""
    scores = list(match.scores)
    for log in match.history:
        for seat, _, _, points in log.moves:
            scores[seat & 1] -= points
        scores[0] += log.deductions[0] + log.deductions[2]
        scores[1] += log.deductions[1] + log.deductions[3]
    return scores


def starting_round(match) -> int:
    """The round index the match's history started at (a record starts at round 0): its
    ``round_index`` less the rounds the history finished without a win (R8 deals no more)."""
    return match.round_index - sum(1 for log in match.history
                                   if log.result is not None and log.result != "won")


def replays_to_its_state(match) -> bool:
    """Whether ``match.history`` starts at 0-0 and, written as a game record and replayed by
    :func:`sevenrocks_env.record.replay` (every move, end sum, point and round end checked),
    leads to ``match``'s own state: only then can the match's record be kept (the batched
    engine's ``load`` and the AEC env's ``reset(options={"match": m})`` keep none otherwise)."""
    from .record import game_record, replay  # the record module imports the rules, and they this
    replayed = None
    try:
        if not all(len(log.hands) == NUM_SEATS and all(is_plain_int(hand, 0, ALL_TILES)
                                                      for hand in log.hands)
                   for log in match.history):  # a "hand" of -1 never empties: a record's loop
            return False
        if starting_scores(match) != [0, 0]:
            return False
        for replayed, _, _ in replay(game_record(match)):
            pass
    except (ValueError, TypeError, IndexError, AttributeError, KeyError):  # RecordError too
        return False
    mine = dict(replayed.to_state(), seed=match.seed, max_rounds=match.max_rounds)
    return mine == match.to_state()


def check_state_fields(state: dict, fields: tuple) -> None:
    """Raise ``ValueError`` if ``state`` misses a name of ``fields`` or has another key.  The
    message shows at most 3 unknown keys, each cut short: the dict may come from a hostile file,
    with any number of keys of any size (callers cut a message at 200 characters)."""
    missing = [name for name in fields if name not in state]
    extra = [name for name in state if name not in fields]
    if missing or extra:
        more = f", ... ({len(extra)} in all)" if len(extra) > 3 else ""
        raise ValueError(f"match state: missing fields {missing}, unknown fields "
                         f"[{', '.join(shown(name)[:24] for name in extra[:3])}{more}]")


def check_match_state(match) -> None:
    """Raise ``ValueError`` naming the first field of ``match`` that no real match can have."""
    def bad(name: str, what: str):
        value = getattr(match, name)
        raise ValueError(f"match state: {name} must be {what}, got {shown_kind(value)}")

    big = BIG
    if match.seed is not None and not is_plain_int(match.seed, 0, 2 ** 64):
        bad("seed", "None or an int in [0, 2**64]")
    if not is_plain_int(match.target, 1, MAX_TARGET):
        bad("target", f"an int in [1, {MAX_TARGET}]")
    if match.max_rounds is not None and not is_plain_int(match.max_rounds, 1, MAX_ROUNDS):
        bad("max_rounds", f"None or an int in [1, {MAX_ROUNDS}]")
    if not (isinstance(match.scores, list) and len(match.scores) == 2
            and all(is_plain_int(v, -big, big) for v in match.scores)):
        bad("scores", "two ints")
    if match.winner is not None and not is_plain_int(match.winner, 0, 1):
        bad("winner", "None, 0 or 1")
    if type(match.truncated) is not bool:
        bad("truncated", "a bool")
    # R8: a partnership wins the moment a placement takes it to the target; deductions only lower
    if match.winner is None and max(match.scores) >= match.target:
        bad("scores", "below the target while no partnership has won (R8)")
    if match.winner is not None and match.scores[match.winner] < match.target:
        bad("scores", "at the target for the winner (R8)")
    if not is_plain_int(match.round_index, 0, big):
        bad("round_index", "a non-negative int")
    if match.max_rounds is not None and match.round_index >= match.max_rounds \
            and not match.truncated and match.winner is None:
        bad("round_index", f"below max_rounds ({match.max_rounds}) while the match is on")
    # R7: scores start at 0 and only the deductions at a round's end lower them
    lowest = -MAX_TEAM_DEDUCTION * (match.round_index + 1)
    if min(match.scores) < lowest:
        bad("scores", f"at least {lowest} after {match.round_index} rounds (a partnership loses "
                      f"at most {MAX_TEAM_DEDUCTION} a round, R7)")
    if match.scores[0] % 5 or match.scores[1] % 5:
        bad("scores", SCORES_STEP)
    for name in ("hands", "played_by", "voids"):
        value = getattr(match, name)
        limit = ALL_TILES if name != "voids" else (1 << 7) - 1
        if not (isinstance(value, list) and len(value) == NUM_SEATS
                and all(is_plain_int(v, 0, limit) for v in value)):
            bad(name, "four bitmasks")
    if not (isinstance(match.ends, list) and len(match.ends) == 4
            and all(is_plain_int(v, -1, 6) for v in match.ends)):
        bad("ends", "four ints in [-1, 6]")
    for name in ("end_double", "branch_started"):
        value = getattr(match, name)
        if not (isinstance(value, list) and len(value) == 4 and all(type(v) is bool for v in value)):
            bad(name, "four bools")
    if not is_plain_int(match.spinner, -1, 6):
        bad("spinner", "an int in [-1, 6]")
    if not is_plain_int(match.turn, -1, 3):
        bad("turn", "a seat 0-3 (or -1 between rounds)")
    if not is_plain_int(match.opener, 0, 3):
        bad("opener", "a seat 0-3")
    if not is_plain_int(match.placements, 0, NUM_TILES):
        bad("placements", "an int in [0, 28]")
    if not is_plain_int(match.last_end_sum, 0, 36):
        bad("last_end_sum", "an int in [0, 36]")
    played = 0
    for seat in range(NUM_SEATS):
        if played & match.played_by[seat]:
            bad("played_by", "disjoint tile sets")
        played |= match.played_by[seat]
    if not is_plain_int(match.played) or match.played != played:
        bad("played", "the union of played_by")
    held = 0
    for seat in range(NUM_SEATS):
        if held & match.hands[seat] or played & match.hands[seat]:
            bad("hands", "disjoint from each other and from the played tiles (R1)")
        held |= match.hands[seat]
        if match.hands[seat].bit_count() + match.played_by[seat].bit_count() != HAND_SIZE:
            bad("hands", "7 tiles per seat, held or played (R1)")
    if held | played != ALL_TILES or played.bit_count() != match.placements:
        bad("placements", "the number of tiles played")
    for seat in range(NUM_SEATS):
        if match.hands[seat] & tiles_showing(match.voids[seat]):
            bad("voids", "numbers the seat holds no tile of (a knock shows it lacks them, R6)")
    _check_layout(match, bad)
    if match.turn >= 0 and match.winner is None and not match.truncated:  # a round goes on
        if not all(match.hands):
            bad("hands", "non-empty for every seat while the round goes on (playing the last "
                         "tile ends it, R7)")
        if match.placements and not ALL_TILES & ~match.played & matching_tiles(match.ends):
            bad("ends", "open to some tile still held while the round goes on (a blocked round "
                        "ends, R6)")


def _check_layout(match, bad) -> None:
    """The ends, doubles, branches and spinner fit the tiles played this round (R3-R5)."""
    ends, doubles, started, spinner = (match.ends, match.end_double, match.branch_started,
                                       match.spinner)
    if match.placements == 0:
        if ends != [-1] * 4 or any(doubles) or any(started) or spinner != -1:
            bad("ends", "all closed, with no doubles, branches or spinner, before the first tile")
        if match.last_end_sum != 0:
            bad("last_end_sum", "0 before the first tile")
        return
    halves = [0] * NUM_NUMBERS  # how many halves of the played tiles show each number
    any_double = False  # (the first double played is the spinner, R4)
    for tile in tiles_of(match.played):
        halves[TILE_LOW[tile]] += 1
        halves[TILE_HIGH[tile]] += 1
        any_double |= TILE_LOW[tile] == TILE_HIGH[tile]
    if ends[WEST] < 0 or ends[EAST] < 0:
        bad("ends", "open at west and east once a tile is down (R3)")
    # R4: the first double is the spinner; its branches open together, once both sides are covered
    if (spinner >= 0) != any_double or (spinner >= 0 and not match.played >> DOUBLE_OF[spinner] & 1):
        bad("spinner", "the number of a double played this round, -1 if none was (R4)")
    if started[WEST] or started[EAST] or (ends[NORTH] < 0) != (ends[SOUTH] < 0):
        bad("branch_started", "set only for north/south, whose ends open together (R4)")
    exposed = any(doubles[slot] and ends[slot] == spinner for slot in (WEST, EAST))
    if (ends[NORTH] >= 0) != (spinner >= 0 and not exposed):
        bad("ends", "open at north/south exactly once both straight sides of the spinner are "
                    "covered (R4)")
    for slot in (NORTH, SOUTH):
        if ends[slot] < 0 and (started[slot] or doubles[slot]):
            bad("branch_started", "False on a branch that is not open (R4)")
        if ends[slot] >= 0 and not started[slot] and (ends[slot] != spinner or doubles[slot]):
            bad("ends", "the spinner's number on an open branch with no tile yet (R4)")
    for number in range(NUM_NUMBERS):
        at = [slot for slot in range(4) if doubles[slot] and ends[slot] == number]
        if at and not match.played >> DOUBLE_OF[number] & 1:
            bad("end_double", "set only where that double was played (R5)")
        # one tile per double: at one end, or at both straight ends while it is the exposed spinner
        if len(at) > 2 or (len(at) == 2 and (at != [WEST, EAST] or number != spinner
                                             or ends[NORTH] >= 0 or match.placements != 1)):
            bad("end_double", "one end per double (the opening spinner, alone on the table: "
                              "west and east) (R5)")
        if number != spinner:  # along the lines, halves of a number pair up except at open ends
            open_ends = ends.count(number)
            if halves[number] < open_ends or (halves[number] - open_ends) % 2:
                bad("ends", "numbers the played tiles leave open (R3)")
            # a double that is not the spinner was played on a tile of its number (3 halves),
            # and one no longer at an end has a tile of its number beyond it too (4)
            if match.played >> DOUBLE_OF[number] & 1 and halves[number] < (3 if at else 4):
                bad("played", f"tiles joined to the {number}|{number} (R3)")
    if match.last_end_sum != end_sum(ends, doubles, started):
        bad("last_end_sum", "the end sum of the layout (R5)")
