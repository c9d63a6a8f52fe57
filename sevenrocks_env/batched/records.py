"""Game records (``sevenrocks-record/1``) of the batched engine's matches, from its own numbers.

Each env keeps a CPU log of its current match: per round the hands as dealt, the opener, every
move as ``(seat, action, end_sum, points)`` the engine computed, and the round's result,
deductions and scores.  A finished match becomes a record dict; ``record.validate`` replaying it
with the scalar engine is then an independent check of the batched one.
"""

from __future__ import annotations

from ..record import FORMAT
from ..tiles import KNOCK, tile_name, tiles_of
from .engine import BLOCKED, DOMINO, WON, StepEvents

_RESULT_NAMES = {DOMINO: "domino", BLOCKED: "blocked", WON: "won"}


def _round(opener: int, hands) -> dict:
    return {"opener": opener, "hands": list(hands), "moves": [], "result": None,
            "deductions": [0, 0, 0, 0], "scores": None}


def _starting_scores(match) -> list[int]:
    """The scores the match's history started from (a record replays from 0-0)."""
    scores = list(match.scores)
    for log in match.history:
        for seat, _, _, points in log.moves:
            scores[seat & 1] -= points
        scores[0] += log.deductions[0] + log.deductions[2]
        scores[1] += log.deductions[1] + log.deductions[3]
    return scores


class RecordKeeper:
    """Per-env move logs, turned into record dicts when a match ends."""

    def __init__(self, num_envs: int, target: int):
        self.target = target
        self.rounds: list[list[dict] | None] = [[] for _ in range(num_envs)]
        self.finished: list[tuple[int, dict]] = []

    def start(self, envs, hands, openers) -> None:
        """Fresh matches in ``envs`` (lists of ints) with these first deals."""
        for env, hand, opener in zip(envs, hands, openers):
            self.rounds[env] = [_round(opener, hand)]

    def load(self, env: int, match) -> None:
        """Continue the log of a loaded ``rules.Match``: from its history if it has one that
        starts at 0-0, else the env keeps no record of this match (it cannot be replayed)."""
        history = match.history
        if not history or _starting_scores(match) != [0, 0]:
            self.rounds[env] = None
            return
        rounds = []
        for log in history:
            rounds.append({"opener": log.opener, "hands": list(log.hands),
                           "moves": list(log.moves), "result": None,
                           "deductions": list(log.deductions),
                           "scores": None if log.scores is None else list(log.scores)})
            if log.result is not None:
                rounds[-1]["result"] = {"domino": DOMINO, "blocked": BLOCKED, "won": WON}[
                    log.result]
        self.rounds[env] = rounds

    def log(self, actions, events: StepEvents) -> None:
        """Append every env's move, then close the rounds and matches that ended."""
        moves = zip(events.seat.tolist(), actions.tolist(), events.end_sum.tolist(),
                    events.points.tolist())
        for rounds, move in zip(self.rounds, moves):
            if rounds is not None:
                rounds[-1]["moves"].append(move)
        if not events.rows.numel():
            return
        columns = zip(events.rows.tolist(), events.result.tolist(), events.deductions.tolist(),
                      events.round_scores.tolist(), events.match_over.tolist(),
                      events.winner.tolist(), events.new_hands.tolist(),
                      events.new_opener.tolist())
        for env, result, deductions, scores, over, winner, hands, opener in columns:
            rounds = self.rounds[env]
            if rounds is not None:
                current = rounds[-1]
                current.update(result=result, deductions=deductions, scores=scores)
                if over:
                    self.finished.append((env, self._record(rounds, winner, scores)))
            if over:
                self.rounds[env] = [_round(opener, hands)]
            elif rounds is not None:
                rounds.append(_round(opener, hands))

    def _record(self, rounds: list[dict], winner: int, scores: list[int]) -> dict:
        out = []
        for rnd in rounds:
            moves = []
            for seat, action, total, points in rnd["moves"]:
                if action == KNOCK:
                    moves.append({"seat": seat, "action": KNOCK, "pass": True})
                else:
                    moves.append({"seat": seat, "action": action, "tile": tile_name(action >> 2),
                                  "slot": action & 3, "end_sum": total, "points": points})
            out.append({"opener": rnd["opener"],
                        "hands": [[tile_name(t) for t in tiles_of(h)] for h in rnd["hands"]],
                        "moves": moves, "result": _RESULT_NAMES[rnd["result"]],
                        "deductions": rnd["deductions"], "scores": rnd["scores"]})
        return {"format": FORMAT, "target": self.target, "rounds": out,
                "winner": None if winner < 0 else winner, "scores": list(scores)}

    def pop(self) -> list[tuple[int, dict]]:
        finished, self.finished = self.finished, []
        return finished


__all__ = ["RecordKeeper"]
