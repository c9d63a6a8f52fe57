"""``search:policy=...``: determinized search whose rollouts are played by a trained policy.

For each decision with more than one legal action (a forced move is played without search):

1. sample ``samples`` worlds: the three hidden hands drawn uniformly among the deals consistent
   with what the seat has seen -- unseen tiles, every seat's tile count, and the numbers knocks
   showed a seat lacks (R1, R6) -- with the sampler the ``search`` agent uses
   (:class:`~sevenrocks_env.agents.belief.HandSampler`);
2. load ``samples x actions`` copies into **one** batched engine
   (:class:`~sevenrocks_env.agents.world_rollouts.WorldRollouts`, shared with the batched
   ``search``), world ``s`` repeated once per legal action, and play each copy's action as the
   first step of all of them (:meth:`PolicySearchAgent.choose_many` does this for many decisions
   at once: the batched arena's way to play this agent);
3. play every copy on to the end of the round (R7; or to the end of the match, at most
   ``horizon`` rounds, once a partnership is within ``reach`` points of the target, R8 -- the
   copies of one world then share its later deals) with the policy network choosing for **all
   four seats**: one batched forward per step over the copies whose seat on turn has a real
   choice, each seat deciding from its own observation of its world;
4. score each action by its mean outcome for our partnership over the worlds -- our score change
   minus theirs (placement points R5 and the round's deductions R7), plus ``win_bonus`` if we win
   the match in the rollout (minus it if they do) -- plus ``prior`` times the policy's own
   log-probability of the action at the real observation, and play the best (ties: lower action).

Rollout moves are the policy's most probable legal action (``rollout="argmax"``, default): it is
how the policy plays when it is shipped, and deterministic rollouts leave the sampling of worlds
as the only noise in the estimate; ``rollout="sample"`` draws from the policy instead.

**Strategy fusion** (Frank & Basin 1998) is what makes determinized search go wrong: solving
each sampled world as if its cards were known lets the searcher pick, at a later information
set, a different move in each world -- a strategy no real player can follow, because the worlds
look the same to it. Here the search is one ply deep and every later move (ours included) is
chosen by the policy from that seat's *observation* of the world, never from its hidden hands,
so later moves are the same in every world the seat cannot tell apart: the evaluated plans are
ones the seat could actually play, and the root action is one action averaged over all worlds.
What remains is the weaker sibling of fusion -- the rollouts assume everyone plays the policy
(the value is "this action, then the policy", a policy-improvement step, not an equilibrium) and
the worlds are uniform among consistent deals, without reading intentions into the other seats'
past plays -- and the noise of ``samples`` worlds, which the ``prior`` term damps: actions the
policy ranks low need a clearly better rollout value to be chosen.

The agent only ever sees ``(observation, action_mask)``; the hidden tiles cannot reach it.
"""

from __future__ import annotations

import contextlib
import copy

import numpy as np
import torch

from ..batched import VectorEnv
from ..batched.inputs import checked_device
from ..arguments import MAX_THREADS
from ..checks import checked_seed, is_int, is_number_in, shown
from ..observation import checked_inputs, decode
from ..policy import (MaskedCategorical, PolicyNet, generator_seed, load_policy,
                      policy_device)
from .layout import best_action, legal_from_mask
from .belief import MAX_WORLDS
from .spec_text import spec_of
from .world_rollouts import Decision, WorldRollouts

ROLLOUT_MODES = ("argmax", "sample")


class PolicySearchAgent:
    """Policy-guided determinized search (module docstring).

    ``policy``: a :class:`~sevenrocks_env.policy.PolicyNet`, or a checkpoint path / ``"shipped"``
    read with :func:`~sevenrocks_env.policy.load_policy`.  ``samples``: worlds per decision.
    ``prior``: points per nat of the policy's log-probability added to each action's value
    (default 5, since 2026-12-03; 1 before).  It should suit the network's sharpness: the
    shipped v3, distilled toward soft targets, puts its first two actions about 1 nat apart
    where the PPO-trained v2 put them 5 apart, and with ``prior=1`` over v3 the 16-sample search
    plays worse than v3 alone (``docs/agents.md``).
    ``reach``/``horizon``: when a partnership's score is within ``reach`` of the target, rollouts
    go on past the round, to the match's end or ``horizon`` rounds.  ``threads``: torch's
    intra-op threads during a decision (restored after it; ``None`` leaves torch's setting): the
    batches are small, so one thread is fastest, and far faster on a busy machine where torch's
    default threads spin waiting for each other.
    """

    name = "search:policy"

    def __init__(self, policy="shipped", samples: int = 64, seed: int | None = None,
                 prior: float = 5.0, win_bonus: float = 50.0, reach: int = 60, horizon: int = 3,
                 rollout: str = "argmax", device: str = "cpu", threads: int | None = 1):
        if not is_int(samples, 1, MAX_WORLDS):
            raise ValueError(f"search:policy: samples must be an int in [1, {MAX_WORLDS}], got "
                             f"{shown(samples)}")
        if rollout not in ROLLOUT_MODES:
            raise ValueError(f"search:policy: rollout must be one of {', '.join(ROLLOUT_MODES)}, "
                             f"got {shown(rollout)}")
        for label, value in (("prior", prior), ("win_bonus", win_bonus)):
            if not is_number_in(value, 0, 1e6):
                raise ValueError(f"search:policy: {label} must be in [0, 1e6], got {shown(value)}")
        if threads is not None and not is_int(threads, 1, MAX_THREADS):
            raise ValueError(f"search:policy: threads must be an int in [1, {MAX_THREADS}], got "
                             f"{shown(threads)}")
        if not is_int(reach, 0, 10 ** 6):
            raise ValueError(f"search:policy: reach must be an int in [0, 1e6], got {shown(reach)}")
        if not is_int(horizon, 1, 100):
            raise ValueError(f"search:policy: horizon must be an int in [1, 100], got "
                             f"{shown(horizon)}")
        self.device = policy_device(device)  # a clear error for 'cuda' without CUDA
        if isinstance(policy, PolicyNet):
            model, label = policy, "net"
        else:
            try:
                model, label = load_policy(policy, device=self.device).model, str(policy)
            except ValueError as error:  # CheckpointError: missing, corrupt, wrong layout
                raise ValueError(f"search:policy: cannot load policy {policy!r}: {error}") from None
        self.model = model.to(self.device).eval()
        if type(self).name == PolicySearchAgent.name:  # (a subclass's own name stays its label)
            self.name = spec_of("search", {"policy": label, "samples": samples, "prior": prior,
                                           "win_bonus": win_bonus, "reach": reach,
                                           "horizon": horizon, "rollout": rollout,
                                           "threads": threads}, PolicySearchAgent)
        self.samples, self.prior, self.win_bonus = samples, float(prior), float(win_bonus)
        self.reach, self.horizon, self.rollout = int(reach), int(horizon), rollout
        self.threads = None if threads is None else int(threads)
        self._rollouts = WorldRollouts(self.device, self.win_bonus)
        self.seed(seed)

    def on(self, device) -> "PolicySearchAgent":
        """This agent playing on ``device``: itself if it already does (``cuda`` and
        ``cuda:0`` are one device when 0 is the current one), else a copy whose network and
        rollout engine live there (the batched arena's way to play it on its own device), with
        random streams of its own in this agent's present state."""
        device = checked_device(device)
        if device == checked_device(self.device):
            return self
        moved = copy.copy(self)
        moved.device, moved.model = device, copy.deepcopy(self.model).to(device)
        moved._rollouts = WorldRollouts(device, self.win_bonus)
        moved._rng = copy.deepcopy(self._rng)
        moved._generator = torch.Generator().set_state(self._generator.get_state())
        return moved

    def seed(self, seed: int | None) -> None:
        seed = checked_seed(seed)  # what make_agent and the envs take, refused in their words
        self._rng = np.random.default_rng(seed)
        # unseeded: a fresh draw, as for the worlds (not 0, which every such agent would share)
        self._generator = torch.Generator().manual_seed(
            int(self._rng.integers(2 ** 63)) if seed is None else generator_seed(seed))

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        observation, action_mask = checked_inputs(observation, action_mask)
        legal = legal_from_mask(action_mask)
        if len(legal) == 1:
            return legal[0]
        return self.choose_many([observation], [action_mask], [self._rng])[0]

    def choose_many(self, observations, masks, rngs) -> list[int]:
        """The search's action for each ``(observation, mask)``, all rollouts in one batched
        engine; decision ``i`` samples its worlds from ``rngs[i]`` (a ``numpy.random.Generator``),
        so with ``rollout="argmax"`` the choices do not depend on how decisions are grouped
        (up to float32 near-ties: the network's outputs vary in the last bits with batch size)."""
        if len(observations) == 0:  # a list, or an array from the batched arena
            return []
        values = self.action_values_many(observations, masks, rngs)
        return [best_action(legal_from_mask(mask), value) for mask, value in zip(masks, values)]

    def action_values(self, observation: np.ndarray, action_mask: np.ndarray) -> list[float]:
        """Score of each legal action (ascending action order): mean rollout value + prior term."""
        return self.action_values_many([observation], [action_mask], [self._rng])[0]

    def action_values_many(self, observations, masks, rngs) -> list[list[float]]:
        """:meth:`action_values` of many decisions, their rollouts played together, with
        ``threads`` torch threads (the caller's setting is put back afterwards)."""
        with self.own_threads():
            return self.scores(observations, masks, self.decisions(observations, masks, rngs))

    @contextlib.contextmanager
    def own_threads(self):
        """Run the block with ``threads`` torch threads, the caller's setting put back after."""
        previous = torch.get_num_threads()
        if self.threads is not None and self.threads != previous:
            torch.set_num_threads(self.threads)
        try:
            yield
        finally:
            if torch.get_num_threads() != previous:
                torch.set_num_threads(previous)

    def decisions(self, observations, masks, rngs, samples: int | None = None) -> list[Decision]:
        """Each ``(observation, mask)``'s decision with ``samples`` (default: this agent's)
        worlds drawn from its ``rng``, uniformly among the deals consistent with the view."""
        decisions = []
        for observation, mask, rng in zip(observations, masks, rngs):
            view = decode(observation)
            decisions.append(Decision.sample(view, legal_from_mask(mask), samples or self.samples,
                                             rng, rounds=self.rounds(view)))
        return decisions

    def rounds(self, view) -> int:
        """Rounds a rollout from ``view`` may play: past this one, to the match's end or
        ``horizon`` rounds, once a partnership is within ``reach`` of the target (R8)."""
        return self.horizon if max(view.scores) >= view.target - self.reach else 1

    @torch.inference_mode()
    def scores(self, observations, masks, decisions: list[Decision],
               weights: list[np.ndarray] | None = None) -> list[list[float]]:
        """Each decision's score of its legal actions: the mean rollout value over its worlds
        (weighted by ``weights[i]``, summing to 1, if given) plus ``prior`` times the policy's
        log-probability at the real observation.  (The worlds and weights are the caller's:
        ``benchmarks/oracle_search.py`` gives the true hidden hands, ``agents.inference``
        weights worlds by the other seats' plays.)"""
        priors = self._log_probs(observations, masks)
        values = self.world_values(decisions)
        if weights is None:
            means = [value.mean(0) for value in values]
        else:
            means = [weight @ value for weight, value in zip(weights, values)]
        return [(mean + self.prior * prior[d.legal]).tolist()
                for d, mean, prior in zip(decisions, means, priors)]

    def engine(self, size: int, target: int) -> VectorEnv:
        """A ``size``-env engine on this agent's device, kept for the next call of that size
        (its rollouts' engine; any caller may step it between this agent's searches)."""
        return self._rollouts.env(size, target)

    def world_values(self, decisions: list[Decision]) -> list[np.ndarray]:
        """Per decision, ``float64[worlds, actions]`` rollout values (no prior term)."""
        return self._rollouts.values(decisions, self._policy_moves)

    def _log_probs(self, observations, masks) -> np.ndarray:
        obs = torch.as_tensor(np.asarray(observations, dtype=np.float32), device=self.device)
        mask = torch.as_tensor(np.asarray(masks).astype(bool), device=self.device)
        logits, _ = self.model(obs, mask)
        return MaskedCategorical(logits, mask).log_probs.double().cpu().numpy()

    def _policy_moves(self, env: VectorEnv, rows: torch.Tensor) -> torch.Tensor:
        """The policy's move in the envs ``rows`` (each with a real choice)."""
        sub_mask = env.action_mask[rows]
        logits, _ = self.model(env.observation[rows], sub_mask)
        dist = MaskedCategorical(logits, sub_mask)
        if self.rollout == "argmax":
            return dist.mode()
        return dist.sample(self._generator)  # legal, or an error: never an illegal rollout move


__all__ = ["PolicySearchAgent", "ROLLOUT_MODES"]
