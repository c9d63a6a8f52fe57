"""The arena on the batched engine: thousands of duplicate pairs stepped together as tensors.

:func:`evaluate_batched` gives the same :class:`~sevenrocks_env.arena.ArenaResult` as
:func:`sevenrocks_env.arena.evaluate` -- the same duplicate design and the same statistics (A's
share of matches, truncated = 1/2, with a Wilson interval over pairs) -- computed by
:func:`sevenrocks_env.arena.run_pairs` from one :class:`~sevenrocks_env.arena.PairOutcome` per
pair.  Pair ``k`` is two envs of a :class:`~sevenrocks_env.batched.VectorEnv` on deal stream
``k``: env ``2k`` has A on seats 0/2, env ``2k + 1`` A on seats 1/3, and round ``r`` of both is
dealt from ``(seed, k, r)`` alone, so both games see the same hands and luck cancels.  Only the
first match of each env counts (the engine's auto-reset deals a next one; what it plays is
ignored).  Deals come from the batched engine's own generator, so the deals of pair ``k`` differ
from the unbatched arena's pair ``k``: the two arenas estimate the same win rate on different
samples of deals.

The batchable agents and how each decides: :mod:`sevenrocks_env.batched_agents`.

Every agent is a function of the env's own coordinates, never of the batch, so the result is
the same for any ``batch`` (pairs stepped together).  As in the unbatched arena, a forced move
(one legal action, usually a knock, R6) is played without asking the agent and ``decisions``
count the real choices.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import closing

import torch

from . import rules
from .arena import (DEFAULT_MAX_ROUNDS, ArenaResult, PairOutcome, check_settings, check_workers,
                    run_pairs, split_names)
from .batched import VectorEnv, layout
from .batched.history import RoundHistory
from .batched.inputs import checked_device
from .batched_agents import BatchedAgent, batched_agent
from .driver import blamed_on

#: Pairs stepped together by default (2 envs each).
DEFAULT_BATCH = 4096


def play_pairs_batched(side_a: BatchedAgent, side_b: BatchedAgent, seed: int, first: int,
                       pairs: int, target: int, max_rounds: int, device="cpu",
                       records: bool = False):
    """Pairs ``first .. first + pairs - 1`` stepped together: their :class:`PairOutcome` list,
    and with ``records=True`` also each env's first match as a game record (``[2 * pairs]``;
    env ``2k`` is pair ``first + k`` with A on seats 0/2, env ``2k + 1`` with A on 1/3; a match
    cut at ``max_rounds`` is recorded to that round; every record says ``"max_rounds"``, as the
    unbatched arena's do)."""
    # (checked here too: the records carry max_rounds, which validate bounds)
    seed, pairs, target, max_rounds = check_settings(
        seed=seed, pairs=pairs, target=target, max_rounds=max_rounds).values()
    device = checked_device(device)
    n = 2 * pairs
    index = torch.arange(n, device=device)
    a_team = index & 1                                    # A's team in each env
    env = VectorEnv(n, device, target, max_rounds=None, reward="shaped", points_scale=1.0,
                    win_reward=0.0, records=records, validate=False,
                    deal_streams=(first + index // 2).to(device))
    env.reset(seed)
    context = {"seed": seed, "coordinate": (first + index // 2) * 2 + a_team,
               "moves": torch.zeros(n, dtype=torch.long, device=device)}
    history = None
    if side_a.needs_history or side_b.needs_history:
        history = context["history"] = RoundHistory(env)
    active = torch.ones(n, dtype=torch.bool, device=device)
    round_margin = torch.zeros(n, dtype=torch.long, device=device)   # team 0's, this round
    rounds = torch.zeros(n, dtype=torch.long, device=device)
    round_wins2 = torch.zeros(n, dtype=torch.long, device=device)   # A's rounds, 2 per win
    final = torch.zeros(n, 2, dtype=torch.long, device=device)       # final scores per team
    score2 = torch.zeros(n, dtype=torch.long, device=device)         # A's match score, x2
    truncated = torch.zeros(n, dtype=torch.bool, device=device)
    decisions = torch.zeros(n, 2, dtype=torch.long, device=device)   # A, B
    think = torch.zeros(n, 2, dtype=torch.float64)
    think_cpu = torch.zeros(n, 2, dtype=torch.float64)
    first_records: list = [None] * n
    while bool(active.any()):
        seat, mask = env.current_seat, env.action_mask
        actions = mask.long().argmax(1)                   # forced moves and finished envs
        choice = active & (layout.legal_counts(mask) > 1)
        a_on_turn = (seat & 1) == a_team
        for side, (agent, on_turn) in enumerate(((side_a, a_on_turn), (side_b, ~a_on_turn))):
            envs = (choice & on_turn).nonzero().squeeze(1)
            if not envs.numel():
                continue
            started, cpu = time.perf_counter(), time.process_time()
            with blamed_on(agent, f" (side {'AB'[side]})"):
                actions[envs] = agent.actions(env, envs, context)
            rows, share = envs.cpu(), 1.0 / envs.numel()
            think[rows, side] += (time.perf_counter() - started) * share
            think_cpu[rows, side] += (time.process_time() - cpu) * share
            decisions[envs, side] += 1
        scores_before, rounds_before = env.state.scores.clone(), env.state.round_index.clone()
        rewards, won, _ = env.step(actions)
        if history is not None:
            history.record(env, actions)
        context["moves"] += 1
        round_margin += rewards[:, 0].round().long()      # points_scale 1: team 0's change
        ended = active & (won | (env.state.round_index != rounds_before))
        was_active = active.clone() if records else None
        if bool(ended.any()):
            _close_rounds(ended, won, seat, scores_before, rewards, env, a_team, round_margin,
                          rounds, round_wins2, final, score2, truncated, max_rounds, active)
        if records:  # a match the arena cut: its record stops there (the engine plays on)
            for i in (was_active & ~active & truncated).nonzero().squeeze(1).tolist():
                first_records[i] = env.stopped_record(i, max_rounds)
            for i, record in env.pop_finished_records():
                if first_records[i] is None and was_active[i]:
                    # played under the arena's limit (the engine has none): said as a cut one's
                    first_records[i] = {**record, "max_rounds": max_rounds}
    outcomes = _outcomes(pairs, a_team, score2, truncated, final, rounds, round_wins2,
                         decisions, think, think_cpu)
    return (outcomes, first_records) if records else outcomes


def _close_rounds(ended, won, seat, scores_before, rewards, env, a_team, round_margin, rounds,
                  round_wins2, final, score2, truncated, max_rounds, active) -> None:
    """Book the rounds that just ended (R7) and the matches that ended with them (R8)."""
    sign = 1 - 2 * a_team                                 # team 0's margin -> A's
    a_margin = round_margin * sign
    rounds += ended
    round_wins2 += ended * (2 * (a_margin > 0) + (a_margin == 0))
    round_margin *= ~ended
    # a win (R8): no deductions, so the winners' change is the step's whole margin
    winning = ended & won
    winner = seat & 1
    gained = rewards[:, 0].round().long().abs()
    won_final = scores_before + torch.nn.functional.one_hot(winner, 2) * gained[:, None]
    final[winning] = won_final[winning]
    score2 += winning * 2 * (winner == a_team)
    # max_rounds: the engine runs without a limit, the arena stops the match here
    cut = ended & ~won & (rounds >= max_rounds)
    final[cut] = env.state.scores[cut]
    score2 += cut
    truncated |= cut
    active &= ~(winning | cut)


def _outcomes(pairs, a_team, score2, truncated, final, rounds, round_wins2, decisions, think,
              think_cpu):
    columns = [t.cpu().tolist() for t in (a_team, score2, truncated, final, rounds, round_wins2,
                                           decisions)]
    a_team, score2, truncated, final, rounds, round_wins2, decisions = columns
    think, think_cpu = think.tolist(), think_cpu.tolist()
    outcomes = []
    for pair in range(pairs):
        out = PairOutcome()
        for e in (2 * pair, 2 * pair + 1):
            a, b = a_team[e], 1 - a_team[e]
            out.score += score2[e] / 2
            out.truncated += truncated[e]
            out.margin += final[e][a] - final[e][b]
            out.rounds += rounds[e]
            out.points_a += final[e][a]
            out.points_b += final[e][b]
            out.round_wins_a += round_wins2[e] / 2
            for side in (0, 1):
                out.decisions[side] += decisions[e][side]
                out.think_s[side] += think[e][side]
                out.think_cpu_s[side] += think_cpu[e][side]
        outcomes.append(out)
    return outcomes


class Spans(Sequence):
    """``(first pair, count)`` of each span that starts at ``starts`` (a ``range``) and stops
    at ``stop``, made when read (a list of them would take a GB for 10**7 single pairs)."""

    def __init__(self, starts: range, stop: int):
        self.starts, self.stop = starts, stop

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._span(first) for first in self.starts[index]]
        return self._span(self.starts[index])

    def _span(self, first: int) -> tuple[int, int]:
        return first, min(self.starts.step, self.stop - first)


def evaluate_batched(agent_a, agent_b, pairs: int, seed: int = 0,
                     target: int = rules.DEFAULT_TARGET, max_rounds: int = DEFAULT_MAX_ROUNDS,
                     device="cpu", batch: int = DEFAULT_BATCH, progress: bool = False,
                     log=None, workers: int = 1) -> ArenaResult:
    """Agent A against agent B over ``pairs`` duplicate pairs on the batched engine.

    ``agent_a``/``agent_b``: spec strings (optionally ``name=spec``) or agent objects with a
    batched version (module docstring); ``batch`` pairs are stepped together (``2 * batch``
    envs); the result does not depend on it.  ``log``: a pair log path, as for
    :func:`sevenrocks_env.arena.evaluate` (each batch is appended when it ends).
    ``workers`` > 1 (CPU, spec strings): that many processes each step spans of at most
    ``batch`` pairs (fewer where that keeps every worker busy: ``pairs / workers``), with this
    process's number of torch threads each -- for agents that spend their time searching
    rather than stepping (``search``), where one process leaves cores idle; the same result.
    """
    pairs, batch, target, max_rounds, seed = check_settings(
        pairs=pairs, batch=batch, target=target, max_rounds=max_rounds, seed=seed).values()
    (name_a, agent_a), (name_b, agent_b) = split_names(agent_a, agent_b)
    check_workers(workers, agent_a, agent_b)
    if workers > 1 and torch.device(device).type != "cpu":
        raise ValueError(f"workers > 1 play on the CPU; on {device} use one process")
    # with workers too: a bad spec fails here, before any process starts
    batched_agent(agent_a, device), batched_agent(agent_b, device)
    from .fingerprints import check_files, run_fingerprints
    files = run_fingerprints((agent_a, agent_b))  # before the agents that play are built

    def chunks(done: int):
        if workers == 1:
            side_a, side_b = batched_agent(agent_a, device), batched_agent(agent_b, device)
            check_files((agent_a, agent_b), files)
            for first in range(done, pairs, batch):
                yield play_pairs_batched(side_a, side_b, seed, first, min(batch, pairs - first),
                                         target, max_rounds, device)
            return
        from .arena_pool import play_spans_in_pool
        size = min(batch, -(-(pairs - done) // workers))
        spans = Spans(range(done, pairs, size), pairs)  # made as read: 10**9 pairs at batch 1
        with closing(play_spans_in_pool(agent_a, agent_b, seed, spans, target, max_rounds,
                                        workers, torch.get_num_threads(), files)) as played:
            yield from played  # the pool is shut down when the loop stops, however it stops

    return run_pairs(((name_a, agent_a), (name_b, agent_b)), pairs, seed, target, max_rounds,
                     f"batched:{torch.device(device).type}", chunks, log, progress, files)


__all__ = ["DEFAULT_BATCH", "evaluate_batched", "play_pairs_batched"]
