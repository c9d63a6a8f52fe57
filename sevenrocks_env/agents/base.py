"""The one protocol every player follows, and agent specs (``"greedy"``, ``"search:samples=64"``).

An agent sees exactly what its seat may know: the observation vector of
:mod:`sevenrocks_env.observation` and the action mask.  Agents that want structure decode the
vector with :func:`sevenrocks_env.observation.decode`; nothing else reaches them, so no agent can
look at hidden tiles.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from ..observation import SeatView, checked_inputs, decode
from .layout import legal_from_mask


@runtime_checkable
class Agent(Protocol):
    """``act(observation, action_mask) -> action``; ``seed`` makes any randomness reproducible."""

    name: str

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int: ...

    def seed(self, seed: int | None) -> None: ...


class ViewAgent:
    """Base for rule-based agents: a forced move is played at once, otherwise the decoded
    :class:`~sevenrocks_env.observation.SeatView` and the legal actions go to ``choose``."""

    name = "view"

    def seed(self, seed: int | None) -> None:
        """Deterministic agents have no randomness to seed."""

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        observation, action_mask = checked_inputs(observation, action_mask)
        legal = legal_from_mask(action_mask)
        if len(legal) == 1:
            return legal[0]
        return self.choose(decode(observation), legal)

    def choose(self, view: SeatView, legal: list[int]) -> int:
        raise NotImplementedError


def parse_spec_params(rest: str, types: dict, owner: str, hint: str = "") -> dict:
    """``"samples=64,rollout=greedy"`` -> ``{"samples": 64, "rollout": "greedy"}``, each value
    converted by ``types[key]``; ``ValueError`` naming ``owner`` (e.g. ``agent 'search'``) for an
    unknown key or a value of the wrong type (``hint`` is appended to the unknown-key message)."""
    params = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or key not in types:
            allowed = ", ".join(types) or "none"
            raise ValueError(f"bad parameter {item!r} for {owner} (parameters: {allowed}){hint}")
        if key in params:
            raise ValueError(f"{owner}: {key} is given twice")
        try:
            params[key] = types[key](value.strip())
        except ValueError:
            raise ValueError(f"{owner}: {key} must be {types[key].__name__}, "
                             f"got {value.strip()!r}") from None
    return params
