"""Training ablations (issue 17): train each variant for the same budget, then the arena on fresh deals.

    python benchmarks/ablation.py --variants baseline mlp --steps 2000000 --seed 1 \\
        --pairs 1000 --deal-seed 9001 --out runs/ablation

Each variant is ``configs/default.yaml`` with the variant's ``--set`` flags, a fixed number of
learner decisions (``max_minutes`` off, so a busy machine changes the wall time, not the
result; the trainer stops at the last whole rollout, so ``--steps 1000000`` trains 999,424 in
rollouts of 8,192: the table's ``decisions`` column and the json's ``trained_steps`` are the
checkpoint's own count, ``steps`` what was asked), then the trained policy plays
``--opponents`` in the arena on duplicate deals from ``--deal-seed`` (deals not used to pick
anything before): ``heuristic`` over ``--pairs`` pairs, ``greedy`` over a fifth of them (so
at least 5 when it is played), ``search`` (64 samples) over ``--search-pairs`` on the batched
arena.  ``--reuse`` skips the training of a variant whose checkpoint is already under ``--out``
(a run with the same seed reproduces its weights bit for bit).  Prints the seeds, then one
markdown row per variant; the json files under ``--out`` keep the full results.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from sevenrocks_env import arguments
from sevenrocks_env.atomic_file import atomic_path
from sevenrocks_env.machine import machine_text

ROOT = Path(__file__).resolve().parents[1]
#: The most ``--steps`` a variant trains: the trainer's bound on ``total_steps``
#: (``training/config.py``; more failed inside the training subprocess, with a traceback here).
MAX_STEPS = 10 ** 11
VARIANTS = {
    "baseline": [],  # configs/default.yaml: action features v2, bilinear scorer, ent_coef 0.01
    "mlp": ["action_scorer=mlp"],
    "features_v3": ["action_features=3"],
    "ent_anneal": ["ent_coef=0.03", "ent_coef_final=0.005"],
    "combined": ["action_scorer=mlp", "action_features=3", "ent_coef=0.03",
                 "ent_coef_final=0.005"],
    "python_engine": ["engine=python"],
}


def run(variant: str, args) -> dict:
    name = f"abl_{variant}_s{args.seed}"
    ckpt_dir, log_dir = Path(args.out) / "ckpt", Path(args.out) / "runs"
    sets = [f"total_steps={args.steps}", "max_minutes=0", f"seed={args.seed}",
            f"run_name={name}", "eval_every=0", "final_eval_pairs=10", "progress=false",
            f"checkpoint_dir={ckpt_dir}", f"log_dir={log_dir}", *VARIANTS[variant]]
    checkpoint = ckpt_dir / name / "latest.pt"
    reused = args.reuse and _trained_for(checkpoint, args.steps)
    if not reused:
        subprocess.run([sys.executable, "-m", "training.train", "--config",
                        str(ROOT / "configs" / "default.yaml"), "--force",
                        *(f"--set={s}" for s in sets)], check=True, stdout=subprocess.DEVNULL,
                       cwd=ROOT)  # the trainer's package is importable from the repository root
    # the training's own wall time and decisions from its checkpoint, fresh or reused alike (the
    # process's time also counted the interpreter's start and the trainer's final evaluation;
    # the trainer stops at the last whole rollout, under --steps)
    minutes, trained = _run_record(checkpoint)
    results = {"variant": variant, "flags": VARIANTS[variant], "train_minutes": minutes,
               "steps": args.steps, "trained_steps": trained}
    for opponent in args.opponents:
        spec, pairs, extra = OPPONENTS[opponent](args)
        out = subprocess.run(
            [sys.executable, "-m", "sevenrocks_env.arena", f"{variant}=ckpt:{checkpoint}", spec,
             "--pairs", str(pairs), "--seed", str(args.deal_seed), "--json", "--no-progress",
             *extra], check=True, capture_output=True, text=True, cwd=ROOT).stdout
        results[opponent] = json.loads(out)
    with atomic_path(Path(args.out) / f"{name}.json") as partial:
        partial.write_text(json.dumps(results, indent=1))
    return results


def _run_record(checkpoint: Path) -> tuple[float | None, int | None]:
    """The wall time a finished run's checkpoint records, in minutes, and the learner decisions
    it trained (its ``global_step``); None for what it does not record."""
    from training.checkpoint import load_training_checkpoint

    data = load_training_checkpoint(checkpoint)
    wall, step = data.get("wall_time"), data.get("global_step")
    return (None if wall is None else float(wall) / 60,
            step if type(step) is int else None)


#: opponent -> (spec, pairs, extra arena flags) from the arguments
OPPONENTS = {
    "heuristic": lambda args: ("heuristic", args.pairs, []),
    "greedy": lambda args: ("greedy", args.pairs // 5, []),
    "search": lambda args: ("search:samples=64", args.search_pairs, ["--batched"]),
}


def _trained_for(checkpoint: Path, steps: int) -> bool:
    """``--reuse``: the checkpoint exists and holds a finished run of ``--steps`` decisions (the
    trainer stops at the last whole rollout: ``steps // batch * batch``)."""
    if not checkpoint.exists():
        return False
    import torch
    data = torch.load(checkpoint, map_location="cpu", weights_only=True)
    config = data.get("config") or {}
    batch = config.get("num_matches", 0) * config.get("num_steps", 0)
    return bool(batch) and config.get("total_steps") == steps and \
        data.get("global_step") == steps // batch * batch


def row(results: dict, opponents) -> str:
    cells = []
    for opponent in opponents:
        r = results[opponent]
        low, high = r["ci95"]
        cells.append(f"{100 * r['win_rate']:.1f} % [{100 * low:.1f}, {100 * high:.1f}] "
                     f"({r['pairs']} pairs)")
    flags = " ".join(f"`{f}`" for f in results["flags"]) or "(default)"
    minutes, trained = results["train_minutes"], results.get("trained_steps")
    shown = "?" if minutes is None else f"{minutes:.1f}"
    decisions = "?" if trained is None else f"{trained:,}"
    return (f"| {results['variant']} | {flags} | {shown} | {decisions} | "
            + " | ".join(cells) + " |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", nargs="+", choices=sorted(VARIANTS), default=["baseline"])
    parser.add_argument("--steps", type=arguments.int_in(8192, MAX_STEPS),
                        default=2_000_000,
                        help="decisions per variant (one rollout, 8192, at least)")
    parser.add_argument("--seed", type=arguments.training_seed, default=1)
    parser.add_argument("--pairs", type=arguments.pairs, default=1000,
                        help="pairs against heuristic (a fifth of them against greedy: at "
                             "least 5 when greedy is played)")
    parser.add_argument("--search-pairs", type=arguments.pairs, default=100)
    parser.add_argument("--opponents", nargs="+", choices=list(OPPONENTS),
                        default=["heuristic", "greedy"])
    parser.add_argument("--reuse", action="store_true",
                        help="keep a variant's checkpoint if it holds a run of --steps "
                             "decisions (no training)")
    parser.add_argument("--deal-seed", type=arguments.seed, default=9001)
    parser.add_argument("--out", type=arguments.output_folder, default="runs/ablation")
    args = parser.parse_args(argv)
    if "greedy" in args.opponents and args.pairs < 5:
        parser.error("--pairs must be >= 5 (a fifth of them are played against greedy)")
    args.out = str(Path(args.out).resolve())  # the subprocesses run in the repository root
    Path(args.out).mkdir(parents=True, exist_ok=True)
    print(f"{args.steps:,} decisions asked per variant (the trainer stops at the last whole "
          f"rollout: the decisions column is what each trained); seeds: training --seed "
          f"{args.seed}, arena --deal-seed {args.deal_seed}; {machine_text()}\n")
    print("| variant | flags | train min | decisions | " + " | ".join(
        f"vs {o} [95% CI]" for o in args.opponents) + " |")
    print("|---|---|---:|---:|" + "---|" * len(args.opponents))
    for variant in args.variants:
        print(row(run(variant, args), args.opponents), flush=True)
    return 0


if __name__ == "__main__":  # a closed stdout, an ASCII terminal: as the sevenrocks commands
    from sevenrocks_env.cli import guarded
    sys.exit(guarded("benchmarks/ablation.py", main))
