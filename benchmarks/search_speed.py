"""Time per decision of the search agents, one decision at a time and many decisions together.

    nice -n 10 .venv/bin/python benchmarks/search_speed.py --decisions 40 --samples 64 \\
        [--device cpu]

Positions: the non-forced decisions of random-play matches (seed ``--seed``), the same for every
row.  Rows: ``search`` in the rule engine (``SearchAgent.act``, the unbatched arena's way); the
batched ``search`` (``BatchedSearch.choose_many``) for one decision at a time and for all
decisions together (the batched arena's way); ``search:policy=shipped`` the same two ways.
Prints a markdown table of mean, median and p90 ms per decision (1 torch thread) and the seeds.
A row that decides all decisions in one call times that call only: its mean is the call's time
over its decisions, and its median and p90 are "—" (no decision was timed on its own).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
import torch

from sevenrocks_env import arguments
from sevenrocks_env import rules
from sevenrocks_env.agents.belief import MAX_WORLDS
from sevenrocks_env.agents.policy_search import PolicySearchAgent
from sevenrocks_env.agents.search import SearchAgent
from sevenrocks_env.agents.search_batched import BatchedSearch
from sevenrocks_env.machine import machine_text
from sevenrocks_env.observation import action_mask, encode

#: The most ``--decisions`` a run takes (the rule-engine row alone: tens of minutes at 64 samples).
MAX_DECISIONS = 10_000
#: The seed of the search agents' worlds (the rule engine's ``SearchAgent``); a batched call's
#: ``i``-th decision draws its worlds from ``numpy.random.default_rng(WORLD_SEED + i)``.
WORLD_SEED = 0


def positions(count: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``count`` (observation, mask) pairs with a real choice, from random-play matches."""
    rng = np.random.default_rng(seed)
    found, match_seed = [], seed
    while len(found) < count:
        match = rules.Match.new(match_seed)
        match_seed += 1
        while not match.over and len(found) < count:
            legal = rules.legal_actions(match)
            if len(legal) > 1:
                found.append((encode(match, match.turn), action_mask(match, match.turn)))
            rules.apply_action(match, legal[int(rng.integers(len(legal)))])
    return found


def timed(decide, found, size: int) -> list[float]:
    """ms per decision, calling ``decide`` on ``size`` decisions at a time: each call's time is
    split evenly over the decisions it made (so with ``size > 1`` the numbers of one call are
    equal, and only their mean means anything)."""
    per = []
    for start in range(0, len(found), size):
        chunk = found[start:start + size]
        began = time.perf_counter()
        decide(chunk)
        per += [(time.perf_counter() - began) * 1e3 / len(chunk)] * len(chunk)
    return per


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--decisions", type=arguments.int_in(1, MAX_DECISIONS), default=40)
    parser.add_argument("--samples", type=arguments.int_in(1, MAX_WORLDS), default=64,
                        help="worlds a decision samples")
    parser.add_argument("--seed", type=arguments.seed, default=0,
                        help="seed of the random-play matches the positions come from")
    parser.add_argument("--device", type=arguments.device, default="cpu",
                        help="where the batched rows' rollouts run (the rule engine: the CPU)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    found = positions(args.decisions, args.seed)
    n, samples = len(found), args.samples

    def rngs(chunk):
        return [np.random.default_rng(WORLD_SEED + k) for k in range(len(chunk))]

    search = SearchAgent(samples=samples, seed=WORLD_SEED)
    batched = BatchedSearch(search, args.device)
    guided = PolicySearchAgent("shipped", samples=samples, seed=WORLD_SEED, device=args.device)
    rows = [
        ("`search`, rule engine", lambda c: [search.act(o, m) for o, m in c], 1),
        ("`search`, batched, one decision a call",
         lambda c: batched.choose_many(*zip(*c), rngs(c)), 1),
        (f"`search`, batched, {n} decisions a call",
         lambda c: batched.choose_many(*zip(*c), rngs(c)), n),
        ("`search:policy=shipped`, one decision a call",
         lambda c: guided.choose_many(*zip(*c), rngs(c)), 1),
        (f"`search:policy=shipped`, {n} decisions a call",
         lambda c: guided.choose_many(*zip(*c), rngs(c)), n),
    ]
    batched.choose_many(*zip(*found[:2]), rngs(found[:2]))  # warm-up: tables, allocations
    guided.choose_many(*zip(*found[:2]), rngs(found[:2]))
    print(f"{machine_text(with_torch=True)}\n{n} decisions, samples={samples}, batched rows on "
          f"{args.device}; seeds: positions from random-play matches --seed {args.seed}, "
          f"worlds {WORLD_SEED} (a batched call's i-th decision: "
          f"numpy default_rng({WORLD_SEED} + i))\n")
    print("| agent, how called | mean ms | median ms | p90 ms |")
    print("|---|---:|---:|---:|")
    for label, decide, size in rows:
        ms = timed(decide, found, size)
        if size > 1:  # one call for all decisions: no decision's own time to take a spread of
            median = p90 = "—"
        else:
            median, p90 = f"{statistics.median(ms):.1f}", f"{float(np.percentile(ms, 90)):.1f}"
        print(f"| {label} | {statistics.fmean(ms):.1f} | {median} | {p90} |", flush=True)
    if n > 1:
        print(f"\n—: a row of {n} decisions a call decides them all in one call and times that "
              "call only; its mean is the call's time over its decisions, and no decision was "
              "timed on its own to give a median or p90.")
    return 0


if __name__ == "__main__":  # a closed stdout, an ASCII terminal: as the sevenrocks commands
    from sevenrocks_env.cli import guarded
    sys.exit(guarded("benchmarks/search_speed.py", main))
