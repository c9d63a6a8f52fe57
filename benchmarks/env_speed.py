"""Speed of random play: sevenrocks_v0 through the AEC API and the engine alone, beside
PettingZoo's connect_four_v3 measured in the same run.

    .venv/bin/python benchmarks/env_speed.py [--seconds 5]

Prints a Markdown table.  Random legal actions; one process.
"""

from __future__ import annotations

import argparse
import platform
import random
import time

import numpy as np

from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.rules import Match, apply_action, legal_actions
from sevenrocks_env.tiles import KNOCK


def aec_random_play(make_env, seconds: float) -> tuple[int, int, float]:
    """(steps, matches, elapsed) of uniformly random legal play through the AEC loop."""
    env = make_env()
    rng = random.Random(0)
    steps = matches = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
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
    while time.perf_counter() - start < seconds:
        match = Match.new(matches, keep_history=False)
        while not match.over:
            legal = legal_actions(match)
            action = legal[rng.randrange(len(legal))] if len(legal) > 1 else legal[0]
            apply_action(match, action)
            actions += 1
            placements += action != KNOCK
        matches += 1
    return actions, placements, matches, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="time per row")
    args = parser.parse_args()

    rows = []
    for name, make in (("sevenrocks_v0.env() (wrapped)", sevenrocks_v0.env),
                       ("sevenrocks_v0.raw_env()", sevenrocks_v0.raw_env)):
        steps, matches, elapsed = aec_random_play(make, args.seconds)
        rows.append((name, steps / elapsed, matches / elapsed, "steps"))
    actions, placements, matches, elapsed = engine_random_play(args.seconds)
    rows.append(("engine (rules.Match), all actions", actions / elapsed, matches / elapsed, "actions"))
    rows.append(("engine (rules.Match), placements only", placements / elapsed, matches / elapsed,
                 "placements"))
    try:
        from pettingzoo.classic import connect_four_v3
    except ImportError:  # pygame missing: pip install -e .[bench]
        connect_four_v3 = None
    if connect_four_v3 is not None:
        for name, make in (("pettingzoo connect_four_v3.env() (wrapped)", connect_four_v3.env),
                           ("pettingzoo connect_four_v3.raw_env()", connect_four_v3.raw_env)):
            steps, matches, elapsed = aec_random_play(make, args.seconds)
            rows.append((name, steps / elapsed, matches / elapsed, "steps"))

    print(f"random play, one process, {args.seconds:g} s per row, "
          f"Python {platform.python_version()}, {platform.machine()}")
    print()
    print("| what | per second | matches/s |")
    print("|---|---:|---:|")
    for name, rate, match_rate, unit in rows:
        print(f"| {name} | {rate:,.0f} {unit} | {match_rate:,.1f} |")
    if connect_four_v3 is not None:
        print(f"\nsteps/s ratio, wrapped / wrapped: {rows[0][1] / rows[-2][1]:.1f}x;"
              f" raw / raw: {rows[1][1] / rows[-1][1]:.1f}x")


if __name__ == "__main__":
    main()
