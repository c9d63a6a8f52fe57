"""PettingZoo's standard AEC wrappers with direct attribute forwarding.

``BaseWrapper.__getattr__`` resolves every ``env.agent_selection``/``env.terminations``/...
by walking the wrapper chain with a string check per level; in a three-wrapper stack that was
over half the time of a step.  These subclasses behave exactly like PettingZoo's
``TerminateIllegalWrapper``, ``AssertOutOfBoundsWrapper`` and ``OrderEnforcingWrapper`` (they
are subclasses and run the same ``step``/``observe`` code), but read the per-step attributes
straight from the raw env.  Before ``reset()`` the raw env lacks them (``agents``: it is checked),
so the lookup falls back to the wrapper's own ``__getattr__`` and ``OrderEnforcingWrapper`` still
raises its usual error.
Each also has a fast path for the common case (a reset env, a live agent, a legal int action)
that does what the parent does there without the chain of ``super()`` calls; every other case
goes to the parent unchanged, except an action outside the action space: a ``TypeError`` or
``ValueError`` naming it (:func:`checked_action`), where the parent asserted (a bare
``AssertionError``, gone under ``python -O``).

:class:`TurnBasedParallel` is PettingZoo's turn-based parallel conversion with clear errors
for an action dict that lacks the seat on turn and for a step before ``reset()``.
"""

from __future__ import annotations

from operator import attrgetter

import numpy as np
from pettingzoo.utils import conversions, wrappers

from .checks import array_hint, is_int, shown
from .rules import plain_action

_PER_STEP = ("agent_selection", "agents", "rewards", "terminations", "truncations", "infos",
             "_cumulative_rewards")


def _forwarded(name: str) -> property:
    def set(self, value):
        setattr(self._raw_env, name, value)

    # attrgetter runs in C: these are read several times per step
    return property(attrgetter(f"_raw_env.{name}"), set, doc=f"``{name}`` of the raw env")


class _DirectAttributes:
    def __init__(self, env, *args, **kwargs):
        self._raw_env = env.unwrapped
        super().__init__(env, *args, **kwargs)

    def last(self, observe: bool = True):
        """The parent's ``last()``; once the match is over and every agent removed, the raw
        env's error that says so (the parent's was a bare ``KeyError`` of the agent's name).
        Fast path (a reset env with agents): what ``AECEnv.last`` does, reading the raw env's
        dicts once instead of through the forwarding properties."""
        if getattr(self, "_has_reset", True):
            raw = self._raw_env
            if not raw.agents:
                return raw.last(observe)
            agent = raw.agent_selection
            return (self.observe(agent) if observe else None, raw._cumulative_rewards[agent],
                    raw.terminations[agent], raw.truncations[agent], raw.infos[agent])
        return super().last(observe)


for _name in _PER_STEP:
    setattr(_DirectAttributes, _name, _forwarded(_name))


def _agents(self):
    """``agents`` of the raw env; before ``reset()`` the order-enforcing wrapper's error, as for
    the other per-step attributes (the raw env has ``agents = []`` from the start, so the
    fall-back on a missing attribute would not happen)."""
    if getattr(self, "_has_reset", True):
        return self._raw_env.agents
    return self.__getattr__("agents")


_DirectAttributes.agents = property(_agents, _forwarded("agents").fset, doc=_agents.__doc__)



class TerminateIllegalWrapper(_DirectAttributes, wrappers.TerminateIllegalWrapper):
    """PettingZoo's ``TerminateIllegalWrapper`` (illegal move: mover gets the penalty, match ends),
    with a fast path for the common step: a live agent plays an int its last mask allows."""

    def observe(self, agent):
        obs = self.env.observe(agent)
        raw = self._raw_env
        if agent == raw.agent_selection:  # as the parent: remember the mask the mover saw
            self._prev_obs = obs
            self._prev_info = raw.infos.get(agent, {})
        return obs

    def step(self, action) -> None:
        prev, raw = self._prev_obs, self._raw_env
        agent = raw.agent_selection
        if (type(action) is int and type(prev) is dict and not raw.terminations[agent]
                and not raw.truncations[agent] and prev["action_mask"][action]):
            self._prev_obs = self._prev_info = None
            self.env.step(action)  # what the parent does for a legal move
        else:
            super().step(action)


class ActionNotAnIndex(TypeError, ValueError, AssertionError):
    """A step's action is not an int action index (nor ``None`` for a finished agent): a
    ``TypeError``; a ``ValueError`` too, which is what the Gymnasium view (``SingleAgentEnv``)
    raises for every action outside its space; and the ``AssertionError`` PettingZoo's wrapper
    raised for it."""


class ActionOutOfRange(ValueError, AssertionError):
    """A step's action is an int outside the action space: a ``ValueError``, and the
    ``AssertionError`` PettingZoo's wrapper raised for it."""


def checked_action(action, agent: str, size: int, dead_step: bool = True) -> int:
    """``action`` as a plain int in ``[0, size)``: any int PettingZoo's ``Discrete.contains``
    takes (a NumPy integer, a 0-d integer array), and any other NumPy integer in range (as the
    raw env); :class:`ActionNotAnIndex` for a bool or a non-int, :class:`ActionOutOfRange` for
    an int outside.  Raised, not asserted, so ``python -O`` refuses them too.  ``agent`` names
    the mover (``player_2``, or ``seat 2`` in a Gymnasium view, which has no dead step: there
    ``dead_step=False`` leaves out PettingZoo's meaning of ``None``)."""
    value = plain_action(action)
    if not is_int(value):  # (not a bool either: Discrete.contains(True) would pass it as 1)
        what = " (a bool)" if isinstance(value, (bool, np.bool_)) else (
            " (None is the step of a terminated or truncated agent only)"
            if value is None and dead_step else array_hint(action))
        raise ActionNotAnIndex(f"action of {agent} must be an int action index in "
                               f"[0, {size - 1}], got {type(action).__name__} {shown(action)}"
                               f"{what}")
    if not 0 <= value < size:
        raise ActionOutOfRange(f"action {shown(int(value))} of {agent} is outside the action "
                               f"space [0, {size - 1}] (Discrete({size}))")
    return int(value)


class AssertOutOfBoundsWrapper(_DirectAttributes, wrappers.AssertOutOfBoundsWrapper):
    """PettingZoo's ``AssertOutOfBoundsWrapper``, with a fast path for plain in-range ints and
    a clear error for an action outside the space (:func:`checked_action`; the parent's was a
    bare ``AssertionError``, and under ``python -O`` none at all).  ``None`` for a terminated
    or truncated agent passes, as in the parent."""

    def step(self, action) -> None:
        raw = self._raw_env
        agent = raw.agent_selection
        if type(action) is not int or not 0 <= action < raw.action_spaces[agent].n:
            if action is None and (raw.terminations[agent] or raw.truncations[agent]):
                self.env.step(None)  # PettingZoo's dead step
                return
            action = checked_action(action, agent, raw.action_spaces[agent].n)
        self.env.step(action)  # what the parent does once its assert passes


class OrderEnforcingWrapper(_DirectAttributes, wrappers.OrderEnforcingWrapper):
    """PettingZoo's ``OrderEnforcingWrapper``, with fast paths once ``reset()`` has been called."""

    def step(self, action) -> None:
        if self._has_reset and self._raw_env.agents:
            self._has_updated = True
            self.env.step(action)  # what the parent does in this case
        else:
            super().step(action)

    def observe(self, agent):
        if self._has_reset:
            return self.env.observe(agent)
        return super().observe(agent)


class TurnBasedParallel(conversions.turn_based_aec_to_parallel_wrapper):
    """PettingZoo's turn-based AEC-to-parallel conversion, whose ``step`` reads the action of
    the seat on turn alone: a dict without it (the natural mistake: only the mover's action)
    is a ``ValueError`` that names the seat, not a bare ``KeyError: 'player_2'``; a step before
    ``reset()`` is a ``RuntimeError`` saying so (the raw env's words).  A step once
    the match is over returns five empty dicts (the parent's four did not unpack as ``obs,
    rewards, terminations, truncations, infos``)."""

    def __getattr__(self, name):
        """Only reached for a missing attribute: ``agents`` before ``reset()`` says so, as the
        AEC env's does (the parent's was "object has no attribute 'agents'")."""
        if name == "agents":
            raise AttributeError("agents cannot be accessed before reset")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def step(self, actions):
        if "agents" not in self.__dict__:  # the parent read self.agents: an AttributeError
            raise RuntimeError("reset() needs to be called before step.")
        if self.agents:
            mover = self.aec_env.agent_selection
            if not isinstance(actions, dict):
                raise TypeError(f"parallel step: actions must be a dict of agent -> action, got "
                                f"{type(actions).__name__}")
            if mover not in actions:
                raise ValueError(f"parallel step: the actions need an entry for {mover!r}, the "
                                 f"seat on turn (the other seats' are ignored); got "
                                 f"{sorted(map(str, actions))[:4]}")
            return super().step(actions)
        return {}, {}, {}, {}, {}  # the match is over: PettingZoo's parent returns four dicts
