"""``sevenrocks arena``: duplicate-deal matches and round robins from the command line.

    sevenrocks arena heuristic greedy --pairs 1000 --seed 0 --workers 2 [--json]
    sevenrocks arena --round-robin random greedy heuristic search:samples=16 --pairs 200
    sevenrocks arena shipped=ckpt:checkpoints/shipped/sevenrocks_ppo.pt heuristic --pairs 200

The library is :mod:`sevenrocks_env.arena`; this module only parses arguments and prints.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import rules
from .agents import valid_specs
from .arena import evaluate, round_robin


def add_evaluation_arguments(parser, seed: int = 12345) -> None:
    """``--eval-pairs``, ``--eval-seed``, ``--eval-against``, ``--json``: the arena options of
    training scripts that end with an evaluation (examples/)."""
    parser.add_argument("--eval-pairs", type=int, default=100, help="arena duplicate pairs (0 = skip)")
    parser.add_argument("--eval-seed", type=int, default=seed)
    parser.add_argument("--eval-against", nargs="+", default=["greedy", "heuristic"])
    parser.add_argument("--json", help="write the results as JSON here")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sevenrocks arena",
        description="Duplicate-deal matches between agents (A on seats 0/2, then 1/3, same deals).",
        epilog=f"agent specs: {valid_specs()}; any spec may be written NAME=SPEC to show NAME "
               f"in tables (e.g. shipped=ckpt:checkpoints/shipped/sevenrocks_ppo.pt). "
               f"R1–R8 are the sections of the rules in docs/rules.md")
    parser.add_argument("agents", nargs="+",
                        help="two agent specs (A, B), or several with --round-robin")
    parser.add_argument("--round-robin", action="store_true",
                        help="every agent against every other")
    parser.add_argument("--pairs", type=int, default=100,
                        help="duplicate pairs per pairing (default 100)")
    parser.add_argument("--seed", type=int, default=0,
                        help="deal seed of the first pair (default 0)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--target", type=int, default=rules.DEFAULT_TARGET,
                        help="match target (R8)")
    parser.add_argument("--max-rounds", type=int, default=100,
                        help="truncate a match after this many rounds")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: list[str] | None = None) -> int:
    """``sevenrocks arena``: 0 on success, 2 on bad input (message on stderr)."""
    parser = _parser()
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as stop:
        return int(stop.code or 0)
    try:
        if args.round_robin:
            result = round_robin(args.agents, args.pairs, args.seed, args.workers,
                                 not args.no_progress, args.target, args.max_rounds)
        elif len(args.agents) != 2:
            raise ValueError(f"give exactly two agents (A B), or --round-robin; got {args.agents}")
        else:
            result = evaluate(args.agents[0], args.agents[1], args.pairs, args.seed, args.workers,
                              not args.no_progress, args.target, args.max_rounds)
    except ValueError as error:
        print(f"sevenrocks arena: error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(result.as_dict(), indent=2) if args.json else result.table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
