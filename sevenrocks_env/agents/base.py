"""The one protocol every player follows, and agent specs (``"greedy"``, ``"search:samples=64"``).

An agent sees exactly what its seat may know: the observation vector of
:mod:`sevenrocks_env.observation` and the action mask.  Agents that want structure decode the
vector with :func:`sevenrocks_env.observation.decode`; nothing else reaches them, so no agent can
look at hidden tiles.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from ..checks import checked_seed
from ..observation import SeatView, checked_inputs, decode
from .layout import legal_from_mask


@runtime_checkable
class Agent(Protocol):
    """``act(observation, action_mask) -> action``; ``seed`` makes any randomness reproducible.

    A ``name`` attribute is optional: tables and messages show it where it is a non-empty
    printable ``str``, else the class name (:func:`sevenrocks_env.driver.agent_name`).  ``act``
    returns an int (a NumPy integer too).
    """

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int: ...

    def seed(self, seed: int | None) -> None: ...


class ViewAgent:
    """Base for rule-based agents: a forced move is played at once, otherwise the decoded
    :class:`~sevenrocks_env.observation.SeatView` and the legal actions go to ``choose``."""

    name = "view"

    def seed(self, seed: int | None) -> None:
        """Deterministic agents have no randomness to seed; ``seed`` is checked all the same
        (``checks.checked_seed``), so every agent takes the same seeds."""
        checked_seed(seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        observation, action_mask = checked_inputs(observation, action_mask)
        legal = legal_from_mask(action_mask)
        if len(legal) == 1:
            return legal[0]
        return self.choose(decode(observation), legal)

    def choose(self, view: SeatView, legal: list[int]) -> int:
        raise NotImplementedError


def _plain_int(text: str) -> int:
    """An int written with the ASCII digits 0-9 only: no sign (no int parameter takes a negative
    value), no ``_``, no other script's digits (``int`` takes ``1_000`` and ``\u0663``, and a
    spec is an agent's name: one agent, one spelling)."""
    if not (text.isascii() and text.isdigit()):
        raise ValueError(text)
    digits = text.lstrip("0") or "0"
    if len(digits) > _MAX_DIGITS:  # int() refuses 4,301 digits; no parameter comes near either
        raise _TooLong(f"an int of {len(digits):,} digits")
    return int(digits)


_MAX_DIGITS = 100


class _TooLong(ValueError):
    """Digits, but far too many for any parameter's range."""


def _plain_float(text: str) -> float:
    """``float(text)`` of ASCII text without ``_`` (the agents bound the value: NaN, infinities
    and negatives are refused there, in their words)."""
    if not text.isascii() or "_" in text:
        raise ValueError(text)
    return float(text)


#: How a parameter's text is read, by its declared type (others: the type itself).
_READERS = {int: (_plain_int, "int (digits 0-9 only)"), float: (_plain_float, "float")}


def parse_spec_params(rest: str, types: dict, owner: str, hint: str = "") -> dict:
    """``"samples=64,rollout=greedy"`` -> ``{"samples": 64, "rollout": "greedy"}``, each value
    converted by ``types[key]`` (an int from ASCII digits only, a float from ASCII without
    ``_``); ``ValueError`` naming ``owner`` (e.g. ``agent 'search'``) for an unknown key or a
    value of the wrong type (``hint`` is appended to the unknown-key message)."""
    params = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq and key in types:  # search:policy (the agent's own name): a key, no value
            kind = _READERS.get(types[key], (None, types[key].__name__))[1]
            article = "an" if kind[:1] in "aeiou" else "a"
            raise ValueError(f"{owner}: {key} needs a value: write {key}=VALUE, {article} {kind}")
        if not eq or key not in types:
            allowed = ", ".join(types) or "none"
            raise ValueError(f"bad parameter {item!r} for {owner} (parameters: {allowed}){hint}")
        if key in params:
            raise ValueError(f"{owner}: {key} is given twice")
        read, kind = _READERS.get(types[key], (types[key], types[key].__name__))
        try:
            params[key] = read(value.strip())
        except _TooLong as error:
            raise ValueError(f"{owner}: {key} is out of range, got {error}") from None
        except ValueError:
            raise ValueError(f"{owner}: {key} must be {kind}, "
                             f"got {value.strip()[:40]!r}") from None
    return params
