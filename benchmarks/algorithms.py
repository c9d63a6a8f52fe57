"""Benchmark RL algorithms on Seven Rocks: same budget of learner decisions, seeds and arena.

    .venv/bin/python benchmarks/algorithms.py --budget 98304 --seeds 1 2 --pairs 100 \
        [--algos ours sb3-heuristic sb3-self rllib openspiel-dqn] [--rllib-python .venv-rllib/bin/python] [--json out.json]

Trains each algorithm once per seed, each in its own process (RLlib runs in its own venv, since
Ray pins its own gymnasium; see docs/adapters.md):

| algorithm       | how                                                                        |
|-----------------|----------------------------------------------------------------------------|
| `ours`          | `python -m training.train --config configs/default.yaml --set total_steps=B --set critic=shared` (self-play PPO) |
| `sb3-heuristic` | `examples/sb3_maskable_ppo.py --opponents heuristic` (partnership vs heuristic) |
| `sb3-self`      | `examples/sb3_maskable_ppo.py --opponents self` (vs frozen copies of itself) |
| `rllib`         | `examples/rllib_ppo.py --opponent self` (RLlib PPO, shared masked policy)  |
| `openspiel-dqn` | `examples/openspiel_dqn.py` (OpenSpiel's PyTorch DQN through `rl_environment`, four seats sharing one Q-network; one-round episodes) |

**Reward:** the same for all: the score margin / 100 after every scoring event (the env's
``reward="points"``; our trainer with ``points_scale=0.01, win_reward=0``), so a match's return
is its final margin / 100.  The sparse R8 win/loss reward gives no signal here: a fresh policy
never wins a 250-point match against ``heuristic`` (``random`` loses all 40 of 40 matches to
``greedy`` in the arena), so SB3 trained on it stayed at return -1.
``openspiel-dqn`` gets the same points cut into one-round episodes (OpenSpiel's
``python_sevenrocks`` with ``rounds=1``: returns = the round margin, scaled by 1/100); the round
margins of a match sum to its final margin, but its episodes all start at 0:0.

**Budget unit:** decisions of learner-controlled seats, forced moves (single legal action,
R6 knocks) excluded: our trainer's ``total_steps``, SB3's timesteps with ``skip_forced=True``,
RLlib's env steps with ``skip_forced``; OpenSpiel DQN's steps of the four seats, forced moves
played without asking them.  Libraries round to whole rollouts, so the table reports
the learner decisions each run really took (its "learner decisions" column: not env steps,
which count every seat's moves, forced ones too, as ``train_speed.py``'s "env steps" do).
Common hyperparameters: MLP 256x256, lr 2.5e-4, gamma 0.99,
GAE lambda 0.95, entropy 0.01, 4 epochs, clip 0.2, 1 torch thread; rollout sizes are each
library's usual (ours 8192, SB3 2048, RLlib 4096), so the default budget 98,304 is whole
rollouts for every one of them.
DQN (off-policy) has its own: MLP 256x256, Adam lr 2.5e-4, gamma 0.99, batch 128, Huber
loss, a 50,000-transition buffer, one update per 4 decisions, epsilon 1 -> 0.05 over the first
half of the budget (see the example's docstring).

Then every trained policy plays ``greedy`` and ``heuristic`` in this process's arena with the
same deals (duplicate pairs from ``--eval-seed``).  A cell is the mean win rate over the seeds,
its 95% CI Wilson over the ``--pairs`` deals (every seed plays the same deals, so they are
``--pairs`` trials, not seeds x pairs): it is the spread of these trained policies over deals,
not of the algorithm over training seeds, which the per-seed rates beside it show.  Wall time
is the training time per run (no evaluation).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from sevenrocks_env import arguments
from sevenrocks_env.atomic_file import atomic_path

ROOT = Path(__file__).resolve().parents[1]
ALGOS = ("ours", "sb3-heuristic", "sb3-self", "rllib", "openspiel-dqn")
OPPONENTS = ("greedy", "heuristic")
REWARD_TAG = "points"  # what --reuse checks besides the budget


def _run(cmd: list[str], log: Path, python_env: dict | None = None) -> float:
    """Run ``cmd`` (output to ``log``); return its wall time; raise with the log tail on failure."""
    started = time.perf_counter()
    with open(log, "w") as out:
        done = subprocess.run(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                              env={**os.environ, **(python_env or {})})
    if done.returncode != 0:
        lines = log.read_text(errors="replace").strip().splitlines()
        last = lines[-1][:300] if lines else "(no output)"
        raise RuntimeError(f"{' '.join(cmd)[:200]} failed (exit {done.returncode}): {last} "
                           f"(the whole output: {log})")
    return time.perf_counter() - started


def artifact(algo: str, out: Path) -> str:
    """The agent spec of the policy a run of ``algo`` in ``out`` saves (built from ``--out``,
    never read from a file: a copied or moved folder scores its own files)."""
    if algo == "ours":
        return f"ckpt:{out.parent / 'ckpt' / out.name / 'latest.pt'}"
    if algo.startswith("sb3-"):
        return f"sb3:{out / 'model.zip'}"
    if algo == "rllib":
        return f"ckpt:{out / 'policy.pt'}"
    if algo == "openspiel-dqn":
        return f"osdqn:{out / 'q_network.pt'}"
    raise ValueError(f"unknown algorithm {algo!r}; choose from {ALGOS}")


def train_one(algo: str, seed: int, budget: int, out: Path, rllib_python: str) -> dict:
    """Train ``algo`` with ``seed`` for ``budget`` steps; return its artifact and measured numbers."""
    out.mkdir(parents=True, exist_ok=True)
    log, result = out / "train.log", out / "result.json"
    if algo == "ours":
        overrides = [f"total_steps={budget}", f"seed={seed}", "max_minutes=0", "eval_every=0",
                     "points_scale=0.01", "win_reward=0",  # the same reward as reward="points"
                     "critic=shared",  # no critic that sees hidden hands: the others have none
                     "eval_agents=[random]", "final_eval_pairs=1", "progress=false",
                     f"run_name={out.name}", f"checkpoint_dir={out.parent}/ckpt",
                     f"log_dir={out.parent}/tb"]
        # --force: a run of another budget, or one not --reuse'd, trains afresh in its folder
        cmd = [sys.executable, "-m", "training.train", "--config", "configs/default.yaml",
               "--force"]
        for item in overrides:
            cmd += ["--set", item]
        wall = _run(cmd, log)
        checkpoint = out.parent / "ckpt" / out.name / "latest.pt"
        import torch

        data = torch.load(checkpoint, map_location="cpu", weights_only=True)
        return {"agent": artifact(algo, out), "env_steps": int(data["global_step"]),
                "train_s": float(data.get("wall_time", wall)), "process_s": wall}
    if algo.startswith("sb3-"):
        opponents = algo.split("-", 1)[1]
        model = out / "model.zip"
        cmd = [sys.executable, "examples/sb3_maskable_ppo.py", "--opponents", opponents,
               "--steps", str(budget), "--seed", str(seed), "--save", str(model), "--reward", "points",
               "--eval-pairs", "0", "--json", str(result)]
        wall = _run(cmd, log)
        data = json.loads(result.read_text())
        return {"agent": artifact(algo, out), "env_steps": data["env_steps"],
                "train_s": data["train_seconds"], "process_s": wall}
    if algo == "rllib":
        checkpoint = out / "policy.pt"
        cmd = [rllib_python, "examples/rllib_ppo.py", "--opponent", "self", "--env-steps", str(budget),
               "--seed", str(seed), "--export", str(checkpoint), "--eval-pairs", "0", "--reward", "points",
               "--train-batch-size", "4096", "--minibatch-size", "512", "--num-cpus", "2",
               "--json", str(result)]
        # Ray starts its workers at the lowest CPU priority: on a shared machine they starve
        wall = _run(cmd, log, {"RAY_worker_niceness": os.environ.get("RAY_worker_niceness", "0")})
        data = json.loads(result.read_text())
        return {"agent": artifact(algo, out), "env_steps": data["env_steps"],
                "train_s": data["train_seconds"], "process_s": wall}
    if algo == "openspiel-dqn":
        network = out / "q_network.pt"
        cmd = [sys.executable, "examples/openspiel_dqn.py", "--steps", str(budget), "--seed",
               str(seed), "--save", str(network), "--eval-pairs", "0", "--json", str(result)]
        wall = _run(cmd, log)
        data = json.loads(result.read_text())
        return {"agent": artifact(algo, out), "env_steps": data["env_steps"],
                "train_s": data["train_seconds"], "process_s": wall}
    raise ValueError(f"unknown algorithm {algo!r}; choose from {ALGOS}")


def _example(name: str):
    """The module ``examples/<name>.py`` (examples are scripts, not a package)."""
    import importlib.util

    module_spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    example = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(example)
    return example


def load_agent(spec: str):
    """An arena agent from ``ckpt:PATH``, ``sb3:PATH`` (a MaskablePPO zip) or ``osdqn:PATH``
    (a Q-network saved by ``examples/openspiel_dqn.py``)."""
    if spec.startswith("sb3:"):
        from sb3_contrib import MaskablePPO

        example = _example("sb3_maskable_ppo")
        return example.SB3Agent(MaskablePPO.load(spec[4:], device="cpu"))
    if spec.startswith("osdqn:"):
        return _example("openspiel_dqn").load_agent(spec[len("osdqn:"):])
    from sevenrocks_env.agents import make_agent

    return make_agent(spec)


def reused_run(saved: Path, tag: str) -> dict | None:
    """The numbers a run in this folder measured (``run.json``), if it trained with this budget
    and reward (``tag``) and they are numbers; else ``None``: the run trains again."""
    try:
        data = json.loads(saved.read_text())
    except (OSError, ValueError):
        return None
    if not (isinstance(data, dict) and data.get("tag") == tag
            and type(data.get("env_steps")) is int and data["env_steps"] >= 0
            and all(isinstance(data.get(key), (int, float)) and not isinstance(data[key], bool)
                    and 0 <= data[key] < 1e9 for key in ("train_s", "process_s"))):
        return None
    return {key: data[key] for key in ("env_steps", "train_s", "process_s", "tag")}


def evaluate_run(run: dict, pairs: int, eval_seed: int) -> dict:
    from sevenrocks_env.agents import make_agent
    from sevenrocks_env.arena import evaluate

    agent = load_agent(run["agent"])
    scores = {}
    for opponent in OPPONENTS:
        result = evaluate(agent, make_agent(opponent), pairs, eval_seed)
        scores[opponent] = {"win_rate": result.win_rate, "pairs": result.pairs,
                            "ci95": list(result.ci95), "mean_margin": result.mean_margin}
    return scores


def table(runs: list[dict], budget: int, pairs: int, eval_seed: int) -> str:
    from sevenrocks_env.machine import machine_text
    from sevenrocks_env.ratings import wilson_interval

    lines = [machine_text(), "",
             f"budget {budget:,} learner decisions per run; arena: the same {pairs} duplicate "
             f"pairs (deal seed {eval_seed}) per opponent for every seed; mean over seeds, "
             "Wilson 95% CI over the "
             f"{pairs} deals (these policies' spread over deals, not the algorithm's over "
             "training seeds: the per-seed rates follow it)", "",
             "| algorithm | seeds | learner decisions (mean) | train wall s (mean) | "
             "win rate vs greedy | win rate vs heuristic |", "|---|---|---|---|---|---|"]
    for algo in dict.fromkeys(r["algo"] for r in runs):
        mine = [r for r in runs if r["algo"] == algo]
        cells = []
        for opponent in OPPONENTS:
            rates = [r["arena"][opponent]["win_rate"] for r in mine]
            p = statistics.mean(rates)
            lo, hi = wilson_interval(p, min(r["arena"][opponent]["pairs"] for r in mine))
            cells.append(f"{p:.3f} [{lo:.3f}, {hi:.3f}] (seeds: "
                         f"{', '.join(f'{rate:.3f}' for rate in rates)})")
        lines.append(f"| {algo} | {','.join(str(r['seed']) for r in mine)} | "
                     f"{statistics.mean(r['env_steps'] for r in mine):,.0f} | "
                     f"{statistics.mean(r['train_s'] for r in mine):,.0f} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


#: The largest rollout of the algorithms compared (ours: 128 matches x 64 steps); SB3's 2048 and
#: RLlib's 4096 divide it, so a budget of whole ones is the same for all.
ROLLOUT = 8192


def _budget(text: str) -> int:
    budget = arguments.count(text)
    if budget % ROLLOUT:
        raise argparse.ArgumentTypeError(f"must be a multiple of {ROLLOUT} (a whole rollout of "
                                         f"each algorithm: the same budget for all), got {budget}")
    return budget


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=_budget, default=98_304,
                        help="learner decisions per run, a multiple of 8192 (default 12 x 8192: "
                             "whole rollouts for all, so every algorithm trains the same budget)")
    parser.add_argument("--seeds", type=arguments.training_seed, nargs="+", default=[1, 2])
    parser.add_argument("--algos", nargs="+", default=list(ALGOS), choices=ALGOS)
    parser.add_argument("--pairs", type=arguments.pairs, default=100,
                        help="arena duplicate pairs per opponent")
    parser.add_argument("--eval-seed", type=arguments.seed, default=12345)
    parser.add_argument("--rllib-python", default=str(ROOT / ".venv-rllib" / "bin" / "python"),
                        help="a Python with the [rllib] extra installed")
    parser.add_argument("--out", type=arguments.output_folder, default="runs/bench_algorithms",
                        help="artifacts and logs (relative to the current folder, like --json)")
    parser.add_argument("--reuse", action="store_true",
                        help="skip training where --out already holds a run with this budget "
                             "(its run.json's numbers, and the policy file in --out); without "
                             "it a run trains afresh, replacing the one in --out")
    parser.add_argument("--json", type=arguments.output_file,
                        help="write every run's numbers here")
    return parser


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    for option, values in (("--seeds", args.seeds), ("--algos", args.algos)):
        if len(set(values)) != len(values):  # one run counted twice in the means
            parser.error(f"{option}: each at most once, got {values}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    if "rllib" in args.algos and not Path(args.rllib_python).exists():
        print(f"error: {args.rllib_python} not found (make the [rllib] venv, or drop rllib "
              "from --algos)", file=sys.stderr)
        return 2
    runs = []
    for algo in args.algos:
        for seed in args.seeds:
            out = Path(args.out).resolve() / f"{algo}_seed{seed}"  # relative to here, as --json
            print(f"training {algo} seed {seed} ({args.budget:,} steps) ...", flush=True)
            saved, tag = out / "run.json", f"{args.budget}/{REWARD_TAG}"
            reused = reused_run(saved, tag) if args.reuse else None
            policy = artifact(algo, out)  # this folder's own file, never one a file names
            if reused is not None and not Path(policy.partition(":")[2]).is_file():
                print(f"error: {algo} seed {seed}: --reuse: {saved} is there but not the policy "
                      f"file {policy.partition(':')[2]}: run without --reuse to train it again",
                      file=sys.stderr)
                return 2
            if reused is not None:
                trained = {**reused, "agent": policy}
            else:
                # its numbers go with the files this run replaces: a run stopped half-way must
                # not leave them beside its own checkpoint for a later --reuse
                saved.unlink(missing_ok=True)
                try:
                    trained = train_one(algo, seed, args.budget, out, args.rllib_python)
                except (RuntimeError, OSError, ValueError) as error:  # a run that failed
                    print(f"error: {algo} seed {seed}: {error}", file=sys.stderr)
                    return 1
                trained["tag"] = tag
                saved.write_text(json.dumps(trained))
            run = {"algo": algo, "seed": seed, **trained, "eval_seed": args.eval_seed}
            try:
                run["arena"] = evaluate_run(run, args.pairs, args.eval_seed)
            except (ValueError, OSError) as error:  # e.g. a --reuse'd run whose file is gone
                print(f"error: {algo} seed {seed}: {error}", file=sys.stderr)
                return 2
            scores = ", ".join(f"vs {o} {run['arena'][o]['win_rate']:.3f}" for o in OPPONENTS)
            print(f"  {run['env_steps']:,} learner decisions in {run['train_s']:.0f} s; {scores}",
                  flush=True)
            runs.append(run)
            if args.json:
                with atomic_path(args.json) as partial:
                    partial.write_text(json.dumps(runs, indent=2))
    print()
    print(table(runs, args.budget, args.pairs, args.eval_seed))
    return 0


if __name__ == "__main__":  # a closed stdout, an ASCII terminal: as the sevenrocks commands
    from sevenrocks_env.cli import guarded
    sys.exit(guarded("benchmarks/algorithms.py", main))
