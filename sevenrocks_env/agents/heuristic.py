"""``heuristic``: a rule-based "fives" player that plays for points *and* defends.

It looks one placement ahead from public information only (own hand, tiles played, tile counts,
numbers a seat showed it lacks by knocking) and scores every legal placement ``a``:

    value(a) = points(a)                                  score when possible (R5)
             - threat  * E[best points of the left opponent on the new layout]
             + partner * E[best points of the partner on the new layout]
             + knock   * P(the left opponent must knock on the new layout)      (block, R6)
             + control * (own remaining tiles that still fit the new ends) / hand size
             + pips    * pips of the tile                 shed heavy tiles early (R7)
             + double  * [tile is a double]               doubles fit only one number: shed early

The left opponent moves next (R1 clockwise), so the threat term is "which end sum do I leave":
for every unseen tile the opponent may hold (not showing a number it knocked on) it takes the
most points that tile scores on the new layout, and combines them as the expected best of the
tiles the opponent holds.  A seat's chance of holding an unseen tile is its share of the hidden
tiles among the seats that may hold it; holdings are treated as independent.  The partner term
is the same computation for the partner (the seat after the opponent, so it weighs less); the
knock term rewards leaving only numbers the opponent lacks.  With one tile left (going out ends
the round, R7) only the points decide between its slots.  Ties go to the lower action number.

Measured against ``greedy`` in docs/agents.md (duplicate deals, 1000 pairs).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..observation import SeatView
from ..rules import placement_points
from ..tiles import KNOCK, TILE_IS_DOUBLE, TILE_PIPS, tiles_of
from .base import ViewAgent
from .belief import HIDDEN_SEATS, excluded_tiles
from .layout import LookaheadLayout

LEFT_OPPONENT, PARTNER = 1, 2  # relative seats (observation frame)


@dataclass(frozen=True)
class HeuristicWeights:
    """Weights of the terms in the module docstring (points are worth 1)."""

    threat: float = 1.0
    partner: float = 0.4
    knock: float = 4.0
    control: float = 4.0
    pips: float = 0.5
    double: float = 2.0


class HoldingOdds:
    """Chance that each hidden seat holds each unseen tile, from counts and knocks only."""

    def __init__(self, view: SeatView):
        self.unseen = view.unseen
        self.counts = {k: view.tile_counts[k] for k in HIDDEN_SEATS}
        self.excluded = {k: excluded_tiles(view.voids[k]) for k in HIDDEN_SEATS}
        self._cache: dict[int, dict[int, float]] = {}

    def of(self, seat: int) -> dict[int, float]:
        """``{tile: P(seat holds tile)}`` over the unseen tiles the relative ``seat`` may hold."""
        if seat not in self._cache:
            odds = {}
            if self.counts[seat]:
                for tile in tiles_of(self.unseen & ~self.excluded[seat]):
                    share = sum(self.counts[k] for k in HIDDEN_SEATS
                                if not (self.excluded[k] >> tile) & 1)
                    odds[tile] = self.counts[seat] / share
            self._cache[seat] = odds
        return self._cache[seat]


def expected_best(layout: LookaheadLayout, odds: dict[int, float]) -> float:
    """E[most points the seat scores next on ``layout``], holdings independent with ``odds``."""
    fits = layout.matching()
    options = []
    for tile, p in odds.items():
        if (fits >> tile) & 1:
            points = layout.best_points(tile)
            if points:
                options.append((points, p))
    options.sort(reverse=True)
    expected, none_better = 0.0, 1.0
    for points, p in options:
        expected += points * p * none_better
        none_better *= 1.0 - p
    return expected


def must_knock(layout: LookaheadLayout, odds: dict[int, float]) -> float:
    """P(the seat holds no tile that fits ``layout``)."""
    fits = layout.matching()
    chance = 1.0
    for tile, p in odds.items():
        if (fits >> tile) & 1:
            chance *= 1.0 - p
    return chance


class HeuristicAgent(ViewAgent):
    """One-placement lookahead with defence; rules in the module docstring."""

    name = "heuristic"

    def __init__(self, seed: int | None = None, weights: HeuristicWeights | None = None):
        self.seed(seed)  # checked, as every agent's
        self.weights = weights or HeuristicWeights()

    def choose(self, view: SeatView, legal: list[int]) -> int:
        if len(legal) == 1 or legal[0] == KNOCK:
            return legal[0]
        best, best_value = legal[0], None
        for action, value in zip(legal, self.values(view, legal)):
            if best_value is None or value > best_value + 1e-9:
                best, best_value = action, value
        return best

    def values(self, view: SeatView, legal: list[int]) -> list[float]:
        """``value(a)`` of the module docstring for each placement in ``legal``."""
        w = self.weights
        layout = LookaheadLayout.of(view)
        odds = HoldingOdds(view)
        opponent, partner = odds.of(LEFT_OPPONENT), odds.of(PARTNER)
        hand_size = bin(view.hand).count("1")
        values = []
        for action in legal:
            tile = action >> 2
            after = layout.after(action)
            value = float(placement_points(after.end_sum()))
            rest = view.hand & ~(1 << tile)
            if rest:
                value -= w.threat * expected_best(after, opponent)
                value += w.partner * expected_best(after, partner)
                value += w.knock * must_knock(after, opponent)
                value += w.control * bin(rest & after.matching()).count("1") / hand_size
                value += w.pips * TILE_PIPS[tile] + w.double * TILE_IS_DOUBLE[tile]
            values.append(value)
        return values
