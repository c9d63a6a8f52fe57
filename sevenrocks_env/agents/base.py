"""The one protocol every player follows, and agent specs (``"greedy"``, ``"search:samples=64"``).

An agent sees exactly what its seat may know: the observation vector of
:mod:`sevenrocks_env.observation` and the action mask.  Agents that want structure decode the
vector with :func:`sevenrocks_env.observation.decode`; nothing else reaches them, so no agent can
look at hidden tiles.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Agent(Protocol):
    """``act(observation, action_mask) -> action``; ``seed`` makes any randomness reproducible."""

    name: str

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int: ...

    def seed(self, seed: int | None) -> None: ...
