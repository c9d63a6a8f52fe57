"""Game records: write, read, validate and replay (format ``sevenrocks-record/1``).

A record is plain JSON::

    {"format": "sevenrocks-record/1", "target": 250,
     "rounds": [{"opener": 0, "hands": [["0|1", ...] x 7] x 4,     # as dealt
                 "moves": [{"seat": 0, "action": 17, "tile": "1|4", "slot": 1,
                            "end_sum": 5, "points": 5},
                           {"seat": 1, "action": 112, "pass": true}, ...],
                 "result": "domino" | "blocked" | "won" | null,    # null: round in progress
                 "deductions": [d0, d1, d2, d3],                  # all 0 when "won" (R8)
                 "scores": [team0, team1]}],                      # after the round
     "winner": 0 | 1 | null, "scores": [team0, team1]}

:func:`replay` rebuilds the match move by move with the rules engine and checks every number in
the record against it, so a record is either reproduced exactly or rejected with a
:class:`RecordError` naming the first bad move.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from .rules import DOMINO, Match, apply_action, is_legal, legal_actions
from .tiles import KNOCK, NUM_TILES, describe_action, parse_tile, tile_name, tiles_of

FORMAT = "sevenrocks-record/1"
RESULTS = ("domino", "blocked", "won")


class RecordError(ValueError):
    """A malformed or inconsistent game record."""


def game_record(match: Match) -> dict:
    """The match's history as a record (JSON-serialisable; ints and ``"low|high"`` strings)."""
    if match.history is None:
        raise ValueError("this match keeps no history (built with keep_history=False)")
    rounds = []
    for log in match.history:
        moves = []
        for seat, action, total, points in log.moves:
            if action == KNOCK:
                moves.append({"seat": seat, "action": KNOCK, "pass": True})
            else:
                moves.append({"seat": seat, "action": action, "tile": tile_name(action >> 2),
                              "slot": action & 3, "end_sum": total, "points": points})
        rounds.append({
            "opener": log.opener,
            "hands": [[tile_name(t) for t in tiles_of(hand)] for hand in log.hands],
            "moves": moves,
            "result": log.result,
            "deductions": list(log.deductions),
            "scores": list(log.scores if log.scores is not None else match.scores),
        })
    return {"format": FORMAT, "target": match.target, "rounds": rounds,
            "winner": match.winner, "scores": list(match.scores)}


def save(record: dict, path) -> None:
    Path(path).write_text(json.dumps(record, indent=1) + "\n")


def load(path) -> dict:
    """Read a record file; raises :class:`RecordError` for unreadable JSON or a bad record."""
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError) as error:
        raise RecordError(f"cannot read game record {path}: {error}") from None
    except json.JSONDecodeError as error:
        raise RecordError(f"{path} is not JSON: {error}") from None
    validate(record)
    return record


def validate(record) -> None:
    """Replay the whole record; raises :class:`RecordError` at the first inconsistency."""
    for _ in replay(record):
        pass


def replay(record) -> Iterator[tuple[Match, dict | None, int]]:
    """Yield ``(match, move, round_index)`` at each round's start (``move`` None) and after each move.

    The same :class:`Match` object is yielded each time (mutated in place); clone it to keep a
    state.  Every move, end sum, point, result, deduction and score is checked.
    """
    _check_top_level(record)
    target = record["target"]
    match: Match | None = None
    rounds = record["rounds"]
    for r, rnd in enumerate(rounds):
        where = f"round {r}"
        hands, opener = _check_round_header(rnd, where)
        if match is None:
            match = Match.from_deal(hands, opener, target=target)
        else:
            if not match.awaiting_deal:
                raise RecordError(f"{where}: the previous round had not ended")
            prev = match.history[-1]
            if prev.result == DOMINO and opener != prev.finisher:
                raise RecordError(f"{where}: opener {opener} but seat {prev.finisher} dominoed the "
                                  f"previous round and must open (R2)")
            match.start_round(hands, opener)
        yield match, None, r
        for i, move in enumerate(rnd["moves"]):
            _apply_move(match, move, f"{where}, move {i}")
            yield match, move, r
        _check_round_end(match, rnd, where, last=r == len(rounds) - 1)
    if not _same(record["winner"], match.winner):
        raise RecordError(f"record says winner {record['winner']}, replay gives {match.winner}")
    if not _same(record["scores"], match.scores):
        raise RecordError(f"record says scores {record['scores']}, replay gives {match.scores}")


def _check_top_level(record) -> None:
    if not isinstance(record, dict):
        raise RecordError(f"a game record is a JSON object, got {type(record).__name__}")
    if record.get("format") != FORMAT:
        raise RecordError(f"unknown record format {record.get('format')!r}; expected {FORMAT!r}")
    missing = {"target", "rounds", "winner", "scores"} - record.keys()
    if missing:
        raise RecordError(f"record is missing keys {sorted(missing)}")
    if not _is_int(record["target"]) or record["target"] <= 0:
        raise RecordError(f"target must be a positive int, got {record['target']!r}")
    if not isinstance(record["rounds"], list) or not record["rounds"]:
        raise RecordError("'rounds' must be a non-empty list (a match starts with round 0)")
    if not (record["winner"] is None or _is_int(record["winner"]) and record["winner"] in (0, 1)):
        raise RecordError(f"winner must be 0, 1 or null, got {record['winner']!r}")
    _check_pair(record["scores"], "scores")


def _check_round_header(rnd, where: str) -> tuple[list[int], int]:
    if not isinstance(rnd, dict):
        raise RecordError(f"{where}: a round is a JSON object")
    missing = {"opener", "hands", "moves", "result", "deductions", "scores"} - rnd.keys()
    if missing:
        raise RecordError(f"{where}: missing keys {sorted(missing)}")
    if rnd["opener"] not in (0, 1, 2, 3) or not _is_int(rnd["opener"]):
        raise RecordError(f"{where}: opener must be a seat 0-3, got {rnd['opener']!r}")
    hands = rnd["hands"]
    if not isinstance(hands, list) or len(hands) != 4:
        raise RecordError(f"{where}: 'hands' must be four lists of tiles")
    masks, seen = [], 0
    for seat, hand in enumerate(hands):
        if not isinstance(hand, list) or len(hand) != 7:
            raise RecordError(f"{where}: seat {seat}'s hand must list 7 tiles")
        mask = 0
        for text in hand:
            try:
                tile = parse_tile(str(text))
            except ValueError as error:
                raise RecordError(f"{where}: seat {seat}'s hand: {error}") from None
            if (seen | mask) >> tile & 1:
                raise RecordError(f"{where}: tile {tile_name(tile)} dealt twice")
            mask |= 1 << tile
        seen |= mask
        masks.append(mask)
    assert seen == (1 << NUM_TILES) - 1  # 28 distinct tiles in 4 x 7
    if not isinstance(rnd["moves"], list):
        raise RecordError(f"{where}: 'moves' must be a list")
    return masks, rnd["opener"]


def _apply_move(match: Match, move, where: str) -> None:
    if match.over or match.awaiting_deal:
        raise RecordError(f"{where}: a move after the round or match ended")
    if not isinstance(move, dict) or "seat" not in move or "action" not in move:
        raise RecordError(f"{where}: a move is an object with 'seat' and 'action'")
    seat, action = move["seat"], move["action"]
    if seat != match.turn or not _is_int(seat):
        raise RecordError(f"{where}: seat {seat!r} moved but it is seat {match.turn}'s turn")
    if not _is_int(action) or not is_legal(match, action):
        legal = ", ".join(f"{a} ({describe_action(a)})" for a in legal_actions(match))
        shown = f"{action} ({describe_action(action)})" if _is_int(action) and 0 <= action <= KNOCK \
            else repr(action)
        raise RecordError(f"{where}: illegal action {shown} for seat {seat}; legal: [{legal}]")
    if action == KNOCK:
        if move.get("pass") is not True or set(move) != {"seat", "action", "pass"}:
            raise RecordError(f"{where}: a knock is exactly {{seat, action: 112, pass: true}}")
        apply_action(match, action)
        return
    expected_tile, expected_slot = tile_name(action >> 2), action & 3
    if move.get("tile") != expected_tile or not _same(move.get("slot"), expected_slot):
        raise RecordError(f"{where}: action {action} is {expected_tile} at slot {expected_slot}, "
                          f"but the move says tile {move.get('tile')!r} slot {move.get('slot')!r}")
    points = apply_action(match, action)
    if not (_same(move.get("end_sum"), match.last_end_sum) and _same(move.get("points"), points)):
        raise RecordError(f"{where}: {describe_action(action)} gives end sum {match.last_end_sum} "
                          f"and {points} points (R5), the record says {move.get('end_sum')!r} "
                          f"and {move.get('points')!r}")


def _check_round_end(match: Match, rnd: dict, where: str, last: bool) -> None:
    log = match.history[-1]
    if rnd["result"] is not None and rnd["result"] not in RESULTS:
        raise RecordError(f"{where}: result must be one of {RESULTS} or null, got {rnd['result']!r}")
    if rnd["result"] != log.result:
        raise RecordError(f"{where}: record says result {rnd['result']!r}, replay gives {log.result!r}")
    if log.result is None and not last:
        raise RecordError(f"{where}: an unfinished round must be the last one")
    _check_pair(rnd["scores"], f"{where}: scores")
    if not isinstance(rnd["deductions"], list) or len(rnd["deductions"]) != 4:
        raise RecordError(f"{where}: deductions must be four ints, got {rnd['deductions']!r}")
    deductions = log.deductions
    if not _same(rnd["deductions"], deductions):
        raise RecordError(f"{where}: record says deductions {rnd['deductions']}, "
                          f"R7 gives {deductions}")
    scores = log.scores if log.scores is not None else match.scores
    if not _same(rnd["scores"], list(scores)):
        raise RecordError(f"{where}: record says scores {rnd['scores']}, replay gives {scores}")


def _check_pair(value, what: str) -> None:
    if not isinstance(value, list) or len(value) != 2 or not all(_is_int(v) for v in value):
        raise RecordError(f"{what} must be two ints, got {value!r}")


def _same(value, expected) -> bool:
    """``value == expected`` with ints meant as ints: JSON ``true`` or ``4.0`` are not ``1``, ``4``."""
    if expected is None:
        return value is None
    if isinstance(expected, list):
        return isinstance(value, list) and len(value) == len(expected) and all(
            _same(v, e) for v, e in zip(value, expected))
    if isinstance(expected, int):
        return _is_int(value) and value == expected
    return value == expected


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
