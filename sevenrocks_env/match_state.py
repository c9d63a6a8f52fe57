"""Validation of a :class:`~sevenrocks_env.rules.Match` rebuilt from plain values (R1).

``Match.from_state`` calls :func:`check_match_state` on every state it builds: the state may
come from an untrusted file (a training checkpoint, a search request), so every field must have
the right type and range, and the hands and played tiles must partition the 28 tiles.
"""

from __future__ import annotations

from .tiles import ALL_TILES, NUM_SEATS, NUM_TILES


def _is_int(value, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


def check_match_state(match) -> None:
    """Raise ``ValueError`` naming the first field of ``match`` that no real match can have."""
    def bad(name: str, what: str):
        from .record import shown  # bounded repr (record imports rules, which imports us)
        raise ValueError(f"match state: {name} must be {what}, got {shown(getattr(match, name))}")

    big = 10 ** 9
    if match.seed is not None and not _is_int(match.seed, 0, 2 ** 64):
        bad("seed", "None or an int in [0, 2**64]")
    if not _is_int(match.target, 1, big):
        bad("target", f"an int in [1, {big}]")
    if match.max_rounds is not None and not _is_int(match.max_rounds, 1, big):
        bad("max_rounds", f"None or an int in [1, {big}]")
    if not (isinstance(match.scores, list) and len(match.scores) == 2
            and all(_is_int(v, -big, big) for v in match.scores)):
        bad("scores", "two ints")
    if match.winner is not None and not _is_int(match.winner, 0, 1):
        bad("winner", "None, 0 or 1")
    if type(match.truncated) is not bool:
        bad("truncated", "a bool")
    # R8: a partnership wins the moment a placement takes it to the target; deductions only lower
    if match.winner is None and max(match.scores) >= match.target:
        bad("scores", "below the target while no partnership has won (R8)")
    if match.winner is not None and match.scores[match.winner] < match.target:
        bad("scores", "at the target for the winner (R8)")
    if not _is_int(match.round_index, 0, big):
        bad("round_index", "a non-negative int")
    for name in ("hands", "played_by", "voids"):
        value = getattr(match, name)
        limit = ALL_TILES if name != "voids" else (1 << 7) - 1
        if not (isinstance(value, list) and len(value) == NUM_SEATS
                and all(_is_int(v, 0, limit) for v in value)):
            bad(name, "four bitmasks")
    if not (isinstance(match.ends, list) and len(match.ends) == 4
            and all(_is_int(v, -1, 6) for v in match.ends)):
        bad("ends", "four ints in [-1, 6]")
    for name in ("end_double", "branch_started"):
        value = getattr(match, name)
        if not (isinstance(value, list) and len(value) == 4 and all(type(v) is bool for v in value)):
            bad(name, "four bools")
    if not _is_int(match.spinner, -1, 6):
        bad("spinner", "an int in [-1, 6]")
    if not _is_int(match.turn, -1, 3):
        bad("turn", "a seat 0-3 (or -1 between rounds)")
    if not _is_int(match.opener, 0, 3):
        bad("opener", "a seat 0-3")
    if not _is_int(match.placements, 0, NUM_TILES):
        bad("placements", "an int in [0, 28]")
    if not _is_int(match.last_end_sum, 0, 36):
        bad("last_end_sum", "an int in [0, 36]")
    played = 0
    for seat in range(NUM_SEATS):
        if played & match.played_by[seat]:
            bad("played_by", "disjoint tile sets")
        played |= match.played_by[seat]
    if type(match.played) is not int or match.played != played:
        bad("played", "the union of played_by")
    held = 0
    for seat in range(NUM_SEATS):
        if held & match.hands[seat] or played & match.hands[seat]:
            bad("hands", "disjoint from each other and from the played tiles (R1)")
        held |= match.hands[seat]
        if match.hands[seat].bit_count() + match.played_by[seat].bit_count() != 7:
            bad("hands", "7 tiles per seat, held or played (R1)")
    if held | played != ALL_TILES or played.bit_count() != match.placements:
        bad("placements", "the number of tiles played")
