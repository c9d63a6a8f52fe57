"""``search`` on the batched engine: the same values for many decisions at once (needs torch).

:class:`BatchedSearch` plays the rollouts of :class:`~sevenrocks_env.agents.search.SearchAgent`
(module docstring there: sampled worlds, every legal action, the round played out, mean team
outcome) for a list of decisions in one :class:`~sevenrocks_env.agents.world_rollouts.WorldRollouts`
engine, with the rollout move computed by :data:`ROLLOUT_MOVES`
(:func:`sevenrocks_env.batched.defensive.defensive_actions`,
:func:`sevenrocks_env.batched.greedy.greedy_actions`,
:func:`sevenrocks_env.batched.heuristic.heuristic_actions`).  Given the same worlds it returns
exactly ``SearchAgent.action_values``' numbers (``tests/test_batched_search.py``).  It is how the batched arena plays ``search``; ``time_limit``
has no meaning here (every decision gets its ``samples`` worlds).
"""

from __future__ import annotations

import numpy as np

from ..batched.defensive import defensive_actions
from ..batched.greedy import greedy_actions
from ..batched.heuristic import heuristic_actions
from ..observation import decode
from .layout import best_action, legal_from_mask
from .search import SearchAgent
from .world_rollouts import Decision, WorldRollouts


#: The batched rollout move of each ``search`` rollout (same choices as the rule-engine ones).
ROLLOUT_MOVES = {"defensive": defensive_actions, "greedy": greedy_actions,
                 "heuristic": heuristic_actions}


class BatchedSearch:
    """The batched twin of a :class:`SearchAgent` (module docstring)."""

    def __init__(self, agent: SearchAgent, device="cpu"):
        self.agent = agent
        self.name = agent.name
        self._rollouts = WorldRollouts(device, agent.win_bonus)
        self._move = ROLLOUT_MOVES[agent.rollout]

    def decisions(self, observations, masks, rngs) -> list[Decision]:
        return [Decision.sample(decode(obs), legal_from_mask(mask), self.agent.samples, rng)
                for obs, mask, rng in zip(observations, masks, rngs)]

    def world_values(self, decisions: list[Decision]) -> list[np.ndarray]:
        """Per decision, ``float64[worlds, actions]`` rollout values."""
        return self._rollouts.values(
            decisions, lambda env, rows: self._move(env.state, env.action_mask, rows))

    def action_values_many(self, observations, masks, rngs) -> list[list[float]]:
        """Each decision's mean rollout value of every legal action (ascending action order);
        decision ``i`` samples its worlds from ``rngs[i]`` (a ``numpy.random.Generator``)."""
        decisions = self.decisions(observations, masks, rngs)
        return [values.mean(0).tolist() for values in self.world_values(decisions)]

    def choose_many(self, observations, masks, rngs) -> list[int]:
        """Search's action for each ``(observation, mask)``: the best mean value, ties to the
        lower action."""
        values = self.action_values_many(observations, masks, rngs)
        return [best_action(legal_from_mask(mask), value) for mask, value in zip(masks, values)]


__all__ = ["BatchedSearch"]
