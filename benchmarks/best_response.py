"""Exploitability test (issue 11): train a fresh PPO team against a frozen policy, then measure it.

    python benchmarks/best_response.py --opponent ckpt:shipped --steps 2000000 --seed 1 \\
        --pairs 500 --deal-seed 7001 --out runs/best_response
    python benchmarks/best_response.py --opponent heuristic ...     # sanity check of the test
    python benchmarks/best_response.py --opponent ckpt:shipped --init shipped --steps 1000000 ...
    python benchmarks/best_response.py --opponent ckpt:shipped --smoke --pairs 2   # seconds

The frozen opponent is an agent spec (``ckpt:shipped``, ``ckpt:PATH``, ``heuristic``...).  The
best response starts from scratch, or with ``--init POLICY`` from a policy's weights (warm start:
``--init shipped`` against ``ckpt:shipped`` asks whether PPO can improve on the policy against
itself frozen, the main-exploiter pattern): ``configs/default.yaml`` with
``opponents=[the frozen spec]`` and ``opponent_fraction=1.0``, so every training match is the
learner's team against the frozen team (the learner's side drawn per match), a fixed number
of learner decisions (``--steps``; ``max_minutes`` off, so a busy machine changes the wall
time, not the result), on the batched engine (a policy-network opponent plays all its matches
in one forward pass per step).  Its run folder is ``<out>/runs/<name>`` and
``<out>/ckpt/<name>``.  Then the arena: the best response against the frozen opponent on
duplicate deals from ``--deal-seed`` (deals never used to choose anything), to the run's
``target`` and cut after its ``max_rounds`` (the settings it trained at, as the trainer's own
evaluations), Wilson 95% interval over pairs.  Prints one markdown row; ``<out>/<name>.json``
keeps the full arena result.

A frozen policy that is hard to exploit keeps the best response near 50%; ``heuristic`` (a fixed
rule-based player) is expected to be beaten clearly, which checks that the test can find an
exploit at all.  ``--set KEY=VALUE`` passes any config field through (after ``--smoke``),
except those the options set (``seed``, ``total_steps``, ``init_from``, ``opponents``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from sevenrocks_env import arguments  # noqa: E402
from sevenrocks_env.arena import check_settings, check_workers, evaluate, split_name  # noqa: E402
from sevenrocks_env.atomic_file import atomic_path, check_output_file  # noqa: E402
from training.config import ConfigError, check_set_once, load_config  # noqa: E402
from training.opponents import PAST  # noqa: E402
from training.train import run_folders, train  # noqa: E402

CONFIG = ROOT / "configs" / "default.yaml"
#: ``--smoke``: tiny networks, rollouts and matches, so the whole test runs in seconds.
SMOKE = ["num_matches=8", "num_steps=16", "num_minibatches=2", "update_epochs=1",
         "hidden_sizes=[32,32]", "target=40", "checkpoint_every=1000"]
SMOKE_STEPS = 256  # two updates of the smoke rollout (8 matches x 16 steps)
#: Config fields this script sets from its own options (what its record and row report):
#: ``--set`` of one of them would train another best response than the one reported.
OWN_OPTIONS = {"seed": "--seed", "total_steps": "--steps", "init_from": "--init",
               "opponents": "--opponent"}
HEADER = ("| frozen opponent | starts from | best-response steps | seed | pairs | deal seed | "
          "best response's win rate [95% CI] | margin/match | train min |\n"
          "|---|---|---:|---:|---:|---:|---|---:|---:|")


def _smoke_sets(init: str) -> list[str]:
    """:data:`SMOKE`, its small network replaced by ``init``'s own when the run warm-starts
    (``--smoke --init shipped`` was refused: the shipped network is not 32 x 32): its layer
    widths, feature version and action scorer; an unreadable ``init`` is left to the trainer's
    check, which names it."""
    if not init:
        return SMOKE
    from training.config_yaml import ConfigError
    from training.networks import init_network
    try:
        network = init_network(init)[1]
    except ConfigError:
        return SMOKE
    return [s for s in SMOKE if not s.startswith("hidden_sizes=")] + [
        f"{key}={json.dumps(value)}" for key, value in network.items()]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_.")[:60] or "policy"


def run_name(opponent: str, steps: int, seed: int, init: str = "", overrides=()) -> str:
    """A plain folder name for this run: ``br_<opponent>_<steps>_s<seed>[_from_<init>]``, and
    with ``--set`` overrides ``_set<8 hex digits of their SHA-256>``, so that two variants of
    one best response in one ``--out`` are two runs (the record lists the overrides)."""
    warm = f"_from_{_slug(init)}" if init else ""
    sets = ""
    if overrides:
        sets = "_set" + hashlib.sha256("\n".join(overrides).encode()).hexdigest()[:8]
    return f"br_{_slug(opponent)}_{steps}_s{seed}{warm}{sets}"


def best_response_config(opponent: str, steps: int, seed: int, out: Path, smoke: bool = False,
                         overrides=(), init: str = ""):
    """The training config of the best response to ``opponent`` (a spec without a display
    name), from scratch or warm-started from the policy checkpoint ``init`` (``init_from``);
    raises :class:`ConfigError` naming a bad value."""
    if opponent == PAST:
        raise ConfigError("the frozen opponent must be an agent spec (ckpt:PATH, heuristic...); "
                          "'past' is the run's own snapshot", "opponents")
    check_set_once(overrides)  # the user's own given twice (the script's come first, then these)
    for text in overrides:
        key = text.partition("=")[0].strip()
        if key in OWN_OPTIONS:
            raise ConfigError(f"--set {key}=...: this script sets {key} itself (the record "
                              f"reports it); give {OWN_OPTIONS[key]} instead", key)
    name = run_name(opponent, steps, seed, init, overrides)
    sets = [*(_smoke_sets(init) if smoke else []), f"init_from={init}", f"total_steps={steps}",
            "max_minutes=0", f"seed={seed}", f"run_name={name}",
            f"opponents=[{json.dumps(opponent)}]", "opponent_fraction=1.0", "engine=batched",
            "eval_every=0", f"eval_agents=[{json.dumps(opponent)}]", "final_eval_pairs=1",
            "progress=false", f"checkpoint_dir={out / 'ckpt'}",
            f"log_dir={out / 'runs'}", *overrides]
    try:
        return load_config(CONFIG, sets)
    except ConfigError as error:  # the script's own fields, named by its options: the user
        text = str(error)         # gave --steps or --init, not --set total_steps or init_from
        if error.key in OWN_OPTIONS:
            text = f"{OWN_OPTIONS[error.key]}: {text.removeprefix('--set: ')}"
        for key, option in OWN_OPTIONS.items():
            text = text.replace(f"give {key} too", f"give {option} too")
        raise ConfigError(text, error.key, error.others) from None


def run(args) -> dict:
    """Train the best response, play the arena; the results as a plain dict."""
    display, opponent = split_name(args.opponent)
    out = Path(args.out)
    cfg = best_response_config(opponent, args.steps, args.seed, out, args.smoke, args.set,
                               args.init)
    frozen = opponent if display == opponent else f"{display}={opponent}"
    # the arena's settings and the result's file before training (they were found after it)
    check_settings(pairs=args.pairs, seed=args.deal_seed, target=cfg.target,
                   max_rounds=cfg.max_rounds)
    check_workers(args.workers, "best_response", frozen)
    check_output_file(out / f"{cfg.run_name}.json")
    started = time.time()
    try:
        trained = train(cfg, final_table=False, force=args.force)
    except ConfigError as error:
        if error.key != "run_name":
            raise
        folder = next(f for f in run_folders(cfg) if f.exists())
        raise ConfigError(f"this best response was trained already: {folder} exists; --force "
                          "trains it again from the start, or give another --out",
                          "run_name") from None
    train_minutes = (time.time() - started) / 60
    result = evaluate(f"best_response=ckpt:{trained['checkpoint']}", frozen,
                      args.pairs, seed=args.deal_seed, workers=args.workers, target=cfg.target,
                      max_rounds=cfg.max_rounds)
    record = {"opponent": display, "spec": opponent, "init": args.init or "scratch",
              "steps": trained["global_step"],
              "seed": args.seed, "deal_seed": args.deal_seed, "pairs": args.pairs,
              "target": cfg.target, "max_rounds": cfg.max_rounds,
              "checkpoint": str(trained["checkpoint"]),
              "train_minutes": train_minutes, "overrides": list(args.set),
              "smoke": bool(args.smoke), "arena": result.as_dict()}
    out.mkdir(parents=True, exist_ok=True)
    with atomic_path(out / f"{cfg.run_name}.json") as partial:
        partial.write_text(json.dumps(record, indent=1))
    return record


def row(record: dict) -> str:
    arena = record["arena"]
    low, high = arena["ci95"]
    start = record.get("init", "scratch")
    if record.get("smoke"):  # tiny networks, matches to 40: a check of the script, no result
        start += f" (--smoke, target {record['target']})"
    if record.get("overrides"):
        start += f" (--set {' '.join(record['overrides'])})"
    return (f"| {record['opponent']} | {start} | {record['steps']} | "
            f"{record['seed']} | {record['pairs']} | {record['deal_seed']} | "
            f"{100 * arena['win_rate']:.1f} % [{100 * low:.1f}, {100 * high:.1f}] | "
            f"{arena['mean_margin']:+.1f} | {record['train_minutes']:.1f} |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/best_response.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--opponent", default="ckpt:shipped",
                        help="the frozen agent spec (optionally name=spec)")
    parser.add_argument("--steps", type=arguments.count, default=None,
                        help="learner decisions the best response trains for (default "
                             f"2,000,000; {SMOKE_STEPS} with --smoke; at least one rollout, "
                             "num_matches * num_steps: 8,192 with the default config)")
    parser.add_argument("--seed", type=arguments.training_seed, default=1, help="training seed")
    parser.add_argument("--pairs", type=arguments.pairs, default=500, help="arena duplicate pairs")
    parser.add_argument("--deal-seed", type=arguments.seed, default=7001,
                        help="arena deal seed (fresh deals)")
    parser.add_argument("--init", default="",
                        help="warm-start from this policy checkpoint (a path or 'shipped'); "
                             "default: from scratch")
    parser.add_argument("--workers", type=arguments.workers, default=1, help="arena processes")
    parser.add_argument("--out", default="runs/best_response")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny network, rollouts, target and step budget: seconds")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a training config field (repeatable)")
    parser.add_argument("--force", action="store_true", help="write into an existing run folder")
    args = parser.parse_args(argv)
    if args.steps is None:
        args.steps = SMOKE_STEPS if args.smoke else 2_000_000
    try:
        record = run(args)
    except (ConfigError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(HEADER)
    print(row(record), flush=True)
    return 0


if __name__ == "__main__":  # a closed stdout, an ASCII terminal: as the sevenrocks commands
    from sevenrocks_env.cli import guarded
    sys.exit(guarded("benchmarks/best_response.py", main))
