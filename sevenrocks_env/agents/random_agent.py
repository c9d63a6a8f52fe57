"""``random``: uniform over the legal actions (R6: a knock only when nothing can be placed)."""

from __future__ import annotations

import numpy as np

from ..checks import checked_seed
from ..observation import checked_inputs
from .layout import legal_from_mask


class RandomAgent:
    """Picks uniformly among the legal actions of the mask; :meth:`seed` makes it reproducible."""

    name = "random"

    def __init__(self, seed: int | None = None):
        self.seed(seed)

    def seed(self, seed: int | None) -> None:
        """``seed``: a non-negative int or ``None`` (``checks.checked_seed``, as the envs')."""
        self._rng = np.random.default_rng(checked_seed(seed))

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        legal = legal_from_mask(checked_inputs(observation, action_mask)[1])
        return legal[int(self._rng.integers(len(legal)))]
