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
goes to the parent unchanged.

:class:`TurnBasedParallel` is PettingZoo's turn-based parallel conversion with a clear error
for an action dict that lacks the seat on turn.
"""

from __future__ import annotations

from operator import attrgetter

from pettingzoo.utils import conversions, wrappers

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
        env's error that says so (the parent's was a bare ``KeyError`` of the agent's name)."""
        if getattr(self, "_has_reset", True) and not self._raw_env.agents:
            return self._raw_env.last(observe)
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


class AssertOutOfBoundsWrapper(_DirectAttributes, wrappers.AssertOutOfBoundsWrapper):
    """PettingZoo's ``AssertOutOfBoundsWrapper``, with a fast path for plain in-range ints."""

    def step(self, action) -> None:
        if type(action) is int and 0 <= action < self._raw_env.action_spaces[
                self._raw_env.agent_selection].n:
            self.env.step(action)  # what the parent does once its assert passes
        elif isinstance(action, bool):  # Discrete.contains(True) would let it pass
            raise TypeError(f"action must be an int action index, got {action!r} (a bool)")
        else:
            super().step(action)


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
    is a ``ValueError`` that names the seat, not a bare ``KeyError: 'player_2'``.  A step once
    the match is over returns five empty dicts (the parent's four did not unpack as ``obs,
    rewards, terminations, truncations, infos``)."""

    def step(self, actions):
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
