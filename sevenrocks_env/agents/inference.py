"""Inference from the other seats' plays: how likely each sampled world makes what they did.

The determinized search draws its worlds uniformly among the deals consistent with the seat's
view (tile counts, knocks: :class:`~sevenrocks_env.agents.belief.HandSampler`).  But the other
seats did not play at random: if they play like the policy, a world in which their plays this
round were the policy's likely moves is more likely to be the real deal.  Bridge and Skat
programs weight their worlds this way (PIMC with inference).  This module computes that weight
for many decisions at once on the batched engine:

1. :class:`RoundHistory` keeps, per env of a :class:`~sevenrocks_env.batched.VectorEnv`, the
   state at the start of its current round and every action played since (knocks included).
   All of it is public except the round's deal, which the replay below never reads for the
   hidden seats.
2. :func:`play_log_likelihoods` rebuilds each world's round start -- the observer's own hand
   and the public state from the real round start; each hidden seat's hand is its hand in the
   world plus the tiles it played this round (R1: a seat's hand is what it holds plus what it
   played) -- replays the round's actions in every world at once, and sums, per world, the
   policy's log-probability of each hidden seat's real move from that seat's observation in
   the world.  Only this round counts: every round is a fresh deal (R1).  A world that makes a
   real move forced (the seat's only legal move there) gives it probability 1.
3. :class:`InferenceSearch` (a batched-arena agent) weights the search's worlds by
   ``exp(power * log-likelihood)``, normalised per decision: ``power`` 1 is Bayes' rule if the
   other seats play the policy; less tempers it for seats that do not.

The replay needs the round's plays, which an agent's ``(observation, action_mask)`` does not
hold, so this agent plays in the batched arena only (it asks for ``context["history"]`` with
``needs_history``): ``benchmarks/inference_search.py`` measures it.
"""

from __future__ import annotations

import numpy as np
import torch

from ..arena_batched import _SEARCH_SALT, BatchedAgent
from ..batched import VectorEnv, layout
from ..batched.state import FIELDS
from ..observation import decode
from ..policy import MaskedCategorical
from ..checks import is_int
from .belief import HIDDEN_SEATS, MAX_WORLDS
from .layout import best_action, legal_from_mask
from .policy_search import PolicySearchAgent
from .world_rollouts import Decision

_HIDDEN = torch.tensor(HIDDEN_SEATS)


class RoundHistory:
    """Each env's round start (a :class:`BatchState`) and the actions played since.

    Call :meth:`record` after every step of the env, with the actions stepped and the env's
    ``round_index`` and ``matches`` from before the step: an env whose round ended (or whose
    match ended and was replaced, auto-reset) starts a new history from its state after it.
    """

    def __init__(self, env: VectorEnv, capacity: int = 128):
        self.round_start = env.state.take()
        self.actions = torch.zeros(env.num_envs, capacity, dtype=torch.long, device=env.device)
        self.length = torch.zeros(env.num_envs, dtype=torch.long, device=env.device)

    def record(self, env: VectorEnv, actions: torch.Tensor, rounds_before: torch.Tensor,
               matches_before: torch.Tensor) -> None:
        if int(self.length.max()) >= self.actions.shape[1]:  # a long run of knocks: grow
            self.actions = torch.cat((self.actions, torch.zeros_like(self.actions)), 1)
        rows = torch.arange(env.num_envs, device=env.device)
        self.actions[rows, self.length] = actions
        self.length += 1
        state = env.state
        new = ((state.round_index != rounds_before) | (state.matches != matches_before))
        fresh = new.nonzero().squeeze(1)
        if fresh.numel():
            for name in FIELDS:
                getattr(self.round_start, name)[fresh] = getattr(state, name)[fresh]
            self.length[fresh] = 0


class _Replays:
    """The replay engines, one per (size, target), kept between calls (at most 8)."""

    def __init__(self, device):
        self.device, self._envs = torch.device(device), {}

    def env(self, size: int, target: int) -> VectorEnv:
        key = (size, target)
        if key not in self._envs:
            if len(self._envs) >= 8:
                self._envs.clear()
            self._envs[key] = VectorEnv(size, device=self.device, target=target,
                                        max_rounds=None, validate=False)
        return self._envs[key]


@torch.inference_mode()
def play_log_likelihoods(model, history: RoundHistory, env: VectorEnv, envs: torch.Tensor,
                         worlds: list[list[tuple[int, int, int]]], replays: _Replays | None = None
                         ) -> list[np.ndarray]:
    """Per decision ``i`` (env ``envs[i]``, its seat on turn the observer), ``float64[S_i]``: the
    log-probability under ``model`` of the hidden seats' real moves this round in each of its
    worlds ``worlds[i]`` (the hands of relative seats 1, 2, 3 now, as ``Decision.hidden``)."""
    device = env.device
    replays = replays or _Replays(device)
    sizes = [len(w) for w in worlds]
    decision = torch.repeat_interleave(torch.arange(len(worlds), device=device),
                                       torch.tensor(sizes, device=device))
    rows = envs.to(device)[decision]                     # each copy's env
    observer = env.state.turn[rows]
    hidden = torch.tensor([hands for w in worlds for hands in w], dtype=torch.long,
                          device=device)
    seats = (observer[:, None] + _HIDDEN.to(device)) & 3           # absolute hidden seats
    state = history.round_start.take(rows)
    state.hands.scatter_(1, seats, hidden | env.state.played_by[rows].gather(1, seats))
    replay = replays.env(rows.numel(), env.target)
    replay.load_state(state)
    actions, length = history.actions[rows], history.length[rows]
    logl = torch.zeros(rows.numel(), dtype=torch.float64, device=device)
    steps = int(length.max()) if length.numel() else 0
    for t in range(steps):
        live = t < length
        mask = replay.action_mask
        moving = (live & (replay.current_seat != observer) & (layout.legal_counts(mask) > 1))
        choosers = moving.nonzero().squeeze(1)
        if choosers.numel():
            sub_mask = mask[choosers]
            logits, _ = model(replay.observation[choosers], sub_mask)
            # an illegal real move (a world inconsistent with the plays) is a ValueError here
            chosen = MaskedCategorical(logits, sub_mask).log_prob(actions[choosers, t])
            logl.index_add_(0, choosers, chosen.double())
        if t + 1 < steps:
            replay.step(torch.where(live, actions[:, t], mask.to(torch.int8).argmax(1)))
    return np.split(logl.cpu().numpy(), np.cumsum(sizes)[:-1]) if worlds else []


def world_weights(log_likelihoods: np.ndarray, power: float) -> np.ndarray:
    """``exp(power * log-likelihood)`` normalised to sum 1 (uniform where all are equal)."""
    scaled = power * np.asarray(log_likelihoods, dtype=np.float64)
    weights = np.exp(scaled - scaled.max())
    return weights / weights.sum()


def resampled(decision: Decision, weights: np.ndarray, samples: int,
              rng: np.random.Generator) -> tuple[Decision, np.ndarray]:
    """``samples`` draws among ``decision``'s worlds in proportion to ``weights`` (systematic
    resampling: one uniform number, so each world is drawn ``floor`` or ``ceil`` of ``samples x
    weight`` times), as a decision over the distinct worlds drawn and their shares of the draws."""
    points = (rng.random() + np.arange(samples)) / samples
    drawn = np.minimum(np.searchsorted(np.cumsum(weights), points), len(weights) - 1)
    worlds, counts = np.unique(drawn, return_counts=True)
    kept = Decision(decision.view, decision.legal, [decision.hidden[w] for w in worlds],
                    [decision.streams[w] for w in worlds], decision.rounds)
    return kept, counts / samples


class InferenceSearch(BatchedAgent):
    """``search:policy`` with its worlds weighted by the other seats' plays this round (module
    docstring).  With ``candidates`` (default: the searcher's ``samples``) equal to ``samples``,
    the worlds of decision ``(pair, game, move)`` are those the plain
    :class:`~sevenrocks_env.arena_batched.BatchedSearchAgent` draws for it (same generator
    seed), so the two differ only in the weights.  With more, ``candidates`` worlds are drawn
    and weighted and ``samples`` of them are drawn again by weight (:func:`resampled`), so the
    rollouts go to the likely worlds instead of spending most of their time on unlikely ones."""

    needs_observation = True
    needs_history = True

    def __init__(self, searcher: PolicySearchAgent, power: float = 1.0,
                 candidates: int | None = None):
        if not np.isfinite(power) or not 0 <= power <= 10:
            raise ValueError(f"inference: power must be in [0, 10], got {power!r}")
        candidates = searcher.samples if candidates is None else candidates
        if not is_int(candidates, searcher.samples, MAX_WORLDS):
            raise ValueError(f"inference: candidates must be an int in [samples = "
                             f"{searcher.samples}, {MAX_WORLDS}], got {candidates!r}")
        self.searcher, self.power, self.candidates = searcher, float(power), candidates
        self.name = f"{searcher.name},inference={power:g}"
        if candidates != searcher.samples:
            self.name += f",candidates={candidates}"
        self._replays = _Replays(searcher.device)
        self.effective_worlds: list[float] = []  # 1 / sum(w^2) of each decision, for reports

    def actions(self, env, envs, context):
        searcher = self.searcher.on(env.device)
        observations = env.observation[envs].cpu().numpy()
        masks = env.action_mask[envs].cpu().numpy()
        keys = zip(context["coordinate"][envs].tolist(), context["moves"][envs].tolist())
        decisions, rngs = [], []
        for observation, mask, (coordinate, move) in zip(observations, masks, keys):
            view = decode(observation)
            rngs.append(np.random.default_rng((context["seed"], _SEARCH_SALT, coordinate, move)))
            decisions.append(Decision.sample(view, legal_from_mask(mask), self.candidates,
                                             rngs[-1], rounds=searcher.rounds(view)))
        logl = play_log_likelihoods(searcher.model, context["history"], env, envs,
                                    [d.hidden for d in decisions], self._replays)
        weights = [world_weights(row, self.power) for row in logl]
        self.effective_worlds += [1.0 / float(w @ w) for w in weights]
        if self.candidates != searcher.samples:
            decisions, weights = zip(*(resampled(d, w, searcher.samples, rng)
                                       for d, w, rng in zip(decisions, weights, rngs)))
        scores = searcher.scores(observations, masks, list(decisions), list(weights))
        chosen = [best_action(legal_from_mask(mask), score) for mask, score in zip(masks, scores)]
        return torch.tensor(chosen, dtype=torch.long, device=envs.device)


__all__ = ["InferenceSearch", "RoundHistory", "play_log_likelihoods", "resampled",
           "world_weights"]
