"""``search``: determinized Monte-Carlo over the hidden hands, with rollouts to the round's end.

For each decision with more than one legal action:

1. sample ``samples`` worlds: the three hidden hands drawn uniformly among the deals consistent
   with what the seat knows (:class:`~sevenrocks_env.agents.belief.HandSampler`: unseen tiles,
   tile counts, numbers shown lacking by knocks);
2. in every world play each legal action, then let all four seats play the round out with the
   ``rollout`` policy: ``defensive`` (default: points now minus the next seat's best reply in
   that world, :func:`defensive_choice`), ``greedy``, or ``heuristic`` (each seat seeing only its
   own view of the world; slowest);
3. value = our partnership's score change minus theirs over the rest of the round, placement
   points (R5) and the round-end deductions (R7) included, plus ``win_bonus`` if a partnership
   reaches the target in the rollout (R8: the match ends there; minus for theirs);
4. play the action with the best mean value (every action is evaluated on the same worlds; ties
   go to the lower action number).

The agent only ever sees its observation (it decodes the vector); hidden tiles cannot reach it.
With ``time_limit`` (seconds) it stops sampling early once the time is spent (at least one world),
which makes its choices depend on machine speed; without one it is deterministic for a seed.
"""

from __future__ import annotations

import time

import numpy as np

from .. import rules
from ..checks import checked_seed, is_int, is_number_in, shown
from ..observation import SeatView
from ..tiles import TILE_PIPS, tiles_of
from .base import ViewAgent
from .belief import MAX_WORLDS, HandSampler, world_match
from .greedy import greedy_choice
from .heuristic import HeuristicAgent
from .layout import LookaheadLayout, best_action, view_of
from .spec_text import spec_of

ROLLOUTS = ("greedy", "defensive", "heuristic")
OURS, THEIRS = rules.team_of(0), rules.team_of(1)  # world seat 0 is the observer

#: Longest ``time_limit`` a decision may be given (seconds).
MAX_TIME_LIMIT = 3600.0


class SearchAgent(ViewAgent):
    """Determinized Monte-Carlo search (module docstring); budget ``samples`` / ``time_limit``."""

    name = "search"

    def __init__(self, seed: int | None = None, samples: int = 64, time_limit: float | None = None,
                 rollout: str = "defensive", win_bonus: float = 50.0):
        if not is_int(samples, 1, MAX_WORLDS):
            raise ValueError(f"search: samples must be an int in [1, {MAX_WORLDS}], "
                             f"got {shown(samples)}")
        if time_limit is not None and not (is_number_in(time_limit, 0, MAX_TIME_LIMIT)
                                           and time_limit > 0):  # (not NaN, a bool or a str)
            raise ValueError(f"search: time_limit must be in (0, {MAX_TIME_LIMIT}] seconds, "
                             f"got {shown(time_limit)}")
        if rollout not in ROLLOUTS:
            raise ValueError(f"search: rollout must be one of {', '.join(ROLLOUTS)}, "
                             f"got {shown(rollout)}")
        if not is_number_in(win_bonus, 0, 1e6):  # (not NaN, a bool or a str)
            raise ValueError(f"search: win_bonus must be in [0, 1e6], got {shown(win_bonus)}")
        self.samples, self.time_limit, self.rollout, self.win_bonus = (
            samples, time_limit, rollout, win_bonus)
        if type(self).name == SearchAgent.name:  # (a subclass's own name stays its label)
            self.name = spec_of("search", {"samples": samples, "time_limit": time_limit,
                                           "rollout": rollout, "win_bonus": win_bonus},
                                SearchAgent)
        self._heuristic = HeuristicAgent()
        self.seed(seed)

    def seed(self, seed: int | None) -> None:
        """``seed``: a non-negative int or ``None`` (``checks.checked_seed``, as the envs')."""
        self._rng = np.random.default_rng(checked_seed(seed))

    def choose(self, view: SeatView, legal: list[int]) -> int:
        """Best mean rollout value among ``legal`` (see the module docstring)."""
        return best_action(legal, self.action_values(view, legal))

    def action_values(self, view: SeatView, legal: list[int]) -> list[float]:
        """Mean rollout value of each legal action over the sampled worlds."""
        sampler = HandSampler(view)
        deadline = None if self.time_limit is None else time.perf_counter() + self.time_limit
        totals = [0.0] * len(legal)
        worlds = 0
        while worlds < self.samples:
            world = world_match(view, sampler.sample(self._rng))
            for i, action in enumerate(legal):
                totals[i] += self._rollout_value(world.clone(), action)
            worlds += 1
            if deadline is not None and time.perf_counter() >= deadline:
                break
        return [total / worlds for total in totals]

    def _rollout_value(self, world: rules.Match, action: int) -> float:
        start = world.scores[OURS] - world.scores[THEIRS]
        rules.apply_action(world, action)
        while not world.over and not world.awaiting_deal:
            rules.apply_action(world, self._rollout_action(world))
        value = float(world.scores[OURS] - world.scores[THEIRS] - start)
        if world.winner is not None:
            value += self.win_bonus if world.winner == OURS else -self.win_bonus
        return value

    def _rollout_action(self, world: rules.Match) -> int:
        legal = rules.legal_actions(world)
        if len(legal) == 1:
            return legal[0]
        if self.rollout == "greedy":
            return greedy_choice(LookaheadLayout.of_match(world), legal)
        if self.rollout == "defensive":
            return defensive_choice(world, legal)
        return self._heuristic.choose(view_of(world, world.turn), legal)


def defensive_choice(world: rules.Match, legal: list[int]) -> int:
    """Rollout move inside a sampled world: points now minus the next seat's best reply.

    Unlike the agents this looks at the next seat's hand *of the sampled world* (a guess, never
    the real hidden tiles), which is what makes it cheap; ties go to the heavier tile, then to
    the lower action number.
    """
    layout = LookaheadLayout.of_match(world)
    reply_hand = world.hands[rules.next_seat(world.turn)]
    best, best_key = legal[0], None
    for action in legal:
        after = layout.after(action)
        points = rules.placement_points(after.end_sum())
        reply = 0
        if world.hands[world.turn] != 1 << (action >> 2):  # not going out
            for tile in tiles_of(reply_hand & after.matching()):
                reply = max(reply, after.best_points(tile))
        key = (points - reply, TILE_PIPS[action >> 2])
        if best_key is None or key > best_key:
            best, best_key = action, key
    return best
