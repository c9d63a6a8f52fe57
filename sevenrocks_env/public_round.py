"""The current round as every seat saw it: who opened, the scores it started from, every action.

An observation (:mod:`sevenrocks_env.observation`) says which tiles each seat has played this
round and which numbers its knocks showed it lacks, but not in what order, nor at which end.
An agent that reads the other seats' intentions from their plays (the search with inference,
:mod:`sevenrocks_env.agents.inference`) needs the order too: it is public, since every seat
sees every move (R6: a knock is a move as well).

Such an agent says so with ``needs_history = True`` and takes the round as a keyword,
``act(observation, action_mask, history=PublicRound(...))``.  Every driver of this package
passes it (:func:`sevenrocks_env.driver.agent_action`: the arena, ``sevenrocks play``, the web
page, the single-agent and RLlib envs' opponents; it needs the match's history log, which a
match built with ``keep_history=False`` lacks); in a PettingZoo loop it is
``env.unwrapped.public_round()``, and for a :class:`~sevenrocks_env.rules.Match` it is
:func:`public_round`.  The batched engine keeps the same thing as tensors
(:class:`sevenrocks_env.batched.history.RoundHistory`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .checks import is_int, shown
from .match_state import MAX_ROUND_MOVES
from .rules import Match
from .tiles import NUM_ACTIONS

#: The most actions a round can hold (``match_state.MAX_ROUND_MOVES``: R6, R7).
MAX_ROUND_ACTIONS = MAX_ROUND_MOVES
#: Scores a :class:`PublicRound` may give (far beyond what 100 rounds of deductions reach).
MAX_ABS_SCORE = 10 ** 6


class PublicRound(NamedTuple):
    """The public record of the round in progress (module docstring).

    ``opener``: the seat that moved first this round (R2).  ``scores``: the partnerships'
    scores when the round began (team 0 = seats 0 and 2), before any placement points of this
    round (R5).  ``actions``: every action since, in order, knocks included (``112``, R6);
    action ``i`` was made by seat ``(opener + i) % 4``, so the seat on turn now is
    :attr:`seat_on_turn`."""

    opener: int
    scores: tuple[int, int]
    actions: tuple[int, ...]

    @property
    def seat_on_turn(self) -> int:
        return (self.opener + len(self.actions)) % 4

    def checked(self) -> "PublicRound":
        """This round with plain ints, after checking every field's type and range
        (``ValueError`` naming the first bad one): it may come from anywhere.  Whether the
        actions are legal, and lead to what an observation shows, only a replay can tell."""
        if not is_int(self.opener, 0, 3):
            raise ValueError(f"history: opener must be a seat, 0 to 3, "
                             f"got {shown(self.opener)}"[:200])
        scores = self.scores
        if not (isinstance(scores, (tuple, list)) and len(scores) == 2
                and all(is_int(v, -MAX_ABS_SCORE, MAX_ABS_SCORE) for v in scores)):
            raise ValueError(f"history: scores must be two ints in [-{MAX_ABS_SCORE}, "
                             f"{MAX_ABS_SCORE}], got {shown(scores)}"[:200])
        actions = self.actions
        if isinstance(actions, np.ndarray) and actions.ndim == 1:  # e.g. a slice of a log
            actions = actions.tolist()
        if not isinstance(actions, (tuple, list)) or len(actions) > MAX_ROUND_ACTIONS:
            raise ValueError(f"history: actions must be a sequence of at most "
                             f"{MAX_ROUND_ACTIONS} actions, got {type(actions).__name__}"
                             + (f" of {len(actions)}" if isinstance(actions, (tuple, list))
                                else ""))
        for index, action in enumerate(actions):
            if not is_int(action, 0, NUM_ACTIONS - 1):
                raise ValueError(f"history: action {index} must be an int in [0, "
                                 f"{NUM_ACTIONS - 1}], got {shown(action)}"[:200])
        return PublicRound(int(self.opener), (int(scores[0]), int(scores[1])),
                           tuple(int(action) for action in actions))


def reads_history(agent) -> bool:
    """Whether ``agent`` takes the round's plays (``needs_history = True``; module docstring)."""
    return bool(getattr(agent, "needs_history", False))


def public_round(match: Match) -> PublicRound:
    """The public record of ``match``'s round in progress, from its history log (a match built
    with ``keep_history=False`` or by ``Match.from_state`` keeps none: ``ValueError``, as for a
    round that has ended)."""
    if match.history is None:
        raise ValueError("this match keeps no history (built with keep_history=False, or by "
                         "Match.from_state): its round's plays are unknown")
    log = match.history[-1] if match.history else None
    if log is None or log.result is not None:
        raise ValueError("no round in progress: the match is over or waits for its next deal")
    scores = list(match.scores)
    for seat, _, _, points in log.moves:  # placement points so far (R5); deductions come at
        scores[seat & 1] -= points        # the round's end (R7), so none to undo
    return PublicRound(log.opener, (scores[0], scores[1]),
                       tuple(action for _, action, _, _ in log.moves))


__all__ = ["MAX_ROUND_ACTIONS", "PublicRound", "public_round", "reads_history"]
