"""The agents of the batched arena: one side's decisions for many envs in one call.

A :class:`BatchedAgent` gets the :class:`~sevenrocks_env.batched.VectorEnv`, the envs where its
seats are on turn and the arena's context (its seed, each env's ``(pair, game)`` coordinate and
move number, and the round history when it asks for it), and returns their actions.
:func:`batched_agent` gives the batched version of an agent spec or object.

The batchable agents (anything else raises ``ValueError``: use :func:`~sevenrocks_env.arena.evaluate`):

* trained policies (``ckpt:PATH``, ``ckpt:shipped``, a :class:`~sevenrocks_env.policy.PolicyAgent`):
  the most probable legal action, one forward pass per step for all envs where that agent's seats
  are on turn; sampling ones (``sample:policy=PATH[,temperature=T]``) draw from the distribution
  by a counter-based hash of ``(seed, pair, game, move number)``;
* ``greedy``: :func:`~sevenrocks_env.batched.greedy.greedy_actions`, ``GreedyAgent``'s choice;
* ``random``: uniform over the legal actions, drawn by the same hash;
* ``search`` (any rollout, no ``time_limit``) and ``search:policy=...``
  (``rollout=argmax``): every decision of a step searched in one batched engine
  (:mod:`sevenrocks_env.agents.world_rollouts`), the worlds of decision ``(pair, game, move)``
  drawn from a generator seeded by those numbers and the arena's seed;
* ``heuristic``: :func:`sevenrocks_env.batched.heuristic.heuristic_actions`, exactly
  ``HeuristicAgent``'s values and choice;
* any :class:`BatchedAgent` object, as it is.

An object of a subclass of one of those agents is played by its base's batched version only if
it keeps the base's way of choosing (:func:`plays_as`); one with its own moves is refused.

Every agent is a function of the env's own coordinates, never of the batch, so a result is
the same for any batch size (:mod:`sevenrocks_env.arena_batched`).
"""

from __future__ import annotations

import copy
import inspect

import torch

from .agents import make_agent
from .agents.greedy import GreedyAgent
from .agents.heuristic import HeuristicAgent
from .agents.random_agent import RandomAgent
from .batched import VectorEnv, layout
from .batched.deal import counter_key, counter_uniform
from .batched.greedy import greedy_actions
from .batched.inputs import checked_device
from .batched.heuristic import heuristic_actions

_RANDOM_SALT = 0x5EED
_SEARCH_SALT = 0x5EA2C
_SAMPLE_SALT = 0x5A3B1E
_BATCHABLE = ("the batched arena plays ckpt:/policy:/sample: checkpoints, search, heuristic, "
              "greedy and random -- use the unbatched arena")


class BatchedAgent:
    """One side's decisions for many envs at once: :meth:`actions` of the seats on turn."""

    name = "agent"
    #: ``context["history"]``: a :class:`~sevenrocks_env.batched.history.RoundHistory` of the
    #: env (each env's round start and the actions played since), kept by the arena if asked
    needs_history = False

    def actions(self, env: VectorEnv, envs: torch.Tensor, context: dict) -> torch.Tensor:
        raise NotImplementedError


class BatchedGreedy(BatchedAgent):
    """``greedy`` (:mod:`sevenrocks_env.batched.greedy`)."""

    name = "greedy"

    def actions(self, env, envs, context):
        return greedy_actions(env.state, env.action_mask, envs)


class BatchedRandom(BatchedAgent):
    """Uniform over the legal actions; the draw of env ``e``'s ``n``-th move is a hash of
    ``(seed, pair, game, n)`` (:func:`sevenrocks_env.batched.deal.counter_key`)."""

    name = "random"

    def actions(self, env, envs, context):
        mask = env.action_mask[envs]
        key = counter_key(context["seed"], _RANDOM_SALT, context["coordinate"][envs],
                          context["moves"][envs])
        legal = layout.legal_counts(mask).long()
        pick = key % legal                                  # the pick-th legal action
        cumulative = mask.long().cumsum(1)
        return ((cumulative == (pick + 1)[:, None]) & mask).long().argmax(1)


class BatchedPolicy(BatchedAgent):
    """A trained policy as :meth:`sevenrocks_env.policy.PolicyAgent.act` plays it, for all given
    envs in one forward pass: the argmax of the masked distribution, or for a sampling agent a
    draw from it (at its temperature) by the uniform of ``(seed, pair, game, move number)``."""

    def __init__(self, agent, device: torch.device):
        self.name = agent.name
        self.agent = agent
        model = agent.model
        if next(model.parameters()).device != device:
            model = copy.deepcopy(model).to(device)
        self.model = model.eval()

    @torch.inference_mode()
    def actions(self, env, envs, context):
        obs, mask = env.observation[envs], env.action_mask[envs]
        logits, _ = self.model(obs, mask)
        dist = self.agent.distribution(logits, mask)
        if self.agent.deterministic:
            return dist.mode()  # (an illegal choice: ValueError, why)
        key = counter_key(context["seed"], _SAMPLE_SALT, context["coordinate"][envs],
                          context["moves"][envs])
        return dist.sample_at(counter_uniform(key))


class BatchedSearchAgent(BatchedAgent):
    """``search`` (:class:`~sevenrocks_env.agents.search_batched.BatchedSearch`) or
    ``search:policy=...`` (:meth:`~sevenrocks_env.agents.policy_search.PolicySearchAgent.choose_many`):
    all decisions of a step searched together.  The agent gets only each seat's observation and
    mask; decision ``(pair, game, move)`` samples its worlds from a generator seeded by
    ``(seed, pair, game, move)``, so the result does not depend on ``batch``."""

    def __init__(self, searcher):
        self.searcher = searcher
        self.name = searcher.name

    def actions(self, env, envs, context):
        observations = env.observation[envs].cpu().numpy()
        masks = env.action_mask[envs].cpu().numpy()
        chosen = self.searcher.choose_many(observations, masks, search_rngs(context, envs))
        return torch.tensor(chosen, dtype=torch.long, device=envs.device)


def search_rngs(context: dict, envs: torch.Tensor) -> list:
    """One ``numpy.random.Generator`` per decision of ``envs``, seeded by the arena's seed and
    the decision's ``(pair, game, move)``: a search's worlds whatever the batch."""
    import numpy as np
    keys = zip(context["coordinate"][envs].tolist(), context["moves"][envs].tolist())
    return [np.random.default_rng((context["seed"], _SEARCH_SALT, coordinate, move))
            for coordinate, move in keys]


class BatchedHeuristic(BatchedAgent):
    """``heuristic`` (:mod:`sevenrocks_env.batched.heuristic`): the agent's values and choices,
    with its weights."""

    def __init__(self, agent: HeuristicAgent):
        self.weights, self.name = agent.weights, agent.name

    def actions(self, env, envs, context):
        return heuristic_actions(env.state, env.action_mask, envs, self.weights)


#: The methods of each built-in agent that its batched version plays in place of: a subclass
#: with its own has moves that version would not play.  Not ``seed`` (the batched draws are
#: counter-based), nor ``PolicyAgent.distribution`` or the policy search's ``choose_many``,
#: which the batched versions call.
_BYPASSED = {"GreedyAgent": ("act", "choose"), "RandomAgent": ("act",),
             "HeuristicAgent": ("act", "choose", "values"), "PolicyAgent": ("act",),
             "SearchAgent": ("act", "choose", "action_values", "_rollout_action",
                             "_rollout_value"),
             "PolicySearchAgent": ("act", "action_values")}


def plays_as(agent, base: type) -> bool:
    """Whether ``agent`` decides as ``base`` does: one, or of a class whose methods in
    :data:`_BYPASSED` are ``base``'s, wherever they come from in its method order (a name of its
    own, a ``seed`` or ``__init__`` is fine).  The batched arena played a subclass with its own
    ``choose`` as the base, booking the base's moves as the subclass's."""
    return isinstance(agent, base) and all(
        inspect.getattr_static(type(agent), name) is inspect.getattr_static(base, name)
        for name in _BYPASSED[base.__name__])


def _plain(agent, base: type) -> bool:
    """:func:`plays_as`, and ``ValueError`` for a subclass that overrides how ``base`` plays."""
    if plays_as(agent, base):
        return True
    if isinstance(agent, base):
        raise ValueError(f"agent {getattr(agent, 'name', type(agent).__name__)!r} "
                         f"({type(agent).__name__}) overrides how {base.__name__} plays: it has no "
                         "batched version (give it a BatchedAgent's actions(), or play it in "
                         "the unbatched arena: arena.evaluate)")
    return False


def _batched_search(agent, device) -> BatchedAgent | None:
    """The batched version of a search agent, or ``None`` if ``agent`` is none."""
    from .agents.search import SearchAgent
    if _plain(agent, SearchAgent):
        if agent.time_limit is not None:
            raise ValueError("search: time_limit has no batched version (every decision gets its "
                             "samples); drop it or use the unbatched arena")
        from .agents.search_batched import BatchedSearch
        return BatchedSearchAgent(BatchedSearch(agent, device))
    try:
        from .agents.policy_search import PolicySearchAgent
    except ImportError:  # pragma: no cover - torch is imported above
        return None
    if _plain(agent, PolicySearchAgent):
        if agent.rollout != "argmax":
            raise ValueError("search:policy: the batched arena plays rollout=argmax only (sampled "
                             "rollouts would depend on how decisions are grouped)")
        return BatchedSearchAgent(agent.on(device))  # a copy on the arena's device
    return None


def batched_agent(agent, device="cpu") -> BatchedAgent:
    """The batched version of an agent spec or object, or ``ValueError`` if it has none."""
    from .policy import PolicyAgent
    device = checked_device(device)
    if isinstance(agent, str):
        kind = agent.strip().partition(":")[0]
        if kind not in ("ckpt", "policy", "sample", "search", "heuristic", "greedy", "random"):
            make_agent(agent)  # a bad spec gets make_agent's message naming the valid ones
            raise ValueError(f"agent {agent!r} has no batched version; {_BATCHABLE} (sevenrocks "
                             "arena without --batched, arena.evaluate)")
        agent = make_agent(agent)
    if isinstance(agent, BatchedAgent):  # (first: a subclass of a built-in with its own twin)
        return agent
    search = _batched_search(agent, device)
    if search is not None:
        return search
    if _plain(agent, PolicyAgent):
        return BatchedPolicy(agent, device)
    if _plain(agent, GreedyAgent):
        return BatchedGreedy()
    if _plain(agent, RandomAgent):
        return BatchedRandom()
    if _plain(agent, HeuristicAgent):
        return BatchedHeuristic(agent)
    raise ValueError(f"agent {getattr(agent, 'name', type(agent).__name__)!r} has no batched "
                     f"version; {_BATCHABLE} (arena.evaluate)")


__all__ = ["BatchedAgent", "BatchedGreedy", "BatchedHeuristic", "BatchedPolicy", "BatchedRandom",
           "BatchedSearchAgent", "batched_agent", "plays_as", "search_rngs"]
