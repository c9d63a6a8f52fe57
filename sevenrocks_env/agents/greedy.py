"""``greedy``: the most points now (R5), deterministic.

Order of preference among the legal actions:

1. the most points this placement scores (R5);
2. then the tile with the most pips (fewer pips left in hand to be deducted, R7);
3. then the lowest action number (a fixed order, so the choice depends on the state only).

A knock is chosen only when it is the one legal action (R6).
"""

from __future__ import annotations

from ..observation import SeatView
from .base import ViewAgent
from .layout import LookaheadLayout, points_after, tile_pips


def greedy_choice(layout: LookaheadLayout, legal: list[int]) -> int:
    """The greedy action among ``legal`` (ascending) on ``layout``; see the module docstring."""
    if len(legal) == 1:
        return legal[0]
    best, best_key = legal[0], None
    for action in legal:  # ascending, so ties keep the lowest action number
        key = (points_after(layout, action), tile_pips(action))
        if best_key is None or key > best_key:
            best, best_key = action, key
    return best


class GreedyAgent(ViewAgent):
    """Maximise this placement's points; tie-break by heaviest tile, then lowest action number."""

    name = "greedy"

    def __init__(self, seed: int | None = None):
        self.seed(seed)  # checked, as every agent's

    def choose(self, view: SeatView, legal: list[int]) -> int:
        return greedy_choice(LookaheadLayout.of(view), legal)
