"""Pairs per second of the batched arena beside the process-pool arena, in the same run.

    .venv/bin/python benchmarks/arena_speed.py [--pairs 1000] [--pool-pairs 100] [--workers 2]
        [--threads 1] [--device cpu] [--batch 4096] [--seed 0]

Two pairings: the shipped policy against ``greedy`` and against itself.  The unbatched arena
(``arena.evaluate`` with ``--workers`` processes) plays ``--pool-pairs`` pairs, the batched one
(``arena_batched.evaluate_batched``) ``--pairs``; each row prints pairs/s, the win rate with its
95% interval (the two arenas deal different samples, so the rates agree within their intervals,
not exactly) and the batched arena's speed-up.  The pool's wall time includes starting its
processes (each imports torch and loads the policy); so a second pool row runs one pair per
worker first and reports the rate of the remaining pairs with that start-up subtracted (the
difference of the two runs: one difference of two timings, with no error bar, and labelled so),
and the speed-up is given against both.  Every run deals from ``--seed``.  Prints a Markdown
table and its seed.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from sevenrocks_env import arguments
from sevenrocks_env.arena import evaluate
from sevenrocks_env.arena_batched import DEFAULT_BATCH, evaluate_batched
from sevenrocks_env.machine import machine_text

PAIRINGS = (("shipped=ckpt:shipped", "greedy"), ("shipped=ckpt:shipped", "shipped=ckpt:shipped"))


def _row(label, result, wall) -> tuple[str, float]:
    rate = result.pairs / wall
    low, high = result.ci95
    return (f"| {label} | {result.pairs:,} | {wall:.1f} | {rate:,.1f} | "
            f"{result.win_rate:.3f} [{low:.3f}, {high:.3f}] |"), rate


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=arguments.pairs, default=1000,
                        help="pairs of the batched arena")
    parser.add_argument("--pool-pairs", type=arguments.non_negative_pairs, default=100,
                        help="pairs of the process-pool arena (0: skip it)")
    parser.add_argument("--workers", type=arguments.workers, default=2,
                        help="processes of the pool arena")
    parser.add_argument("--threads", type=arguments.threads, default=1,
                        help="torch threads (batched arena)")
    parser.add_argument("--device", type=arguments.device, default="cpu")
    parser.add_argument("--batch", type=arguments.batch, default=DEFAULT_BATCH)
    parser.add_argument("--seed", type=arguments.seed, default=0,
                        help="deal seed of every run (both arenas)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"{machine_text(with_torch=True)}, device {args.device}, batch {args.batch} pairs, "
          f"deal seed {args.seed} (every run)\n")
    print("| pairing, arena | pairs | wall s | pairs/s | A's win rate [95% CI] |")
    print("|---|---:|---:|---:|---|")
    speedups, differenced = [], False   # differenced: a start-up excluded row was printed
    for spec_a, spec_b in PAIRINGS:
        label = f"{spec_a.partition('=')[0]} vs {spec_b.partition('=')[0]}"
        pool_rate = steady_rate = None
        if args.pool_pairs:
            started = time.perf_counter()
            evaluate(spec_a, spec_b, args.workers, seed=args.seed, workers=args.workers)
            start_up = time.perf_counter() - started   # start-up, and one pair a worker
            started = time.perf_counter()
            result = evaluate(spec_a, spec_b, args.pool_pairs, seed=args.seed,
                              workers=args.workers)
            wall = time.perf_counter() - started
            line, pool_rate = _row(f"{label}, pool ({args.workers} workers), start-up "
                                   "included", result, wall)
            print(line, flush=True)
            if args.pool_pairs > args.workers and wall > start_up:
                steady_rate = (args.pool_pairs - args.workers) / (wall - start_up)
                differenced = True
                print(f"| {label}, pool, start-up excluded ({args.pool_pairs} - {args.workers} "
                      f"pairs): one difference of two runs, no error bar | "
                      f"{args.pool_pairs - args.workers:,} | {wall - start_up:.1f} | "
                      f"{steady_rate:,.1f} | (as above) |", flush=True)
        started = time.perf_counter()
        result = evaluate_batched(spec_a, spec_b, args.pairs, seed=args.seed, device=args.device,
                                  batch=args.batch)
        line, rate = _row(f"{label}, batched", result, time.perf_counter() - started)
        print(line, flush=True)
        if pool_rate:
            steady = f", {rate / steady_rate:.1f}x start-up excluded" if steady_rate else ""
            speedups.append(f"{label}: {rate / pool_rate:.1f}x{steady}")
    if speedups:
        print("\nbatched / pool pairs/s: " + ", ".join(speedups))
    if differenced:
        print(f"\nstart-up excluded: (pairs of the pool run - {args.workers}) / (its wall time - "
              f"the wall time of a {args.workers}-pair run): one difference of two single "
              "timings, so it carries the noise of both and has no error bar.")
    return 0


if __name__ == "__main__":  # a closed stdout, an ASCII terminal: as the sevenrocks commands
    from sevenrocks_env.cli import guarded
    sys.exit(guarded("benchmarks/arena_speed.py", main))
