"""Game records: read, validate, replay and save them (format ``sevenrocks-record/1``).

A record is plain JSON::

    {"format": "sevenrocks-record/1", "target": 250,
     "rounds": [{"opener": 0, "hands": [["0|1", ...] x 7] x 4,     # as dealt
                 "moves": [{"seat": 0, "action": 17, "tile": "1|4", "slot": 1,
                            "end_sum": 5, "points": 5},
                           {"seat": 1, "action": 112, "pass": true}, ...],
                 "result": "domino" | "blocked" | "won" | null,    # null: round in progress
                 "deductions": [d0, d1, d2, d3],                  # all 0 when "won" (R8)
                 "scores": [team0, team1]}],                      # after the round
     "winner": 0 | 1 | null, "scores": [team0, team1],
     "max_rounds": 100}                                            # optional: the round limit

``max_rounds`` is there when the match was played with a round limit (the envs' and the arena's
``max_rounds``; not a rule of the game): a match with no winner after that many rounds was cut
off there, and its record says so (:func:`cut_off`).  Without it, a record with no winner is a
match still in progress.

:func:`replay` rebuilds the match move by move with the rules engine and checks every number in
the record against it, so a record is either reproduced exactly or rejected with a
:class:`RecordError` naming the first bad move.  Records are built (:func:`game_record`,
:func:`record_dict`, :func:`round_entry`, and :data:`FORMAT`) by
:mod:`sevenrocks_env.record_writer`; this module re-exports them.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Iterator

from .atomic_file import atomic_path
from .checks import is_plain_int, shown, shown_kind
from .match_state import MAX_ROUND_MOVES, MAX_ROUNDS, MAX_TARGET  # noqa: F401 (a record's bounds)
from .record_writer import FORMAT, game_record, record_dict, round_entry  # noqa: F401  (re-exported)
from .rules import Match, apply_action, is_legal, legal_actions
from .textfile import read_text, shown_path
from .tiles import KNOCK, NUM_TILES, describe_action, parse_tile, tile_name

RESULTS = ("domino", "blocked", "won")

# Records come from other people: every number that sizes work is bounded before it is used.
# MAX_TARGET and MAX_ROUNDS (every match's bounds: match_state) are re-exported from here.
#: Most moves a round can have (``match_state.MAX_ROUND_MOVES``, 112: R6).
MAX_MOVES_PER_ROUND = MAX_ROUND_MOVES
#: The keys of a record, of a round and of a placement move, exactly (a knock is exactly
#: ``seat``, ``action``, ``pass``): a key this format does not have is refused, not ignored.
RECORD_KEYS = frozenset({"format", "target", "rounds", "winner", "scores"})
OPTIONAL_RECORD_KEYS = frozenset({"max_rounds"})
ROUND_KEYS = frozenset({"opener", "hands", "moves", "result", "deductions", "scores"})
PLACEMENT_KEYS = frozenset({"seat", "action", "tile", "slot", "end_sum", "points"})
#: Largest record file read (a 1000-round record is about 10 MB of indented JSON).
MAX_RECORD_BYTES = 32 * 2**20
#: Largest absolute score or deduction a record may state.
MAX_POINTS = 10**6
#: Most JSON values a record's text may hold, counted before parsing as its ``,``, ``[`` and
#: ``{`` characters (an over-count: a value follows a comma or opens its container). A record at
#: every bound (1000 rounds of 28 placements and 88 knocks) has under 600,000; without this
#: bound 32 MB of ``[{},{},...]`` parsed into about 870 MB of empty dicts before being refused.
MAX_JSON_VALUES = 1_000_000


#: JSON's names of the values ``json.loads`` makes (in messages about a record's shape).
JSON_TYPES = {type(None): "null", bool: "a boolean", int: "a number", float: "a number",
              str: "a string", list: "an array"}


class RecordError(ValueError):
    """A malformed or inconsistent game record."""


def cut_off(record: dict) -> bool:
    """Whether a (valid) record's match ended at its round limit with no winner."""
    limit = record.get("max_rounds")
    return (record["winner"] is None and limit is not None and len(record["rounds"]) == limit
            and record["rounds"][-1]["result"] is not None)


def ending(record: dict) -> str:
    """How a (valid) record's match ended, in words: ``"won by team 1"``, ``"no winner: cut off
    by its round limit (max_rounds 100)"`` or ``"no winner: unfinished"`` (``replay --check`` and
    the web page's replay say it)."""
    if record["winner"] is not None:
        return f"won by team {record['winner']}"
    if cut_off(record):
        return f"no winner: cut off by its round limit (max_rounds {record['max_rounds']})"
    return "no winner: unfinished"


def save(record: dict, path) -> None:
    """Write ``record`` to ``path`` as JSON, its folders made if missing; a record
    :func:`validate` refuses is a :class:`RecordError` and writes nothing (a file :func:`load`
    would refuse).  An interrupted save leaves the old file, never half a record
    (:func:`sevenrocks_env.atomic_file.atomic_path`).  A device or pipe that exists
    (``/dev/null``: keep no record) is written into, never replaced.  A file where a folder of
    ``path`` should be is a ``NotADirectoryError`` saying so."""
    validate(record)
    text = json.dumps(record, indent=1) + "\n"
    path = Path(path)
    if path.exists() and not path.is_file() and not path.is_dir():
        path.write_text(text)
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):  # "[Errno 17] File exists" named no reason
        raise NotADirectoryError(f"cannot save the record to {path}: {path.parent} or a folder "
                                 "above it is a file, not a folder") from None
    with atomic_path(path) as partial:
        partial.write_text(text)


def load(path) -> dict:
    """Read a record file; raises :class:`RecordError` for unreadable JSON or a bad record.

    The file is untrusted: its size is bounded (:data:`MAX_RECORD_BYTES`), it must be JSON
    text (:func:`~sevenrocks_env.textfile.decoded`: UTF-8, UTF-16 or UTF-32) without
    ``NaN``/``Infinity``, and nesting too deep for the parser is refused.
    """
    try:
        text = read_text(path, MAX_RECORD_BYTES, "game record")
    except ValueError as error:
        raise RecordError(str(error)) from None
    try:
        record = parse(text)
        validate(record)
    except RecordError as error:  # every error line names the file
        raise RecordError(f"{shown_path(path)}: {error}") from None
    return record


def unique_keys(pairs: list) -> dict:
    """``object_pairs_hook`` for ``json.loads`` refusing a key given twice in one object (JSON
    readers differ on which one wins, so two tools could read one file differently)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise ValueError(f"key {shown(twice)} given twice in one object")
    return out


def parse(text: str):
    """JSON text -> Python value, refusing ``NaN``/``Infinity``, over-long integers, a key given
    twice, nesting too deep to parse and more than :data:`MAX_JSON_VALUES` values, with
    :class:`RecordError`."""
    def no_constant(name):
        raise RecordError(f"is not JSON: {name} is not a JSON number")

    def finite(text):  # 1e400 would be read as inf
        value = float(text)
        if not math.isfinite(value):
            raise RecordError(f"is not a game record: the number {text[:40]} is out of range")
        return value
    values = text.count(",") + text.count("[") + text.count("{")
    if values > MAX_JSON_VALUES:
        raise RecordError(f"is not a game record: more than {MAX_JSON_VALUES:,} JSON values "
                          f"({values:,} ',', '[' and '{{' characters; a 1000-round record has "
                          "under 600,000)")
    try:
        return json.loads(text, parse_constant=no_constant, parse_float=finite,
                          object_pairs_hook=unique_keys)
    except RecordError:  # no_constant's and finite's own words
        raise
    except json.JSONDecodeError as error:
        raise RecordError(f"is not JSON: {error}") from None
    except RecursionError:
        raise RecordError("is not a game record: JSON nested too deeply") from None
    except ValueError as error:  # e.g. an integer of more than 4300 digits
        if "integer string conversion" in str(error):
            raise RecordError("is not a game record: it holds an integer of more than "
                              f"{sys.get_int_max_str_digits()} digits") from None
        raise RecordError(f"is not a game record: {str(error)[:80]}") from None


def validate(record) -> None:
    """Replay the whole record; raises :class:`RecordError` at the first inconsistency.

    Any Python value is accepted as input: whatever it is (deeply nested, huge ints, NaN, wrong
    types), the result is either success or a :class:`RecordError` with a short message.
    """
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
            match = Match.from_deal(hands, opener, target=target,
                                    max_rounds=record.get("max_rounds"))
        else:
            if match.over:
                why = (f": team {match.winner} had won it (R8)" if match.winner is not None
                       else f": no winner after max_rounds {match.max_rounds} rounds")
                raise RecordError(f"{where}: the match had already ended{why}; no round follows")
            if not match.awaiting_deal:
                raise RecordError(f"{where}: the previous round had not ended")
            try:  # (the hands were checked above: what is left is R2's opener after a domino)
                match.start_round(hands, opener)
            except ValueError as problem:  # (start_round names itself: not the record's words)
                reason = str(problem).removeprefix("start_round: ")
                raise RecordError(f"{where}: {reason} (see docs/rules.md)") from None
        yield match, None, r
        for i, move in enumerate(rnd["moves"]):
            _apply_move(match, move, f"{where}, move {i}")
            yield match, move, r
        _check_round_end(match, rnd, where, last=r == len(rounds) - 1)
    if not _same(record["winner"], match.winner):
        raise RecordError(f"record says winner {record['winner']}, replay gives {match.winner}")
    if not _same(record["scores"], match.scores):
        raise RecordError(f"record says scores {record['scores']}, replay gives {match.scores}")


def _exact_keys(value: dict, keys: frozenset, where: str,
                optional: frozenset = frozenset()) -> None:
    missing, unknown = keys - value.keys(), value.keys() - keys - optional
    if missing or unknown:
        wrong = [f"{what} keys {shown(sorted(map(_key_text, found)))}"
                 for what, found in (("missing", missing), ("unknown", unknown)) if found]
        also = f" (and optionally {sorted(optional)})" if optional else ""
        raise RecordError(f"{where}: {', '.join(wrong)}; expected exactly {sorted(keys)}{also}")


def _key_text(key) -> str:
    """A key as text for a message: a JSON key is a str; any other (a record built in Python)
    is :func:`shown`, never its own ``__str__``."""
    return key if isinstance(key, str) else shown(key)


def _check_top_level(record) -> None:
    if not isinstance(record, dict):
        kind = JSON_TYPES.get(type(record), type(record).__name__)  # what JSON calls it
        raise RecordError(f"a game record is a JSON object, got {kind}")
    if not (isinstance(record.get("format"), str) and record["format"] == FORMAT):
        raise RecordError(f"unknown record format {shown(record.get('format'))}; "
                          f"expected {FORMAT!r}")
    _exact_keys(record, RECORD_KEYS, "record", OPTIONAL_RECORD_KEYS)
    if "max_rounds" in record and not is_plain_int(record["max_rounds"], 1, MAX_ROUNDS):
        raise RecordError(f"max_rounds must be an int in [1, {MAX_ROUNDS}], "
                          f"got {shown_kind(record['max_rounds'])}")
    if not is_plain_int(record["target"], 1, MAX_TARGET):
        raise RecordError(f"target must be an int in [1, {MAX_TARGET}], "
                          f"got {shown_kind(record['target'])}")
    if not isinstance(record["rounds"], list) or not record["rounds"]:
        raise RecordError("'rounds' must be a non-empty list (a match starts with round 0)")
    if len(record["rounds"]) > MAX_ROUNDS:
        raise RecordError(f"record has {len(record['rounds'])} rounds; at most {MAX_ROUNDS} "
                          "are read")
    if not (record["winner"] is None or is_plain_int(record["winner"], 0, 1)):
        raise RecordError(f"winner must be 0, 1 or null, got {shown_kind(record['winner'])}")
    _check_pair(record["scores"], "scores")


def _check_round_header(rnd, where: str) -> tuple[list[int], int]:
    if not isinstance(rnd, dict):
        raise RecordError(f"{where}: a round is a JSON object")
    _exact_keys(rnd, ROUND_KEYS, where)
    if not is_plain_int(rnd["opener"], 0, 3):
        raise RecordError(f"{where}: opener must be a seat 0-3, got {shown_kind(rnd['opener'])}")
    hands = rnd["hands"]
    if not isinstance(hands, list) or len(hands) != 4:
        raise RecordError(f"{where}: 'hands' must be four lists of tiles")
    masks, seen = [], 0
    for seat, hand in enumerate(hands):
        if not isinstance(hand, list) or len(hand) != 7:
            raise RecordError(f"{where}: seat {seat}'s hand must list 7 tiles")
        mask = 0
        for text in hand:
            if not (isinstance(text, str) and len(text) <= 8):
                raise RecordError(f"{where}: seat {seat}'s hand: a tile is a string like "
                                  f"'3|5', got {shown(text)}")
            try:
                tile = parse_tile(text)
            except ValueError as error:
                raise RecordError(f"{where}: seat {seat}'s hand: {error}") from None
            if text != tile_name(tile):  # one spelling, as in the moves: readers compare strings
                raise RecordError(f"{where}: seat {seat}'s hand: write tile {shown(text)} as "
                                  f"'{tile_name(tile)}' (low|high)")
            if (seen | mask) >> tile & 1:
                raise RecordError(f"{where}: tile {tile_name(tile)} dealt twice")
            mask |= 1 << tile
        seen |= mask
        masks.append(mask)
    assert seen == (1 << NUM_TILES) - 1  # 28 distinct tiles in 4 x 7
    if not isinstance(rnd["moves"], list):
        raise RecordError(f"{where}: 'moves' must be a list")
    if len(rnd["moves"]) > MAX_MOVES_PER_ROUND:
        raise RecordError(f"{where}: {len(rnd['moves'])} moves; a round has at most "
                          f"{MAX_MOVES_PER_ROUND} (R6, see docs/rules.md)")
    return masks, rnd["opener"]


def _apply_move(match: Match, move, where: str) -> None:
    if match.over or match.awaiting_deal:
        raise RecordError(f"{where}: a move after the round or match ended")
    if not isinstance(move, dict) or "seat" not in move or "action" not in move:
        raise RecordError(f"{where}: a move is an object with 'seat' and 'action'")
    seat, action = move["seat"], move["action"]
    if not is_plain_int(seat, 0, 3):
        raise RecordError(f"{where}: seat must be an int 0-3, got {shown_kind(seat)}")
    if seat != match.turn:
        raise RecordError(f"{where}: seat {shown(seat)} moved but it is seat {match.turn}'s turn")
    if not is_plain_int(action):  # 12.0 or a NumPy int: a type error, not an illegal move
        raise RecordError(f"{where}: action must be an int 0-{KNOCK}, got {shown_kind(action)}")
    if not 0 <= action <= KNOCK or not is_legal(match, action):
        legal = ", ".join(f"{a} ({describe_action(a)})" for a in legal_actions(match))
        text = f"{action} ({describe_action(action)})" if 0 <= action <= KNOCK \
            else f"{shown_kind(action)} (an action is an int 0-{KNOCK})"
        raise RecordError(f"{where}: illegal action {text} for seat {seat}; legal: [{legal}]")
    if action == KNOCK:
        if move.get("pass") is not True or set(move) != {"seat", "action", "pass"}:
            raise RecordError(f"{where}: a knock is exactly {{seat, action: 112, pass: true}}")
        apply_action(match, action)
        return
    _exact_keys(move, PLACEMENT_KEYS, f"{where}: a placement")
    expected_tile, expected_slot = tile_name(action >> 2), action & 3
    if not (_same(move.get("tile"), expected_tile) and _same(move.get("slot"), expected_slot)):
        raise RecordError(f"{where}: action {action} is {expected_tile} at slot {expected_slot}, "
                          f"but the move says tile {shown(move.get('tile'))} slot "
                          f"{shown_kind(move.get('slot'))}")
    if not all(is_plain_int(move.get(key), 0) for key in ("end_sum", "points")):
        raise RecordError(f"{where}: end_sum and points must be ints >= 0, got "
                          f"{shown_kind(move.get('end_sum'))} and "
                          f"{shown_kind(move.get('points'))}")
    points = apply_action(match, action)
    if not (_same(move.get("end_sum"), match.last_end_sum) and _same(move.get("points"), points)):
        raise RecordError(f"{where}: {describe_action(action)} gives end sum {match.last_end_sum} "
                          f"and {points} points (R5, see docs/rules.md), the record says "
                          f"{shown(move.get('end_sum'))} and {shown(move.get('points'))}")


def _check_round_end(match: Match, rnd: dict, where: str, last: bool) -> None:
    log = match.history[-1]
    if not (rnd["result"] is None or isinstance(rnd["result"], str) and rnd["result"] in RESULTS):
        raise RecordError(f"{where}: result must be one of {RESULTS} or null, "
                          f"got {shown(rnd['result'])}")
    if rnd["result"] != log.result:
        raise RecordError(f"{where}: record says result {rnd['result']!r}, "
                          f"replay gives {log.result!r}")
    if log.result is None and not last:
        raise RecordError(f"{where}: an unfinished round must be the last one")
    _check_pair(rnd["scores"], f"{where}: scores")
    if not (isinstance(rnd["deductions"], list) and len(rnd["deductions"]) == 4
            and all(is_plain_int(d, -MAX_POINTS, MAX_POINTS) for d in rnd["deductions"])):
        raise RecordError(f"{where}: deductions must be four ints, got "
                          f"{shown_kind(rnd['deductions'])}")
    deductions = log.deductions
    if not _same(rnd["deductions"], deductions):
        raise RecordError(f"{where}: record says deductions {rnd['deductions']}, "
                          f"R7 of docs/rules.md gives {deductions}")
    scores = log.scores if log.scores is not None else match.scores
    if not _same(rnd["scores"], list(scores)):
        raise RecordError(f"{where}: record says scores {rnd['scores']}, replay gives {scores}")


def _check_pair(value, what: str) -> None:
    if not (isinstance(value, list) and len(value) == 2
            and all(is_plain_int(v, -MAX_POINTS, MAX_POINTS) for v in value)):
        raise RecordError(f"{what} must be two ints (|n| <= {MAX_POINTS}), got {shown_kind(value)}")


def _same(value, expected) -> bool:
    """``value == expected`` with ints meant as ints: JSON ``true`` or ``4.0`` are not ``1``, ``4``."""
    if expected is None:
        return value is None
    if isinstance(expected, list):
        return isinstance(value, list) and len(value) == len(expected) and all(
            _same(v, e) for v, e in zip(value, expected))
    if isinstance(expected, int):
        return is_plain_int(value) and value == expected
    if isinstance(expected, str):  # (a NumPy array's == is an array, not a bool)
        return isinstance(value, str) and value == expected
    return value == expected

