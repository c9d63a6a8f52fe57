"""Every baseline against every other on duplicate deals: the results table of docs/agents.md.

    nice -n 10 .venv/bin/python benchmarks/agents.py --pairs 1000 --search-pairs 25 --workers 2

Prints a markdown table (row agent = A, win rate of A over all matches with its 95% CI, Wilson
over duplicate pairs), the time per decision of each agent, and Bradley-Terry ratings fitted on
all pairings.  Pairings that involve a ``search`` agent use ``--search-pairs`` (search is slow).
"""

from __future__ import annotations

import argparse
import sys
import time

from sevenrocks_env import arguments
from sevenrocks_env.arena import evaluate, split_name
from sevenrocks_env.arena_cli import check_specs
from sevenrocks_env.arena_report import rating_text
from sevenrocks_env.machine import machine_text
from sevenrocks_env.ratings import bradley_terry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", nargs="+",
                        default=["random", "greedy", "heuristic", "search"])
    parser.add_argument("--pairs", type=arguments.pairs, default=1000)
    parser.add_argument("--search-pairs", type=arguments.pairs, default=25)
    parser.add_argument("--seed", type=arguments.seed, default=0)
    parser.add_argument("--workers", type=arguments.workers, default=2)
    args = parser.parse_args(argv)
    names = args.agents
    labels = [split_name(name)[0] for name in names]  # (name=spec, as in the arena)
    if len(set(labels)) != len(labels) or len(labels) < 2:
        parser.error(f"--agents: give at least two different agents, got {names}")
    check_specs(parser, "--agents", names)  # every spec before the first pairing plays
    print(f"{machine_text()}\n", flush=True)
    games, results, timing = [], {}, {}
    started = time.perf_counter()
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            slow = any(split_name(n)[1].startswith("search") for n in (names[i], names[j]))
            pairs = args.search_pairs if slow else args.pairs
            game = evaluate(names[i], names[j], pairs, args.seed, args.workers, progress=True)
            games.append(game)
            results[(i, j)] = (game.win_rate * pairs, pairs)
            for name, seconds in zip((labels[i], labels[j]), game.seconds_per_decision):
                timing.setdefault(name, []).append((seconds, pairs))
            print(f"{game.agent_a} vs {game.agent_b}: {game.win_rate:.3f}", file=sys.stderr)
    print("| A | B | pairs | A match win rate [95% CI] | mean margin A-B | points/round A / B "
          "| A round win rate | rounds/match |")
    print("|---|---|---:|---|---:|---|---:|---:|")
    for g in games:
        print(f"| `{g.agent_a}` | `{g.agent_b}` | {g.pairs} | {g.win_rate:.3f} "
              f"[{g.ci95[0]:.3f}, {g.ci95[1]:.3f}] | {g.mean_margin:+.1f} | "
              f"{g.points_per_round[0]:.1f} / {g.points_per_round[1]:.1f} | "
              f"{g.round_win_rate:.3f} | {g.rounds_per_match:.2f} |")
    print("\n| agent | ms per decision (over its pairings, by pairs) | Bradley-Terry rating "
          "(Elo scale) |")
    print("|---|---:|---:|")
    for rating in sorted(bradley_terry(labels, results), key=lambda r: -r["rating"]):
        name = rating["agent"]
        # each pairing's mean weighted by its pairs (a 25-pair pairing counts a fortieth of a
        # 1,000-pair one)
        ms = 1e3 * sum(s * n for s, n in timing[name]) / sum(n for _, n in timing[name])
        spread = "(set by the prior)" if rating["one_sided"] else f"± {rating['stderr']:.0f} (1 s.e.)"
        print(f"| `{name}` | {ms:.3f} | {rating_text(rating)} {spread} |")
    wall = time.perf_counter() - started
    print(f"\n(seed {args.seed}, {args.workers} workers, {wall:.0f} s wall)")
    return 0


if __name__ == "__main__":  # a closed stdout, an ASCII terminal: as the sevenrocks commands
    from sevenrocks_env.cli import guarded
    sys.exit(guarded("benchmarks/agents.py", main))
