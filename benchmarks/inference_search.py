"""The policy-guided search with inference: its worlds weighted by the other seats' plays.

    nice -n 5 .venv/bin/python benchmarks/inference_search.py --pairs 400 --seed 902 --power 1
        [--against search:samples=64] [--against plain]

``search:policy=shipped,samples=64`` draws its worlds uniformly among the deals consistent with
what the seat has seen.  :class:`~sevenrocks_env.agents.inference.InferenceSearch` draws the
same worlds and weights each by ``exp(power x log-likelihood)`` of the three other seats' real
moves this round under the policy (replayed on the batched engine); with ``--candidates`` it
draws that many, weights them, and searches ``--samples`` drawn again from them by weight.
This script plays it in the batched arena (duplicate deals, Wilson 95% intervals over pairs)
against each ``--against``:
an agent spec (default ``search:samples=64``, issue 11's bar for the policy with search: 65%),
or ``plain`` for the same search without weights.  Prints a markdown table and the seed.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from sevenrocks_env import arguments
from sevenrocks_env.agents.belief import MAX_WORLDS
from sevenrocks_env.agents.inference import MAX_POWER, InferenceSearch
from sevenrocks_env.agents.policy_search import PolicySearchAgent
from sevenrocks_env.arena_batched import evaluate_batched
from sevenrocks_env.arena_cli import check_specs
from sevenrocks_env.machine import machine_text
from sevenrocks_env.rules import DEFAULT_TARGET


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=arguments.pairs, default=400)
    parser.add_argument("--seed", type=arguments.seed, default=902, help="deal seed")
    parser.add_argument("--samples", type=arguments.int_in(1, MAX_WORLDS), default=64)
    parser.add_argument("--power", type=arguments.real_at_most(MAX_POWER, positive=False),
                        default=1.0,
                        help="weight = likelihood ** power")
    parser.add_argument("--candidates", type=arguments.int_in(1, MAX_WORLDS),
                        help="worlds drawn and weighted, then --samples drawn again by weight "
                             "(default: --samples, weights only)")
    parser.add_argument("--against", action="append",
                        help="an agent spec, or 'plain' (repeatable; default search:samples=64)")
    parser.add_argument("--target", type=arguments.int_in(1, 5000), default=DEFAULT_TARGET)
    parser.add_argument("--batch", type=arguments.batch, default=256)
    args = parser.parse_args(argv)
    check_specs(parser, "--against", [a for a in args.against or () if a != "plain"])
    torch.set_num_threads(1)
    searcher = PolicySearchAgent("shipped", samples=args.samples)
    try:  # (candidates below samples: the agent's own rule)
        agent = InferenceSearch(searcher, power=args.power, candidates=args.candidates)
    except ValueError as error:
        parser.error(str(error))
    print(f"{agent.name}: deal seed {args.seed}, {args.pairs} pairs, target {args.target}; "
          f"{machine_text(with_torch=True)}\n")
    print("| against | pairs | inference search's win rate [95% CI] | mean margin | "
          "CPU ms a decision (it / against) | wall s |")
    print("|---|---:|---|---:|---:|---:|")
    effective = decisions = 0
    for against in args.against or ["search:samples=64"]:
        opponent = searcher if against == "plain" else against
        label = f"search:policy=shipped,samples={args.samples}" if against == "plain" else against
        started = time.perf_counter()
        result = evaluate_batched(agent, opponent, args.pairs, seed=args.seed,
                                  target=args.target, batch=args.batch)
        low, high = result.ci95
        ms = [1000 * seconds for seconds in result.cpu_seconds_per_decision]
        print(f"| {label} | {result.pairs} | {result.win_rate:.3f} [{low:.3f}, {high:.3f}] | "
              f"{result.mean_margin:+.1f} | {ms[0]:.1f} / {ms[1]:.1f} | "
              f"{time.perf_counter() - started:.0f} |", flush=True)
        effective += agent.effective_worlds
        decisions += agent.decisions_weighed
        agent.effective_worlds, agent.decisions_weighed = 0.0, 0
    print(f"\neffective worlds a decision (1 / sum of squared weights), mean over "
          f"{decisions} decisions: {effective / max(decisions, 1):.1f} of "
          f"{agent.candidates} weighted")
    return 0


if __name__ == "__main__":  # a closed stdout, an ASCII terminal: as the sevenrocks commands
    from sevenrocks_env.cli import guarded
    sys.exit(guarded("benchmarks/inference_search.py", main))
