"""What a seat can infer about the hidden hands, and sampled worlds built from it (for search).

A seat knows (R1, R6): its own hand, every tile played and by whom, how many tiles each other seat
still holds, and the numbers each seat showed it lacks by knocking (it still lacks them: there is
no drawing).  :class:`HandSampler` draws the three hidden hands **uniformly among all deals
consistent with exactly that** -- it counts the consistent deals with a small dynamic programme
over the unseen tiles, so there is no rejection loop and no bias from dead ends.

Worlds are written in the seat's own frame: seat 0 of a world is the observer, 1 the left
opponent, 2 the partner, 3 the right opponent (the same relative seats as the observation), so
team 0 of the world is the observer's partnership.
"""

from __future__ import annotations

import math

import numpy as np

from .. import rules
from ..match_state import fewest_rounds_before
from ..observation import SeatView
from ..tiles import NUM_ACTIONS, tiles_of, tiles_showing

HIDDEN_SEATS = (1, 2, 3)  # relative seats whose hands are hidden from the observer
#: Most worlds a search may sample for one decision: every action of every world of one
#: decision fits the batched searches' ``MAX_COPIES`` (world_rollouts.py) rollout copies.
MAX_WORLDS = (1 << 16) // NUM_ACTIONS


def excluded_tiles(voids: int) -> int:
    """Tiles a seat cannot hold once it knocked on the numbers in the 7-bit set ``voids`` (R6)."""
    return tiles_showing(voids)


class HandSampler:
    """Uniform sampler of the hidden hands consistent with a :class:`SeatView`.

    ``ways[i][(a, b)]`` is the number of ways to deal unseen tiles ``i..`` so that relative seats
    1 and 2 receive ``a`` and ``b`` more tiles (seat 3 gets the rest); each tile goes only to a seat
    that may hold it.  Sampling walks the tiles choosing a seat with probability proportional to
    the completions it leaves, which is exactly uniform over consistent deals.
    """

    def __init__(self, view: SeatView):
        self.tiles, self.counts, self.allowed = self._constraints(view)
        if sum(self.counts) != len(self.tiles):
            raise ValueError(f"{len(self.tiles)} unseen tiles but the other seats hold "
                             f"{sum(self.counts)}")
        n = len(self.tiles)
        ways: list[dict[tuple[int, int], int]] = [dict() for _ in range(n + 1)]
        ways[n][(0, 0)] = 1
        for i in range(n - 1, -1, -1):
            left = n - i
            table, after = ways[i], ways[i + 1]
            for a in range(min(left, self.counts[0]) + 1):
                for b in range(min(left - a, self.counts[1]) + 1):
                    c = left - a - b
                    if c > self.counts[2]:
                        continue
                    total = 0
                    for j in self.allowed[i]:
                        rest = (a - (j == 0), b - (j == 1))
                        if rest[0] >= 0 and rest[1] >= 0 and c - (j == 2) >= 0:
                            total += after.get(rest, 0)
                    if total:
                        table[(a, b)] = total
        self.ways = ways
        self._arrays: list[np.ndarray] | None = None   # ways as arrays, for sample_many
        self.consistent_deals = ways[0].get(self.counts[:2], 0)
        if not self.consistent_deals:
            raise ValueError("no deal of the unseen tiles is consistent with this view")

    @staticmethod
    def _constraints(view: SeatView):
        """The unseen tiles, the hidden seats' tile counts, and which of those seats may hold
        each unseen tile (not a seat whose knock showed it lacks one of the tile's numbers)."""
        tiles = tiles_of(view.unseen)
        excluded = [excluded_tiles(view.voids[k]) for k in HIDDEN_SEATS]
        allowed = [tuple(j for j in range(3) if not (excluded[j] >> t) & 1) for t in tiles]
        return tiles, tuple(view.tile_counts[k] for k in HIDDEN_SEATS), allowed

    def fits(self, view: SeatView) -> bool:
        """Whether this sampler draws the deals consistent with ``view`` (it was built from
        ``view`` or from a view with the same unseen tiles, tile counts and knocks)."""
        return self._constraints(view) == (self.tiles, self.counts, self.allowed)

    def sample(self, rng: np.random.Generator) -> tuple[int, int, int]:
        """Hidden hands (bitmasks) of relative seats 1, 2, 3."""
        hands = [0, 0, 0]
        a, b = self.counts[0], self.counts[1]
        c = self.counts[2]
        for i, tile in enumerate(self.tiles):
            after = self.ways[i + 1]
            weights = []
            for j in self.allowed[i]:
                rest = (a - (j == 0), b - (j == 1))
                ok = rest[0] >= 0 and rest[1] >= 0 and c - (j == 2) >= 0
                weights.append(after.get(rest, 0) if ok else 0)
            total = sum(weights)
            pick = rng.random() * total
            if pick >= total:  # u < 1, but u * total may round up to total: the walk below
                pick = math.nextafter(total, 0)  # would fall through to a full last seat
            for j, weight in zip(self.allowed[i], weights):
                if pick < weight:
                    break
                pick -= weight
            hands[j] |= 1 << tile
            a, b, c = a - (j == 0), b - (j == 1), c - (j == 2)
        return hands[0], hands[1], hands[2]

    def sample_many(self, rng: np.random.Generator, count: int) -> list[tuple[int, int, int]]:
        """``count`` samples, numpy over the samples tile by tile: the same hands from the same
        draws as ``[self.sample(rng) for _ in range(count)]`` (which takes one uniform per tile,
        sample after sample: here one ``[count, tiles]`` block), with the same float operations
        in the same order, so every choice is bit for bit the one :meth:`sample` makes."""
        tables = self._tables()
        draws = rng.random((count, len(self.tiles)))
        a = np.full(count, self.counts[0], dtype=np.int64)  # tiles seats 1 and 2 still get
        b = np.full(count, self.counts[1], dtype=np.int64)  # (seat 3's follow: tables say 0)
        seat = np.empty((count, len(self.tiles)), dtype=np.int64)
        for i, allowed in enumerate(self.allowed):
            after = tables[i + 1]
            weights = [after[a - (j == 0), b - (j == 1)] for j in allowed]
            total = sum(weights)
            pick = draws[:, i] * total
            over = pick >= total  # as in sample: kept below the total
            if over.any():
                pick[over] = np.nextafter(total[over], 0)
            chosen = self._first_below(pick, weights, allowed)
            seat[:, i] = chosen
            a -= chosen == 0
            b -= chosen == 1
        bits = np.array([1 << tile for tile in self.tiles], dtype=np.int64)
        hands = [((seat == j) * bits).sum(1) for j in range(3)]
        return list(zip(*(h.tolist() for h in hands)))

    @staticmethod
    def _first_below(pick: np.ndarray, weights: list[np.ndarray], allowed) -> np.ndarray:
        """Per row, the first ``allowed[k]`` with ``pick - weights[0] - ... - weights[k-1] <
        weights[k]`` (float subtraction in that order, as :meth:`sample`), else the last."""
        below = []
        for weight in weights:
            below.append(pick < weight)
            pick = pick - weight
        return np.select(below, allowed, allowed[-1])

    def _tables(self) -> list[np.ndarray]:
        """``ways`` as arrays ``[i][a, b]``, 0 where the dict has no entry, with one row and
        column of zeros more, so index -1 (a seat given more than its count) reads 0; at most
        22 * 9 * 9 deal counts, each below 21! / 7!**3 < 2**29: exact in int64 and float64."""
        if self._arrays is None:
            shape = (self.counts[0] + 2, self.counts[1] + 2)
            self._arrays = []
            for table in self.ways:
                array = np.zeros(shape, dtype=np.int64)
                for (a, b), ways in table.items():
                    array[a, b] = ways
                self._arrays.append(array)
        return self._arrays


def world_match(view: SeatView, hidden: tuple[int, int, int]) -> rules.Match:
    """A seedless Match of the current round, in the observer's frame, with these hidden hands.

    Scores are (ours, theirs) as teams 0 and 1; the round stops with ``awaiting_deal`` at its end
    (R7 deductions applied), or with ``winner`` set if a partnership reaches the target (R8).
    """
    return rules.Match.from_state({
        "seed": None, "target": view.target, "max_rounds": None,
        "scores": [view.scores[0], view.scores[1]], "winner": None, "truncated": False,
        # the round's number is not in the view: the first at which the scores are reachable
        "round_index": fewest_rounds_before(view.scores),
        "hands": [view.hand, hidden[0], hidden[1], hidden[2]],
        "played": view.played, "played_by": list(view.played_by), "ends": list(view.ends),
        "end_double": list(view.end_double), "branch_started": list(view.branch_started),
        "spinner": view.spinner, "turn": view.turn,
        "opener": 0,  # unknown to the observer and irrelevant within the round
        "placements": view.played.bit_count(), "voids": list(view.voids),
        "last_end_sum": view.end_sum,
    })
