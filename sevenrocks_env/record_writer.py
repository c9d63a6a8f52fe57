"""Building game records (format ``sevenrocks-record/1``, see :mod:`sevenrocks_env.record`).

:func:`game_record` writes a :class:`~sevenrocks_env.rules.Match`'s history as a record;
:func:`record_dict` and :func:`round_entry` are the pieces it is made of, shared with the batched
engine's writer (:mod:`sevenrocks_env.batched.records`), so both engines' records have one shape.
A record is plain JSON: ints and ``"low|high"`` tile strings.  Reading, validating (a replay
through the rules engine), saving and loading records is :mod:`sevenrocks_env.record`'s, which
re-exports these names.
"""

from __future__ import annotations

from .match_state import MAX_ROUNDS, starting_round, starting_scores
from .rules import Match, checked_match
from .tiles import KNOCK, TILE_NAMES, tiles_of

FORMAT = "sevenrocks-record/1"


def game_record(match: Match, ended_only: bool = False) -> dict:
    """The match's history as a record (JSON-serialisable; ints and ``"low|high"`` strings).

    ``ended_only``: the rounds that have ended, with the scores the last of them ended at (a
    round in progress shows every dealt hand: what a player may have mid-match, R1)."""
    if checked_match(match).history is None:
        raise ValueError("this match keeps no history (built with keep_history=False, or by "
                         "Match.from_state), so it has no record")
    start = starting_scores(match)
    if start != [0, 0]:  # (every record replays from 0-0: validate would refuse it)
        raise ValueError(f"this match's history starts at scores {start}, not 0-0 (dealt with "
                         "scores, or edited), so it has no record")
    if starting_round(match) != 0:  # (its record would miscount the rounds: max_rounds, R8)
        raise ValueError(f"this match's history starts at round {starting_round(match)}, not "
                         "the first (dealt with round_index, or edited), so it has no record")
    logs = [log for log in match.history if log.result is not None] if ended_only \
        else match.history
    if len(logs) > MAX_ROUNDS:  # (validate and save refuse such a record)
        raise ValueError(f"this match has {len(logs)} rounds, more than the {MAX_ROUNDS} a "
                         "record holds (a match without a round limit played on that long)")
    rounds = [round_entry(log.opener, log.hands, log.moves, log.result, log.deductions,
                          log.scores if log.scores is not None else match.scores)
              for log in logs]
    scores = logs[-1].scores if ended_only and logs else match.scores
    return record_dict(match.target, rounds, match.winner, scores, match.max_rounds)


def record_dict(target: int, rounds: list[dict], winner: int | None, scores,
                max_rounds: int | None) -> dict:
    """A record from its parts (shared by both engines' writers)."""
    record = {"format": FORMAT, "target": target, "rounds": rounds, "winner": winner,
              "scores": list(scores)}
    if max_rounds is not None:
        record["max_rounds"] = max_rounds
    return record


def round_entry(opener: int, hands, moves, result: str | None, deductions, scores) -> dict:
    """One round of a record (shared by both engines' writers): ``hands`` as dealt (bitmasks),
    ``moves`` as ``(seat, action, end_sum, points)``, ``result`` one of
    :data:`sevenrocks_env.record.RESULTS` or None."""
    names = TILE_NAMES  # (the batched engine writes thousands of records a second)
    return {
        "opener": opener,
        "hands": [[names[t] for t in tiles_of(hand)] for hand in hands],
        "moves": [{"seat": seat, "action": KNOCK, "pass": True} if action == KNOCK else
                  {"seat": seat, "action": action, "tile": names[action >> 2],
                   "slot": action & 3, "end_sum": total, "points": points}
                  for seat, action, total, points in moves],
        "result": result,
        "deductions": list(deductions),
        "scores": list(scores),
    }
