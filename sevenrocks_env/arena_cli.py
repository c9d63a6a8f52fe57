"""``sevenrocks arena``: duplicate-deal matches and round robins from the command line.

    sevenrocks arena heuristic greedy --pairs 1000 --seed 0 --workers 2 [--json]
    sevenrocks arena --round-robin random greedy heuristic search:samples=16 --pairs 200
    sevenrocks arena shipped=ckpt:checkpoints/shipped/sevenrocks_ppo.pt heuristic --pairs 200
    sevenrocks arena ckpt:shipped greedy --pairs 10000 --batched [--device cuda]
    sevenrocks arena search:policy=shipped search:samples=64 --pairs 200 --batched --workers 2

The library is :mod:`sevenrocks_env.arena`; this module only parses arguments and prints.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import arguments, rules
from .agents import valid_specs
from .arena import DEFAULT_MAX_ROUNDS, evaluate, round_robin
from .arena_log import PairLogWriteError
from .arena_log_lock import check_log_folder
from .arena_pool import WorkerDied
from .match_state import MAX_ROUNDS, MAX_TARGET
from .arguments import MAX_THREADS, non_negative_pairs
from .arguments import seed as deal_seed
from .driver import AgentError


def add_evaluation_arguments(parser, seed: int = 12345) -> None:
    """``--eval-pairs``, ``--eval-seed``, ``--eval-against``, ``--json``: the arena options of
    training scripts that end with an evaluation (examples/)."""
    parser.add_argument("--eval-pairs", type=non_negative_pairs, default=100,
                        help="arena duplicate pairs (0 = skip)")
    parser.add_argument("--eval-seed", type=deal_seed, default=seed)
    parser.add_argument("--eval-against", nargs="+", default=["greedy", "heuristic"])
    parser.add_argument("--json", help="write the results as JSON here")


def check_specs(parser: argparse.ArgumentParser, option: str, specs) -> None:
    """Every agent spec (``NAME=SPEC`` as the arena takes) built once before anything plays;
    a bad one is ``parser.error`` naming ``option`` (a traceback after earlier pairings, else)."""
    from .agents import make_agent
    from .arena import split_name
    for spec in specs:
        try:
            make_agent(split_name(spec)[1])
        except ValueError as error:
            parser.error(f"{option}: {error}")


def check_evaluation_arguments(args, model_file=None) -> None:
    """``ValueError`` for a bad option of :func:`add_evaluation_arguments`, before any training:
    an unknown agent spec, negative pairs, a seed out of range, a ``--json`` folder that is not
    there (a script should not train for an hour and then fail to write its results), or
    ``--json`` naming ``model_file``, where the script writes the trained model (the results
    would replace it)."""
    from pathlib import Path

    from .agents import make_agent
    from .arena import check_settings
    for spec in args.eval_against:
        make_agent(spec)
    if args.eval_pairs < 0:
        raise ValueError(f"--eval-pairs must be >= 0, got {args.eval_pairs}")
    check_settings(seed=args.eval_seed, **({"pairs": args.eval_pairs} if args.eval_pairs else {}))
    if args.json and not Path(args.json).resolve().parent.is_dir():
        raise ValueError(f"--json {args.json}: folder {Path(args.json).parent} does not exist")
    if args.json:  # a folder or a device: refused now, not after the training
        from .atomic_file import check_output_file
        check_output_file(args.json)
    if args.json and model_file and Path(args.json).resolve() == Path(model_file).resolve():
        raise ValueError(f"--json {args.json} is where the trained model is written: give the "
                         "results another file")


def report_evaluation(agent, label: str, args, results: dict) -> dict:
    """The end of a training example: ``agent`` (a spec or an Agent) against each
    ``--eval-against`` over ``--eval-pairs`` pairs (0: none), every table printed under
    ``label``, the results under ``results["arena"]``, and ``results`` written to ``--json``."""
    import json

    results.setdefault("arena", {})
    for spec in args.eval_against if args.eval_pairs else ():
        arena = evaluate(agent, spec, args.eval_pairs, args.eval_seed)
        print(f"\n{label} vs {spec}\n{arena.table()}")
        results["arena"][spec] = arena.as_dict()
    if args.json:
        from .atomic_file import atomic_path
        with atomic_path(args.json) as partial:
            partial.write_text(json.dumps(results, indent=2))
    return results


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sevenrocks arena",
        description="Duplicate-deal matches between agents (A on seats 0/2, then 1/3, same deals).",
        # one spec a line, never wrapped inside one: a spec copied from the help must work
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="agent specs:\n  " + valid_specs("\n  ") + "\nany spec may be written NAME=SPEC "
               "to show NAME in tables\n(e.g. shipped=ckpt:checkpoints/shipped/sevenrocks_ppo.pt)."
               "\nR1-R8 are the sections of the rules in docs/rules.md")
    parser.add_argument("agents", nargs="+",
                        help="two agent specs (A, B), or several with --round-robin")
    parser.add_argument("--round-robin", action="store_true",
                        help="every agent against every other")
    parser.add_argument("--pairs", type=arguments.pairs, default=100,
                        help="duplicate pairs per pairing (default 100)")
    parser.add_argument("--seed", type=arguments.seed, default=0,
                        help="deal seed (default 0). Without --batched pair i is dealt from "
                             "seed + i, so --seed 1 replays all but one deal of --seed 0: for "
                             "fresh deals start past the last one used (seed + pairs); "
                             "--batched hashes (seed, i), and any other seed is fresh")
    parser.add_argument("--workers", type=int, default=1,
                        help="worker processes (default 1); with --batched each steps a span of "
                             "pairs (for search agents, which leave cores idle in one process)")
    parser.add_argument("--target", type=arguments.int_in(1, MAX_TARGET),
                        default=rules.DEFAULT_TARGET,
                        help=f"match target (R8; default {rules.DEFAULT_TARGET})")
    parser.add_argument("--max-rounds", type=arguments.int_in(1, MAX_ROUNDS),
                        default=DEFAULT_MAX_ROUNDS,
                        help=f"truncate a match after this many rounds (default "
                             f"{DEFAULT_MAX_ROUNDS}; a cut match counts 1/2 to each side)")
    parser.add_argument("--batched", action="store_true",
                        help="step all pairs together on the batched engine (policies, search, "
                             "heuristic, greedy and random; sevenrocks_env.arena_batched)")
    parser.add_argument("--device", default="cpu",
                        help="torch device of the batched arena (default cpu)")
    parser.add_argument("--batch", type=int, default=None,
                        help="pairs stepped together by the batched arena (default 4096)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads of each process (default 1: on a small or busy "
                             "machine more threads mostly spin; a policy decision took 8-14x "
                             "the CPU time with 2 threads on 2 busy cores)")
    parser.add_argument("--log", metavar="PATH",
                        help="append every finished pair to PATH (JSON lines); if PATH holds "
                             "pairs of an earlier run of the same pairing, play only the rest "
                             "(raise --pairs to add pairs); a run locks PATH, so a second run "
                             "given the same PATH is refused while the first one runs; PATH's "
                             "folder must exist")
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
        if not args.batched and (args.device != "cpu" or args.batch is not None):
            raise ValueError("--device and --batch are options of --batched")
        if not 1 <= args.threads <= MAX_THREADS:
            raise ValueError(f"--threads must be in [1, {MAX_THREADS}], got {args.threads}")
        if args.log is not None:  # before any agent is built: a typo is refused at once
            if not args.log.strip():  # (an unset shell variable: "--log $LOG")
                raise ValueError(f"--log needs a file path, got {args.log!r}")
            check_log_folder(args.log)
        if not args.batched:
            _torch_threads(args.threads)
        if args.batched:
            result = _batched(args)
        elif args.round_robin:
            if args.log is not None:
                raise ValueError("--log keeps one pairing's pairs; --round-robin plays many")
            result = round_robin(args.agents, args.pairs, args.seed, args.workers,
                                 not args.no_progress, args.target, args.max_rounds)
        elif len(args.agents) != 2:
            raise ValueError(f"give exactly two agents (A B), or --round-robin; got {args.agents}")
        else:
            result = evaluate(args.agents[0], args.agents[1], args.pairs, args.seed, args.workers,
                              not args.no_progress, args.target, args.max_rounds, args.log)
    except PairLogWriteError as error:  # the disk full, say, part way through the pairs
        print(f"sevenrocks arena: error: {error}; the pairs finished before it are in "
              f"{args.log}, and the same command plays the rest", file=sys.stderr)
        return 1
    except (ValueError, OSError) as error:  # bad input; a --log path that cannot be written
        print(f"sevenrocks arena: error: {error}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, WorkerDied) as stop:
        mended = "" if isinstance(stop, KeyboardInterrupt) else \
            ", once what stopped the worker is mended (a file the log names restored)"
        kept = (f"; the pairs finished so far are in {args.log}, and the same command plays "
                f"the rest{mended}") if args.log else ""
        print(f"sevenrocks arena: {str(stop) or 'interrupted'}{kept}", file=sys.stderr)
        return 130 if isinstance(stop, KeyboardInterrupt) else 1
    except AgentError as error:  # an agent failed mid-match (an illegal move, a hostile net)
        kept = f"; the pairs finished before it are in {args.log}" if args.log else ""
        print(f"sevenrocks arena: error: {error}{kept}", file=sys.stderr)
        return 2
    print(json.dumps(result.as_dict(), indent=2) if args.json else result.table())
    return 0


def _torch_threads(threads: int) -> None:
    """``threads`` torch threads for the unbatched arena's policies, in this process and its
    workers (``arena_pool``), set before torch is loaded (it reads ``OMP_NUM_THREADS`` then; a
    rule-based run never loads it); torch's default of one a core made a ``ckpt:`` decision
    take 10x longer on a shared 2-core machine, its threads spinning."""
    import os
    os.environ["OMP_NUM_THREADS"] = str(threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


def _batched(args):
    """``--batched``: :func:`sevenrocks_env.arena_batched.evaluate_batched`."""
    if args.round_robin:
        raise ValueError("--batched plays one pairing (A B); --round-robin needs the "
                         "unbatched arena")
    if len(args.agents) != 2:
        raise ValueError(f"give exactly two agents (A B); got {args.agents}")
    try:
        import torch
    except ImportError as error:  # the core package runs without it; the batched engine not
        raise ValueError(f"--batched needs torch: pip install -e \".[train]\" (or any torch "
                         f">= 2.2) ({error})") from None

    from .arena_batched import DEFAULT_BATCH, evaluate_batched
    from .batched.inputs import checked_device
    try:
        device = checked_device(args.device)
    except ValueError as error:
        raise ValueError(f"--{error}") from None
    torch.set_num_threads(args.threads)
    return evaluate_batched(args.agents[0], args.agents[1], args.pairs, args.seed, args.target,
                            args.max_rounds, device,
                            DEFAULT_BATCH if args.batch is None else args.batch,
                            not args.no_progress, args.log, args.workers)


if __name__ == "__main__":  # as `sevenrocks arena`: stdout errors in one line
    from .cli import run_as
    sys.exit(run_as("arena"))
