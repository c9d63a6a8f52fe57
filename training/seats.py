"""What both self-play engines share: the rollout buffer and each match's seats.

Per-seat trajectories.  Every seat of a learner team is its own trajectory: a transition is one
of its *non-forced* decisions (forced moves -- one legal action, e.g. a knock -- are played
automatically and not trained on).  The reward of a transition is what happened to the seat's
team until that seat's next decision: ``(our score change - their score change) * points_scale``
(R5 placements, R7 deductions, whoever made them), plus ``+-win_reward`` when the match ends (R8).
Transitions are stored flat in creation order; ``next_index`` links each one to the same seat's
next transition, which is what GAE follows (:func:`training.ppo.compute_gae`).
The reward formula is :func:`sevenrocks_env.rewards.team0_reward` (the env's ``reward="shaped"``),
taken in the seat team's frame.

:class:`MatchSeats` is the bookkeeping of :class:`training.rollout.SelfPlayEngine` (Python
matches) and :class:`training.batched_rollout.BatchedSelfPlayEngine` (the batched engine): who
the learner is at each seat, each seat's open transition, the match's ``charts/`` statistics.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from sevenrocks_env.observation import OBS_SIZE
from sevenrocks_env.rules import team_of
from sevenrocks_env.tiles import NUM_ACTIONS, NUM_SEATS

from .critic import HANDS_SIZE
from .evaluation import tag_name


class RolloutBuffer:
    """Flat storage of one rollout's transitions (see the module docstring)."""

    def __init__(self, capacity: int):
        self.obs = np.zeros((capacity, OBS_SIZE), dtype=np.float32)
        self.hands = np.zeros((capacity, HANDS_SIZE), dtype=np.float32)  # for an oracle critic
        self.masks = np.zeros((capacity, NUM_ACTIONS), dtype=bool)
        self.actions = np.zeros(capacity, dtype=np.int64)
        self.logprobs = np.zeros(capacity, dtype=np.float32)
        self.values = np.zeros(capacity, dtype=np.float32)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.dones = np.zeros(capacity, dtype=bool)        # the match ended after this transition
        self.next_index = np.full(capacity, -1, dtype=np.int64)  # same seat's next transition
        self.bootstrap = np.zeros(capacity, dtype=np.float32)  # cut: V at seat's next decision
        self.size = 0

    def reset(self) -> None:
        self.rewards.fill(0.0)
        self.dones.fill(False)
        self.next_index.fill(-1)
        self.bootstrap.fill(0.0)
        self.size = 0


_TEAM_OF = np.array([team_of(seat) for seat in range(NUM_SEATS)])  # R1: seats 0, 2 and 1, 3


class MatchSeats:
    """What both self-play engines keep per match besides the game: who the learner is at each
    seat, the pool opponent if any, each seat's open transition, and the match's counters.

    In self-play all four seats are learners.  A fraction ``opponent_fraction`` of new matches
    instead gives one (random) team to an opponent from ``opponent_pool`` (a callable returning
    a name and an :class:`~sevenrocks_env.agents.base.Agent`, or ``None`` for pure self-play).
    """

    def __init__(self, num_matches: int, seed: int, target: int, max_rounds: int,
                 points_scale: float, win_reward: float, opponent_fraction: float,
                 opponent_pool):
        self.num_matches = num_matches
        self.target, self.max_rounds = target, max_rounds
        self.points_scale, self.win_reward = points_scale, win_reward
        self.opponent_fraction = opponent_fraction
        self.opponent_pool = opponent_pool
        self.rng = np.random.default_rng(seed)
        self.learner = np.ones((num_matches, NUM_SEATS), dtype=bool)
        self.opponents: list = [None] * num_matches
        self.opponent_names: list = [None] * num_matches
        self.pending = np.full((num_matches, NUM_SEATS), -1, dtype=np.int64)
        self._placements = np.zeros(num_matches, dtype=np.int64)
        self._points = np.zeros(num_matches, dtype=np.int64)
        self._decisions = np.zeros(num_matches, dtype=np.int64)
        self.stats = defaultdict(list)
        self.env_steps = 0  # every move played, forced and opponent moves included

    def _seat_new_match(self, i: int) -> None:
        """Seats of match ``i``'s new match: self-play, or one random team to a pool opponent."""
        self.learner[i] = True
        self.opponents[i] = self.opponent_names[i] = None
        if self.opponent_pool is not None and self.rng.random() < self.opponent_fraction:
            opponent_team = int(self.rng.integers(2))
            self.opponent_names[i], self.opponents[i] = self.opponent_pool(self.rng)
            self.opponents[i].seed(int(self.rng.integers(2**31)))
            self.learner[i] = _TEAM_OF != opponent_team
        self.pending[i] = -1
        self._placements[i] = self._points[i] = self._decisions[i] = 0

    def _match_stats(self, i: int, returns, winner: int | None, rounds: int,
                     truncated: bool) -> None:
        """The ``charts/`` statistics of match ``i``'s end: each learner team's return
        (``returns[team]``); in a pool match also its win (a truncated match, no winner, counts
        1/2 as in the arena) and its return against that opponent (self-play returns cancel out
        in ``episodic_return``); the match's rounds, decisions, truncation, points a placement."""
        for team in (0, 1):
            if not self.learner[i, team]:
                continue  # seats 0/1 stand for teams 0/1
            self.stats["episodic_return"].append(returns[team])
            if self.opponents[i] is not None:
                name = tag_name(self.opponent_names[i])
                self.stats[f"win_vs_{name}"].append(0.5 if winner is None
                                                    else float(winner == team))
                self.stats[f"return_vs_{name}"].append(returns[team])
        self.stats["rounds_per_match"].append(rounds)
        self.stats["episodic_length"].append(int(self._decisions[i]))
        self.stats["truncated"].append(float(truncated))
        if self._placements[i]:
            self.stats["points_per_placement"].append(self._points[i] / self._placements[i])

    def pop_stats(self) -> dict[str, list]:
        """The statistics of the matches ended since the last call (:meth:`_match_stats`)."""
        stats, self.stats = self.stats, defaultdict(list)
        return dict(stats)


__all__ = ["MatchSeats", "RolloutBuffer"]
