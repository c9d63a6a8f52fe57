"""OpenSpiel's IS-MCTS on the ratings ladder: arena results and time per decision per setting.

    nice -n 10 .venv/bin/python benchmarks/openspiel_ladder.py --sims 25 100 400 \\
        --against greedy heuristic --pairs 100 --workers 2
    nice -n 10 .venv/bin/python benchmarks/openspiel_ladder.py --sims 150 \\
        --against ckpt:checkpoints/shipped/sevenrocks_ppo.pt --pairs 100 --workers 2 --swap

Each row is one arena run (duplicate deals: pair ``i`` plays deal seed ``seed + i`` twice, the
teams swapped; win rate over all matches, 95% CI Wilson over pairs) of
``openspiel:ismcts:sims=N`` (agent A) against an opponent (agent B), or the opponent as A with
``--swap``.  ``ms/decision`` is the time inside ``act()`` of the IS-MCTS seats, which depends on
the machine and its load.  ``--kind mcts`` measures the determinized MCTS reference instead.

    .venv/bin/python benchmarks/openspiel_ladder.py --sims 100 400 1600 --timing 30

``--timing N`` plays no arena: it times the bot's first ``N`` real decisions (two or more legal
actions) of matches against ``greedy``, as wall time and as this process's CPU time.  The CPU
time is the figure to pick ``--sims`` by (the ladder's "at most about 0.5 s a decision"
setting), but it moves with the machine's load too: on an oversubscribed machine a process gets
less done in a CPU second (docs/openspiel.md: 124 CPU ms a decision at 100 simulations at load
6-8, 32 at load 2-3).  So both tables are headed by the machine's CPU model, CPU count and load
average: compare figures measured at like loads.

With ``--workers > 1`` the agents are spec strings, which needs ``make_agent`` to know
``openspiel:`` specs; otherwise the bots are built here and played in this process.
"""

from __future__ import annotations

import argparse
import sys
import time

from sevenrocks_env import arguments
from sevenrocks_env.agents import make_agent
from sevenrocks_env.arena import evaluate
from sevenrocks_env.arena_cli import check_specs
from sevenrocks_env.machine import machine_text
from sevenrocks_env.openspiel.bots import KINDS, MAX_SIMS, make_openspiel_agent


def _bot(spec: str, workers: int):
    """The spec string if ``make_agent`` knows it (parallel workers), else an agent object."""
    try:
        make_agent(spec)
        return spec
    except ValueError:
        if workers > 1:
            raise SystemExit(f"make_agent does not know {spec!r} yet: use --workers 1") from None
        return make_openspiel_agent(spec.partition(":")[2])


def timing(spec: str, decisions: int, seed: int = 0) -> tuple[float, float]:
    """``(wall ms, CPU ms)`` per real decision of ``spec``, over its first ``decisions``."""

    import numpy as np

    from sevenrocks_env.arena import play_match

    bot = make_openspiel_agent(spec.partition(":")[2])
    wall, cpu = [], []

    class Timed:
        name = bot.name

        def act(self, observation, action_mask):
            if len(wall) >= decisions or np.count_nonzero(action_mask) < 2:
                return greedy.act(observation, action_mask)
            w, c = time.perf_counter(), time.process_time()
            action = bot.act(observation, action_mask)
            wall.append(time.perf_counter() - w)
            cpu.append(time.process_time() - c)
            return action

        def seed(self, value):
            bot.seed(value)

    greedy = make_agent("greedy")
    while len(wall) < decisions:
        timed = Timed()
        play_match([timed, greedy, timed, greedy], seed)
        seed += 1
    return 1e3 * float(np.mean(wall)), 1e3 * float(np.mean(cpu))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sims", type=arguments.int_in(1, MAX_SIMS), nargs="+",
                        default=[25, 100, 400])
    parser.add_argument("--kind", choices=KINDS, default="ismcts")
    parser.add_argument("--against", nargs="+", default=["greedy", "heuristic"])
    parser.add_argument("--pairs", type=arguments.pairs, default=100)
    parser.add_argument("--seed", type=arguments.seed, default=0)
    parser.add_argument("--workers", type=arguments.workers, default=1)
    parser.add_argument("--swap", action="store_true", help="the opponent is agent A")
    parser.add_argument("--timing", type=arguments.count, metavar="N",
                        help="only time N real decisions per setting (no arena)")
    args = parser.parse_args(argv)
    if args.timing is not None:
        print(f"{machine_text()}\n")
        print("| bot | decisions | wall ms/decision | CPU ms/decision |\n|---|---:|---:|---:|")
        for sims in args.sims:
            spec = f"openspiel:{args.kind}:sims={sims}"
            wall, cpu = timing(spec, args.timing, args.seed)
            print(f"| `{spec}` | {args.timing} | {wall:.0f} | {cpu:.0f} |", flush=True)
        return 0
    check_specs(parser, "--against", args.against)  # before anything plays
    print(f"{machine_text()}; deal seed {args.seed}, {args.workers} worker process(es)\n")
    print("| A | B | pairs | A win rate [95% CI] | ms/decision (bot) |")
    print("|---|---|---:|---|---:|")
    for sims in args.sims:
        spec = f"openspiel:{args.kind}:sims={sims}"
        for other in args.against:
            bot = _bot(spec, args.workers)
            a, b = (other, bot) if args.swap else (bot, other)
            result = evaluate(a, b, args.pairs, args.seed, args.workers, progress=True)
            ms = 1e3 * result.seconds_per_decision[1 if args.swap else 0]
            print(f"| {result.agent_a} | {result.agent_b} | {result.pairs} | {result.win_rate:.3f} "
                  f"[{result.ci95[0]:.3f}, {result.ci95[1]:.3f}] | {ms:.0f} |", flush=True)
    return 0


if __name__ == "__main__":  # a closed stdout, an ASCII terminal: as the sevenrocks commands
    from sevenrocks_env.cli import guarded
    sys.exit(guarded("benchmarks/openspiel_ladder.py", main))
