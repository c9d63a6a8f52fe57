"""Speed of random play: sevenrocks_v0 through the AEC API and the engine alone, beside
PettingZoo's connect_four_v3 measured in the same run.

    .venv/bin/python benchmarks/env_speed.py [--seconds 5] [--repeats 3]

Prints a Markdown table.  Random legal actions (``random.Random(0)``, ``reset`` seeds 0, 1,
2, ... in every row); one process.  Rows are measured in turn, ``--repeats`` times over, and
each figure is the median, so a burst of load on a shared machine hits one sample rather than
one row.  Then PettingZoo's ``performance_benchmark`` loop on ``sevenrocks_v0.env()`` for
``--seconds`` (its own function always runs 5 s).
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import sys
import time

import numpy as np

from sevenrocks_env import arguments
from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.machine import machine_text
from sevenrocks_env.rules import Match, apply_action, legal_actions
from sevenrocks_env.tiles import KNOCK

#: The most ``--repeats`` (rounds over all rows) a run takes.
MAX_REPEATS = 1000


def aec_random_play(make_env, seconds: float) -> tuple[int, int, float]:
    """(steps, matches, elapsed) of uniformly random legal play through the AEC loop."""
    env = make_env()
    rng = random.Random(0)
    steps = matches = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds or not matches:  # one match at least
        env.reset(seed=matches)
        for agent in env.agent_iter():
            obs, _, termination, truncation, _ = env.last()
            if termination or truncation:
                action = None
            else:
                legal = np.flatnonzero(obs["action_mask"])
                action = int(legal[rng.randrange(len(legal))])
                steps += 1
            env.step(action)
        matches += 1
    return steps, matches, time.perf_counter() - start


def engine_random_play(seconds: float) -> tuple[int, int, int, float]:
    """(actions, placements, matches, elapsed) driving rules.Match directly."""
    rng = random.Random(0)
    actions = placements = matches = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds or not matches:  # one match at least
        match = Match.new(matches, keep_history=False)
        while not match.over:
            legal = legal_actions(match)
            action = legal[rng.randrange(len(legal))] if len(legal) > 1 else legal[0]
            apply_action(match, action)
            actions += 1
            placements += action != KNOCK
        matches += 1
    return actions, placements, matches, time.perf_counter() - start


def pettingzoo_performance_benchmark(seconds: float) -> tuple[int, int, float]:
    """(turns, cycles, elapsed) of PettingZoo's ``pettingzoo.test.performance_benchmark`` on
    ``sevenrocks_v0.env()``, printed: its loop (a cycle steps every agent once, random legal
    actions, a reset when all are done), copied here to run ``seconds`` instead of its fixed 5 s,
    with seeded actions and deals."""
    print(f"\nPettingZoo performance_benchmark(sevenrocks_v0.env()), its loop for {seconds:g} s:")
    env = sevenrocks_v0.env()
    rng = random.Random(0)
    resets = turns = cycles = 0
    env.reset(seed=resets)
    start = time.perf_counter()
    while True:
        cycles += 1
        for _ in env.agent_iter(env.num_agents):
            obs, _, termination, truncation, _ = env.last()
            action = None if termination or truncation else \
                rng.choice(np.flatnonzero(obs["action_mask"]).tolist())
            env.step(action)
            turns += 1
            if all(env.terminations.values()) or all(env.truncations.values()):
                resets += 1
                env.reset(seed=resets)
        elapsed = time.perf_counter() - start
        if elapsed > seconds:
            break
    print(f"{turns / elapsed:,.0f} turns per second, {cycles / elapsed:,.0f} cycles per second "
          f"({turns:,} turns in {elapsed:.2f} s)")
    return turns, cycles, elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--seconds", type=arguments.seconds, default=5.0,
                        help="time per row and repeat, and of the PettingZoo benchmark")
    parser.add_argument("--repeats", type=arguments.int_in(1, MAX_REPEATS), default=3,
                        help="rounds over all rows (median)")
    args = parser.parse_args(argv)

    try:
        from pettingzoo.classic import connect_four_v3
    except ImportError:  # pygame missing: pip install -e .[bench]
        connect_four_v3 = None
        print("note: pettingzoo's connect_four_v3 needs pygame (pip install -e .[bench]): its "
              "rows and the ratio to it are left out", file=sys.stderr)
    ours = [("sevenrocks_v0.env() (wrapped)", sevenrocks_v0.env),
            ("sevenrocks_v0.raw_env()", sevenrocks_v0.raw_env)]
    theirs = [] if connect_four_v3 is None else [
        ("pettingzoo connect_four_v3.env() (wrapped)", connect_four_v3.env),
        ("pettingzoo connect_four_v3.raw_env()", connect_four_v3.raw_env)]
    engine = [("engine (rules.Match), all actions", "actions"),
              ("engine (rules.Match), placements only", "placements")]
    samples: dict[str, list[tuple[float, float]]] = {}  # name -> [(rate, matches/s) per repeat]
    for _ in range(args.repeats):
        for name, make in ours + theirs:
            steps, matches, elapsed = aec_random_play(make, args.seconds)
            samples.setdefault(name, []).append((steps / elapsed, matches / elapsed))
        actions, placements, matches, elapsed = engine_random_play(args.seconds)
        for (name, _), count in zip(engine, (actions, placements)):
            samples.setdefault(name, []).append((count / elapsed, matches / elapsed))
    units = [(name, "steps") for name, _ in ours] + engine + [(name, "steps") for name, _ in theirs]
    rows = [(name, statistics.median(rate for rate, _ in samples[name]),
             statistics.median(per_match for _, per_match in samples[name]), unit)
            for name, unit in units]

    print(f"random play, one process, median of {args.repeats} x {args.seconds:g} s per row, "
          f"Python {platform.python_version()}, {machine_text()}; seeds: reset 0, 1, 2, ... "
          f"and actions random.Random(0) in every row")
    print()
    print("| what | per second | matches/s |")
    print("|---|---:|---:|")
    for name, rate, match_rate, unit in rows:
        print(f"| {name} | {rate:,.0f} {unit} | {match_rate:,.1f} |")
    if connect_four_v3 is not None:
        print(f"\nsteps/s ratio, wrapped / wrapped: {rows[0][1] / rows[-2][1]:.1f}x;"
              f" raw / raw: {rows[1][1] / rows[-1][1]:.1f}x")
    pettingzoo_performance_benchmark(args.seconds)


if __name__ == "__main__":  # a closed stdout, an ASCII terminal: as the sevenrocks commands
    from sevenrocks_env.cli import guarded
    sys.exit(guarded("benchmarks/env_speed.py", main))
