"""Inference from the other seats' plays: how likely each sampled world makes what they did.

The determinized search draws its worlds uniformly among the deals consistent with the seat's
view (tile counts, knocks: :class:`~sevenrocks_env.agents.belief.HandSampler`).  But the other
seats did not play at random: if they play like the policy, a world in which their plays this
round were the policy's likely moves is more likely to be the real deal.  Bridge and Skat
programs weight their worlds this way (PIMC with inference).  This module computes that weight
for many decisions at once on the batched engine:

1. :class:`~sevenrocks_env.batched.history.RoundHistory` keeps, per env, the public start of its
   current round and every action played since (knocks included), and no hands.
2. :func:`play_log_likelihoods` rebuilds each world's round start -- the observer's hand is its
   hand now plus what it played this round, and so is each hidden seat's, with its hand now from
   the world (R1) -- replays the round's actions in every world at once, and sums, per world,
   the policy's log-probability of each hidden seat's real move from that seat's observation in
   the world.  Only this round counts: every round is a fresh deal (R1).  A world that makes a
   real move forced (the seat's only legal move there) gives it probability 1.
3. :class:`InferenceSearch` (a batched-arena agent) weights the search's worlds by
   ``exp(power * log-likelihood)``, normalised per decision: ``power`` 1 is Bayes' rule if the
   other seats play the policy; less tempers it for seats that do not.

The replay needs the round's plays, which an observation does not hold: the agent has
``needs_history = True``.  In the batched arena it reads ``context["history"]``; everywhere else
it takes ``act(observation, action_mask, history=PublicRound)``
(:mod:`sevenrocks_env.public_round`; every driver of this package passes it), and
:func:`replayed_round` rebuilds the round in a one-env engine, checking that the plays are legal
and lead to exactly the observation.  Its spec is ``search:policy=shipped,inference=0.5``;
``benchmarks/inference_search.py`` measures it.
"""

from __future__ import annotations

import numpy as np
import torch

from ..batched_agents import BatchedAgent, search_rngs
from ..batched import VectorEnv, layout
from ..batched.history import RoundHistory
from ..checks import is_int, is_number_in, shown
from ..match_state import fewest_rounds_before
from ..observation import checked_inputs, decode, encode
from ..policy import MaskedCategorical
from ..public_round import PublicRound
from ..rules import Match, apply_action, is_legal
from ..tiles import describe_action
from .spec_text import value_text
from .belief import HIDDEN_SEATS, MAX_WORLDS, HandSampler
from .layout import best_action, legal_from_mask
from .policy_search import PolicySearchAgent
from .world_rollouts import Decision, copy_groups

_HIDDEN = torch.tensor(HIDDEN_SEATS)
#: The largest ``power`` (10: a world 1 nat less likely weighs e^-10 as much).
MAX_POWER = 10.0


def play_log_likelihoods(searcher: PolicySearchAgent, history: RoundHistory, env, envs,
                         worlds: list[list[tuple[int, int, int]]]) -> list[np.ndarray]:
    """Per decision ``i`` (env ``envs[i]`` of ``env``, its seat on turn the observer),
    ``float64[S_i]``: the log-probability under ``searcher``'s network of the hidden seats' real
    moves this round in each of its worlds ``worlds[i]`` (the hands of relative seats 1, 2, 3
    now, as ``Decision.hidden``), replayed in ``searcher``'s engine in groups of at most
    ``MAX_COPIES`` worlds (``searcher`` plays on ``env``'s device: ``searcher.on(env.device)``).
    """
    out = []
    for start, end in copy_groups([len(w) for w in worlds]):
        logl = _replay(searcher, history, env, envs[start:end], worlds[start:end])
        out += np.split(logl, np.cumsum([len(w) for w in worlds[start:end]])[:-1])
    return out


@torch.inference_mode()
def _replay(searcher, history, env, envs, worlds) -> np.ndarray:
    """:func:`play_log_likelihoods` of one group, as one array over its worlds."""
    device = env.device
    sizes = torch.tensor([len(w) for w in worlds], device=device)
    rows = torch.repeat_interleave(envs.to(device), sizes)          # each world's env
    observer = env.state.turn[rows]
    seats = (observer[:, None] + _HIDDEN.to(device)) & 3            # absolute hidden seats
    hands = env.state.hands[rows]
    now = torch.zeros_like(hands)
    now.scatter_(1, observer[:, None], hands.gather(1, observer[:, None]))  # its own hand
    now.scatter_(1, seats, torch.tensor([hands for w in worlds for hands in w],
                                        dtype=torch.long, device=device))
    state = history.round_start.take(rows)  # (no hands: the history keeps none)
    state.hands = now | env.state.played_by[rows]   # each seat's hand at the round's start
    replay = searcher.engine(rows.numel(), env.target)
    replay.load_state(state)
    steps = int(history.length[envs.to(device)].max())
    actions, length = history.actions[rows, :steps], history.length[rows]
    logl = torch.zeros(rows.numel(), dtype=torch.float64, device=device)
    for t in range(steps):
        live = t < length
        mask = replay.action_mask
        if not bool(mask.gather(1, actions[:, t, None]).squeeze(1)[live].all()):
            raise ValueError("inference: a world makes a real move of this round illegal (a "
                             "world inconsistent with the seat's view, or a wrong history)")
        choosers = (live & (replay.current_seat != observer)
                    & (layout.legal_counts(mask) > 1)).nonzero().squeeze(1)
        if choosers.numel():
            sub_mask = mask[choosers]
            logits, _ = searcher.model(replay.observation[choosers], sub_mask)
            chosen = MaskedCategorical(logits, sub_mask).log_prob(actions[choosers, t])
            logl.index_add_(0, choosers, chosen.double())
        if t + 1 < steps:
            replay.step(torch.where(live, actions[:, t], mask.to(torch.int8).argmax(1)))
    return logl.cpu().numpy()


def replayed_round(history: PublicRound, observation: np.ndarray, device,
                   world: tuple[int, int, int] | None = None) -> tuple[VectorEnv, RoundHistory]:
    """A one-env engine at the decision ``observation`` shows, with its :class:`RoundHistory`,
    rebuilt from the round's public ``history`` (checked first): the observer is the seat on
    turn after ``history.actions``, its hand at the round's start is its hand now plus what it
    played this round, and the hidden seats' hands now are ``world`` (default: one drawn from a
    fixed generator; any world consistent with the view will do, since
    :func:`play_log_likelihoods` replaces them).  ``ValueError`` if the plays do not
    fit: a tile the view does not place there, an illegal action, a round that ends on the way,
    or an end position whose observation is not ``observation``."""
    history = history.checked()
    view = decode(observation)
    if world is None:
        world = HandSampler(view).sample_many(np.random.default_rng(0), 1)[0]
    if len(world) != len(HIDDEN_SEATS):
        raise ValueError(f"inference: a world is the hands of relative seats 1-3, got "
                         f"{len(world)} hands")
    seat = history.seat_on_turn
    hands = [0, 0, 0, 0]
    hands[seat] = view.hand | view.played_by[0]
    for relative, hand in enumerate(world, start=1):
        hands[(seat + relative) % 4] = hand | view.played_by[relative]
    try:
        start = Match.from_deal(hands, history.opener, target=view.target, scores=history.scores,
                                keep_history=False,  # (the round's number is not in the view)
                                round_index=fewest_rounds_before(history.scores))
    except ValueError as error:
        raise ValueError(f"inference: the history does not fit the observation ({error})") \
            from None
    env = VectorEnv(1, device, view.target, max_rounds=None)
    env.load([start])
    replayed = RoundHistory.of_rounds(env, [history.actions])
    for index, action in enumerate(history.actions):  # (the rules engine: faster for one)
        if not is_legal(start, action):
            raise ValueError(f"inference: history action {index} ({describe_action(action)}) "
                             f"is illegal for seat {start.turn} in the round the observation "
                             "shows")
        apply_action(start, action)
        if start.over or start.awaiting_deal:
            raise ValueError(f"inference: history action {index} ends the round; the history "
                             "is the round in progress")
    if not np.array_equal(encode(start, seat), observation):
        raise ValueError("inference: the history does not lead to this observation (another "
                         "round's plays, or another seat's view?)")
    env.load([start])
    return env, replayed


def world_weights(log_likelihoods: np.ndarray, power: float) -> np.ndarray:
    """``exp(power * log-likelihood)`` normalised to sum 1 (uniform where all are equal)."""
    scaled = power * np.asarray(log_likelihoods, dtype=np.float64)
    weights = np.exp(scaled - scaled.max())
    return weights / weights.sum()


def resampled(decision: Decision, weights: np.ndarray, samples: int,
              rng: np.random.Generator) -> tuple[Decision, np.ndarray]:
    """``samples`` draws among ``decision``'s worlds in proportion to ``weights`` (systematic
    resampling: one uniform number, so each world is drawn ``floor`` or ``ceil`` of ``samples x
    weight`` times), as a decision over the distinct worlds drawn and their shares of the draws.

    The points are spread over the weights' own cumulative total, not over 1: weights that sum
    to a hair under 1 in floating point must not let the top point fall past the total and
    draw the last world whatever its weight (a world of weight 0 is never drawn)."""
    cumulative = np.cumsum(weights)
    points = (rng.random() + np.arange(samples)) / samples * cumulative[-1]
    drawn = np.minimum(np.searchsorted(cumulative, points), len(weights) - 1)
    worlds, counts = np.unique(drawn, return_counts=True)
    kept = Decision(decision.view, decision.legal, [decision.hidden[w] for w in worlds],
                    [decision.streams[w] for w in worlds], decision.rounds)
    return kept, counts / samples


class InferenceSearch(BatchedAgent):
    """``search:policy=...,inference=POWER``: the policy-guided search with its worlds weighted
    by the other seats' plays this round (module docstring), as an agent (:meth:`act`, given
    the round's plays) and in the batched arena (:meth:`actions`).

    With ``candidates`` (default: the searcher's ``samples``) equal to ``samples``, the worlds
    of decision ``(pair, game, move)`` are those the plain
    :class:`~sevenrocks_env.batched_agents.BatchedSearchAgent` draws for it (the same
    :func:`~sevenrocks_env.batched_agents.search_rngs`), so the two differ only in the weights
    (``power`` 0 plays the plain search).  With more, ``candidates`` worlds are drawn and
    weighted and ``samples`` of them are drawn again by weight (:func:`resampled`), so the
    rollouts go to the likely worlds instead of spending most of their time on unlikely ones."""

    needs_history = True

    def __init__(self, searcher: PolicySearchAgent, power: float = 1.0,
                 candidates: int | None = None):
        if not isinstance(searcher, PolicySearchAgent):  # (the plain search has no policy)
            raise TypeError(f"InferenceSearch searches with a PolicySearchAgent, got "
                            f"{shown(searcher)} (an agent spec: make_agent("
                            "'search:policy=shipped,inference=0.5'))")
        if not is_number_in(power, 0, MAX_POWER):
            raise ValueError(f"inference (the weights' power) must be in [0, {MAX_POWER}], got "
                             f"{shown(power)}")
        if searcher.rollout != "argmax":
            raise ValueError("inference: rollout=argmax only (in the batched arena sampled "
                             "rollouts would depend on how decisions are grouped)")
        candidates = searcher.samples if candidates is None else candidates
        if not is_int(candidates, searcher.samples, MAX_WORLDS):
            raise ValueError(f"inference: candidates must be an int in [samples = "
                             f"{searcher.samples}, {MAX_WORLDS}], got {shown(candidates)}")
        self.searcher, self.power, self.candidates = searcher, float(power), candidates
        self.name = f"{searcher.name},inference={value_text(self.power)}"  # as a spec writes it
        if candidates != searcher.samples:
            self.name += f",candidates={candidates}"
        self._on: dict[torch.device, PolicySearchAgent] = {}
        # for reports: the sum over decisions of 1 / sum(w^2), and how many decisions (a running
        # total: an arena or a long-lived web opponent would grow a list without bound)
        self.effective_worlds, self.decisions_weighed = 0.0, 0

    def seed(self, seed: int | None) -> None:
        self.searcher.seed(seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray,
            history: PublicRound | None = None) -> int:
        """The search's move from ``observation`` after the round's plays ``history`` (a
        :class:`~sevenrocks_env.public_round.PublicRound`; every driver of this package passes
        it, a PettingZoo loop takes ``env.unwrapped.public_round()``).  A forced move is played
        at once; ``ValueError`` without a history, or with one that does not fit."""
        observation, action_mask = checked_inputs(observation, action_mask)
        legal = legal_from_mask(action_mask)
        if len(legal) == 1:
            return legal[0]
        if not isinstance(history, PublicRound):
            raise ValueError(f"{self.name} reads the round's plays: call act(observation, "
                             "action_mask, history=...) with a PublicRound (in a PettingZoo "
                             f"loop: env.unwrapped.public_round()), got {type(history).__name__}")
        env, replayed = replayed_round(history, observation, self.searcher.device)
        [scores] = self.scores_in(env, torch.zeros(1, dtype=torch.long), [self.searcher._rng],
                                  replayed)
        return best_action(legal, scores)

    def actions(self, env, envs, context):
        scores = self.scores_in(env, envs, search_rngs(context, envs), context["history"])
        masks = env.action_mask[envs].cpu().numpy()
        chosen = [best_action(legal_from_mask(mask), score) for mask, score in zip(masks, scores)]
        return torch.tensor(chosen, dtype=torch.long, device=envs.device)

    def scores_in(self, env, envs, rngs, history: RoundHistory) -> list[list[float]]:
        """The score of each legal action (ascending) of the seat on turn in each env ``envs``
        of ``env`` (each with a real choice; ``history`` follows ``env``), decision ``i`` drawing
        its worlds from ``rngs[i]``: the searcher's rollout values over those worlds weighted by
        ``exp(power * log-likelihood)`` of the round's plays (or, with more ``candidates`` than
        ``samples``, the worlds drawn again by those weights), plus its prior term."""
        if env.device not in self._on:  # one copy per device, as BatchedSearchAgent's
            self._on[env.device] = self.searcher.on(env.device)
        searcher = self._on[env.device]
        observations = env.observation[envs].cpu().numpy()
        masks = env.action_mask[envs].cpu().numpy()
        with searcher.own_threads():
            decisions = searcher.decisions(observations, masks, rngs, self.candidates)
            logl = play_log_likelihoods(searcher, history, env, envs,
                                        [d.hidden for d in decisions])
            weights = [world_weights(row, self.power) for row in logl]
            self.effective_worlds += sum(1.0 / float(w @ w) for w in weights)
            self.decisions_weighed += len(weights)
            if self.candidates != searcher.samples:
                decisions, weights = map(list, zip(*(
                    resampled(d, w, searcher.samples, rng)
                    for d, w, rng in zip(decisions, weights, rngs))))
            elif self.power == 0:
                weights = None  # the plain search's mean, to the last bit
            return searcher.scores(observations, masks, decisions, weights)


__all__ = ["InferenceSearch", "MAX_POWER", "play_log_likelihoods", "replayed_round", "resampled",
           "world_weights"]
