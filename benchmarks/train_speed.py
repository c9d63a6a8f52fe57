"""Trainer throughput: rollout, GAE and PPO update timings, as a table.

    .venv/bin/python benchmarks/train_speed.py [--matches 128] [--steps 64] [--rollouts 3]
        [--engines python,batched] [--threads 1] [--set critic=shared]
        [--batched-set num_matches=4096 --batched-set num_steps=16] [--batched-set device=cuda]

Measures the real trainer pieces (the rollout engines ``training.rollout.SelfPlayEngine`` --
one ``rules.Match`` per match -- and ``training.batched_rollout.BatchedSelfPlayEngine`` -- all
matches in one ``VectorEnv``; ``compute_gae``; ``ppo_update``) with the default config's
networks (policy and critic, built as the trainer builds them), both engines in the same run,
one column each (``--batched-set`` gives the batched engine its own batch shape, e.g. 4,096
matches, beside the Python engine at the config's, or its device: ``--batched-set
device=cuda``).  Numbers depend on how busy the CPU is.  The last line says what bounds the
overall training decisions/s: the share of the time spent in rollouts and in updates.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from training.config import ConfigError, check_set_once, load_config  # noqa: E402
from training.config_yaml import config_file  # noqa: E402
from training.opponents import OpponentPool  # noqa: E402
from training.ppo import compute_gae, ppo_update  # noqa: E402
from training.batched_rollout import BatchedSelfPlayEngine  # noqa: E402
from training.rollout import SelfPlayEngine  # noqa: E402
from training.seats import RolloutBuffer  # noqa: E402
from training.networks import build_networks, training_device  # noqa: E402
from training.ppo import rollout_batch  # noqa: E402

from sevenrocks_env import arguments
from sevenrocks_env.machine import machine_text


ENGINES = {"python": SelfPlayEngine, "batched": BatchedSelfPlayEngine}


def measure(cfg, opponent_fraction: float, rollouts: int, engine_class=SelfPlayEngine) -> dict:
    torch.manual_seed(cfg.seed)
    device = training_device(cfg)
    model, critic, guess, optimizer = build_networks(cfg, device)
    pool = OpponentPool(cfg.opponents, model) if opponent_fraction and cfg.opponents else None
    on_device = {"device": device} if engine_class is BatchedSelfPlayEngine else {}
    engine = engine_class(cfg.num_matches, cfg.seed, cfg.target, cfg.max_rounds,
                          cfg.points_scale, cfg.win_reward, opponent_fraction, pool, **on_device)
    buffer = RolloutBuffer(cfg.batch_size)
    times = {"rollout": 0.0, "gae": 0.0, "update": 0.0}
    env_steps = engine.env_steps
    for _ in range(rollouts):
        start = time.perf_counter()
        engine.collect(model, buffer, cfg.num_steps, critic)
        mid = time.perf_counter()
        adv, ret = compute_gae(buffer.rewards, buffer.values, buffer.dones, buffer.next_index,
                               buffer.bootstrap, cfg.gamma, cfg.gae_lambda)
        gae_end = time.perf_counter()
        batch = rollout_batch(buffer, adv, ret, device,
                              hands=critic is not None or guess is not None)
        ppo_update(model, optimizer, batch, cfg, critic, guess=guess)
        end = time.perf_counter()
        times["rollout"] += mid - start
        times["gae"] += gae_end - mid
        times["update"] += end - gae_end
    decisions = rollouts * cfg.batch_size
    total = sum(times.values())
    return {
        "rollout decisions/s": decisions / times["rollout"],
        "env steps/s (all moves)": (engine.env_steps - env_steps) / times["rollout"],
        "GAE ms / rollout": 1e3 * times["gae"] / rollouts,
        "update s / rollout": times["update"] / rollouts,
        "training SPS (overall)": decisions / total,
        "updates/s": rollouts / total,
        "rollout share of time %": 100 * times["rollout"] / total,
        "update share of time %": 100 * times["update"] / total,
    }


def _cell(value: float) -> str:
    """A table cell: one decimal, three below 1 (an update of a small batch read 0.0 s)."""
    return f"{value:,.1f}" if value == 0 or abs(value) >= 1 else f"{value:.3f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="configs/default.yaml")
    parser.add_argument("--matches", type=arguments.count)
    parser.add_argument("--steps", type=arguments.count)
    parser.add_argument("--rollouts", type=arguments.count, default=3)
    parser.add_argument("--threads", type=arguments.threads, default=1)
    parser.add_argument("--engines", default="python,batched",
                        help="comma-separated rollout engines to compare: python, batched")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config field, e.g. critic=shared (repeatable)")
    parser.add_argument("--batched-set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config field for the batched engine only (repeatable)")
    args = parser.parse_args(argv)
    args.config = config_file(args.config)  # (a path, or default / smoke: the package's)
    for option, given in (("--set", args.set), ("--batched-set", args.batched_set)):
        try:  # (the user's own, given twice; the script layers its values on them)
            check_set_once(given)
        except ConfigError as error:
            parser.error(f"{option}: {str(error).removeprefix('--set ')}")
    sized = [(option, f"{key}={value}") for option, key, value in (
        ("--matches", "num_matches", args.matches), ("--steps", "num_steps", args.steps)) if value]
    for option, item in sized:  # (the option came last and won without a word)
        key = item.partition("=")[0]
        if any(text.partition("=")[0].strip() == key for text in args.set):
            parser.error(f"--set {key} and {option} both give {key}: give one")
    for option, item in sized:  # its own bound, in its own name (it read "--set: num_matches")
        try:
            load_config(args.config, [item])
        except ConfigError as error:
            if f"{item.partition('=')[0]}:" in str(error):
                parser.error(f"{option}: {str(error).removeprefix('--set: ')}")
    overrides = list(args.set) + [item for _, item in sized]
    configs = {}
    for name, extra, option in (("python", [], None),
                                ("batched", args.batched_set, "--batched-set")):
        try:
            configs[name] = load_config(args.config, overrides + extra)
        except ConfigError as error:  # a missing file, an unknown key: a usage error
            text = str(error).removeprefix('--set: ')
            if extra:
                parser.error(f"{option}: {text}")
            if sized and text.startswith("num_matches * num_steps") and not any(
                    item.strip().startswith(("num_matches", "num_steps")) for item in args.set):
                parser.error(f"{'/'.join(option for option, _ in sized)}: {text}")
            parser.error(str(error))
    if any(item.strip().startswith("torch_threads") for item in overrides + args.batched_set):
        parser.error("--set/--batched-set torch_threads: this script sets torch's threads with "
                     "--threads")
    torch.set_num_threads(args.threads)
    machine = machine_text(with_torch=True)  # (before measuring: the load is not our own)
    engines = [name.strip() for name in args.engines.split(",") if name.strip()]
    unknown = sorted(set(engines) - set(ENGINES))
    if unknown or not engines:
        parser.error(f"--engines: unknown {unknown}; choose from {sorted(ENGINES)}")
    if len(set(engines)) != len(engines):  # one column per name: a second run would replace it
        parser.error(f"--engines: {args.engines!r} names an engine twice")
    try:
        for name in engines:
            training_device(configs[name])
    except ConfigError as error:
        parser.error(str(error))
    rows = {}
    for name in engines:
        run = configs[name]
        rows[f"{name} self-play"] = measure(run, 0.0, args.rollouts, ENGINES[name])
        if run.opponents and run.opponent_fraction:  # (0%: the self-play row again)
            rows[f"{name} {run.opponent_fraction:.0%} vs pool"] = measure(
                run, run.opponent_fraction, args.rollouts, ENGINES[name])
    for name in engines:
        run = configs[name]
        print(f"{name}: device {run.device}, batch {run.num_matches} matches x "
              f"{run.num_steps} steps = {run.batch_size}, hidden {run.hidden_sizes}, "
              f"action features v{run.action_features}, critic {run.critic}, "
              f"{args.rollouts} rollouts, seed {run.seed}, {machine}"
              + (f", pool {run.opponents}" if run.opponents else ""))
    metrics = list(next(iter(rows.values())))
    width = max(len(m) for m in metrics)
    print(f"| {'metric':<{width}} | " + " | ".join(rows) + " |")
    print(f"|{'-' * (width + 2)}|" + "|".join("-" * (len(r) + 2) for r in rows) + "|")
    for metric in metrics:
        cells = " | ".join(f"{_cell(rows[r][metric]):>{len(r)}}" for r in rows)
        print(f"| {metric:<{width}} | {cells} |")
    if len(engines) > 1:
        for suffix in ("self-play", f"{configs[engines[-1]].opponent_fraction:.0%} vs pool"):
            base, new = rows.get(f"{engines[0]} {suffix}"), rows.get(f"{engines[-1]} {suffix}")
            if base and new:
                ratio = new["rollout decisions/s"] / base["rollout decisions/s"]
                print(f"{suffix}: {engines[-1]} rollout decisions/s = {ratio:.1f}x {engines[0]}")
    for name, row in rows.items():
        bound = "the PPO update" if row["update share of time %"] > 50 else "the rollout"
        print(f"{name}: overall training decisions/s bounded by {bound} "
              f"({row['rollout share of time %']:.0f}% rollout, "
              f"{row['update share of time %']:.0f}% update)")
    return 0


if __name__ == "__main__":  # a closed stdout, an ASCII terminal: as the sevenrocks commands
    from sevenrocks_env.cli import guarded
    sys.exit(guarded("benchmarks/train_speed.py", main))
