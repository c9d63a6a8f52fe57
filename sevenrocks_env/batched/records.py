"""Game records (``sevenrocks-record/1``) of the batched engine's matches, from its own numbers.

Every step appends one ``[B, 4]`` row ``(seat, action, end_sum, points)`` -- what the engine
computed -- to a CPU move log shared by all envs; per env only the current match's rounds are
kept (hands as dealt, opener, the log rows where the round began and ended, result, deductions,
scores).  A finished match becomes a record dict; ``record.validate`` replaying it with the
scalar engine is then an independent check of the batched one.  A match that goes past the
rounds a record may hold (``record.MAX_ROUNDS``, only possible with ``max_rounds=None``) keeps no
record, like a match loaded without its history.
"""

from __future__ import annotations

import numpy as np

from ..match_state import replays_to_its_state
from ..record import MAX_ROUNDS, record_dict, round_entry
from .engine import BLOCKED, DOMINO, WON, StepEvents

_RESULT_NAMES = {DOMINO: "domino", BLOCKED: "blocked", WON: "won"}
_RESULT_CODES = {name: code for code, name in _RESULT_NAMES.items()}


class RecordKeeper:
    """The shared move log and per-env round lists, turned into record dicts when a match ends."""

    def __init__(self, num_envs: int, target: int, max_rounds: int | None):
        self.target, self.max_rounds = target, max_rounds
        self.num_envs = num_envs
        self.log = np.zeros((64, num_envs, 4), np.int16)
        self.base = 0            # step number of log[0]
        self.steps = 0           # steps logged so far
        self.rounds: list[list[dict] | None] = [[] for _ in range(num_envs)]
        self.finished: list[tuple[int, dict]] = []

    def _round(self, opener: int, hands, moves=()) -> dict:
        return {"opener": opener, "hands": list(hands), "earlier": list(moves),
                "start": self.steps, "stop": None, "result": None, "deductions": [0, 0, 0, 0],
                "scores": None}

    def start(self, envs, hands, openers) -> None:
        """Fresh matches in ``envs`` with these first deals."""
        for env, hand, opener in zip(envs, hands, openers):
            self.rounds[env] = [self._round(opener, hand)]

    def rounds_of(self, match) -> list[dict] | None:
        """The round list that continues the log of a loaded ``rules.Match`` (to put in
        ``rounds[env]``): from its history if it has one that :func:`replays_to_its_state`,
        else ``None``, no record of this match (a record of it could not be replayed: e.g. a
        match whose scores were set by hand)."""
        if not match.history or not replays_to_its_state(match):
            return None
        rounds = []
        for log in match.history:
            rnd = self._round(log.opener, log.hands, log.moves)
            if log.result is not None:
                rnd.update(stop=self.steps, result=_RESULT_CODES[log.result],
                           deductions=list(log.deductions), scores=list(log.scores))
            rounds.append(rnd)
        return rounds

    def append(self, actions, events: StepEvents) -> None:
        """Log every env's move, then close the rounds and matches that ended."""
        if self.steps - self.base == len(self.log):
            self._make_room()
        row = self.log[self.steps - self.base]
        row[:, 0] = events.seat.cpu().numpy()
        row[:, 1] = actions.cpu().numpy()
        row[:, 2] = events.end_sum.cpu().numpy()
        row[:, 3] = events.points.cpu().numpy()
        self.steps += 1
        if not events.rows.numel():
            return
        columns = zip(events.rows.tolist(), events.result.tolist(), events.deductions.tolist(),
                      events.round_scores.tolist(), events.match_over.tolist(),
                      events.winner.tolist(), events.new_hands.tolist(),
                      events.new_opener.tolist())
        for env, result, deductions, scores, over, winner, hands, opener in columns:
            rounds = self.rounds[env]
            if rounds is not None:
                rounds[-1].update(stop=self.steps, result=result, deductions=deductions,
                                  scores=scores)
                if over:
                    self.finished.append((env, self._record(env, rounds, winner, scores)))
            if over:
                self.rounds[env] = [self._round(opener, hands)]
            elif rounds is not None and len(rounds) < MAX_ROUNDS:
                rounds.append(self._round(opener, hands))
            else:  # past what a record may hold (max_rounds=None): no record of this match
                self.rounds[env] = None

    def _make_room(self) -> None:
        """Drop log rows no live round needs; the new log is the smallest of 64 rows times a
        power of two that is at least half free (it grows for a long match, and shrinks back
        once that match is over)."""
        live = [rounds[0]["start"] for rounds in self.rounds if rounds]
        first = min(live, default=self.steps)
        kept = self.log[first - self.base:self.steps - self.base]
        size = 64
        while size < 2 * len(kept):
            size *= 2
        log = np.zeros((size, self.num_envs, 4), np.int16)
        log[:len(kept)] = kept
        self.log, self.base = log, first

    def stopped_record(self, env: int, max_rounds: int) -> dict | None:
        """The record of ``env``'s match as if its round limit were ``max_rounds`` (R8's
        truncation): its rounds that ended, no winner, the scores of the last one.  For a
        caller that runs the engine without a limit and stops a match itself at a round's end
        (the batched arena); ``None`` without a record of this match (loaded without its
        history)."""
        rounds = self.rounds[env]
        if rounds is None:
            return None
        ended = [rnd for rnd in rounds if rnd["stop"] is not None]
        if len(ended) != max_rounds:  # a record validate() refuses, or one not cut off at all
            raise ValueError(f"env {env}'s match has ended {len(ended)} of its rounds, not "
                             f"max_rounds={max_rounds}: call stopped_record at the step that "
                             f"ended its round {max_rounds}")
        return self._record(env, ended, -1, ended[-1]["scores"], max_rounds)

    def _record(self, env: int, rounds: list[dict], winner: int, scores: list[int],
                max_rounds: int | None = None) -> dict:
        out = []
        for rnd in rounds:
            logged = self.log[rnd["start"] - self.base:rnd["stop"] - self.base, env].tolist()
            out.append(round_entry(rnd["opener"], rnd["hands"], rnd["earlier"] + logged,
                                   _RESULT_NAMES[rnd["result"]], rnd["deductions"],
                                   rnd["scores"]))
        return record_dict(self.target, out, None if winner < 0 else winner, scores,
                           self.max_rounds if max_rounds is None else max_rounds)

    def nbytes(self) -> int:
        """Bytes of the move log (the round lists are small Python objects, not counted)."""
        return self.log.nbytes

    def pop(self) -> list[tuple[int, dict]]:
        finished, self.finished = self.finished, []
        return finished


__all__ = ["RecordKeeper"]
