"""Speed of the batched engine (``sevenrocks_v0.vector_env``) against the AEC env, same run.

    .venv/bin/python benchmarks/vector_speed.py [--sizes 256 1024 4096 16384 65536]
        [--seconds 3] [--threads 1] [--device cpu] [--compile] [--plot docs/vector_speed.png]

Random legal play: every step samples one legal action per match, uniformly, from the action mask
in batch (``sevenrocks_env.batched.random_actions``) and steps all matches with
``validate=False`` (the trainer's setting; ``--validate`` measures the default).  Rows: steps/s
(one step = one decision in one match) for masks only and for masks plus observations, beside
``raw_env`` driven through the same random play (its mask alone, and its full observation).
The "packed legal set" column plays the same games (the same actions from the same generator)
with ``venv.random_actions``, which draws from the legal set as the engine packs it (two 64-bit
words a match) and never builds the ``[B, 113]`` bool mask: random play as fast as it goes.
``--compile`` adds columns for ``vector_env(compile=True)`` (the step's and the mask's hot paths
fused by ``torch.compile``) beside each eager one; the eager and compiled envs of a column pair
are then timed in alternating blocks in one process, and the seconds compiling took are printed.
Memory is measured at the largest size, first: the env's tensors and the process's RSS growth
(read while the env is alive).
"""

from __future__ import annotations

import argparse
import platform
import random
import resource
import time
from pathlib import Path

import numpy as np
import torch

from sevenrocks_env import arguments
from sevenrocks_env import observation as obs_mod
from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.atomic_file import atomic_path
from sevenrocks_env.batched import random_actions
from sevenrocks_env.batched.vector_env import MAX_ENVS


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def random_play(num_envs: int, observe: bool, device: str, validate: bool, compile=False,
                packed=False):
    """A function that plays one step of random play in a fresh ``vector_env``, and the env;
    ``packed``: sampled by ``venv.random_actions`` (no bool mask)."""
    venv = sevenrocks_v0.vector_env(num_envs=num_envs, device=device, validate=validate,
                                    compile=compile)
    venv.reset(seed=0)
    generator = torch.Generator(device=device).manual_seed(0)

    def step():
        if observe:
            venv.observation
        if packed:
            venv.step(venv.random_actions(generator))
        else:
            venv.step(random_actions(venv.action_mask, generator, check=False))

    return step, venv


def timed(step, repeats: int, device: str) -> float:
    """Seconds for ``repeats`` calls of ``step``."""
    start = time.perf_counter()
    for _ in range(repeats):
        step()
    if device != "cpu":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def batched(num_envs: int, seconds: float, observe: bool, device: str, validate: bool,
            packed=False) -> float:
    """Steps/s of random play over ``num_envs`` matches."""
    step, _ = random_play(num_envs, observe, device, validate, packed=packed)
    timed(step, 5, device)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds or steps < 10:
        step()
        steps += 1
    if device != "cpu":
        torch.cuda.synchronize()
    return steps * num_envs / (time.perf_counter() - start)


def memory(num_envs: int, device: str) -> tuple[int, int]:
    """``(the env's tensor bytes, the process's RSS growth)`` of an env of ``num_envs`` matches
    that has stepped and written observations, read while it is alive (measured first, before
    other envs leave memory to the allocator)."""
    before = rss_bytes()
    step, venv = random_play(num_envs, True, device, False)
    timed(step, 5, device)
    return venv.nbytes(), rss_bytes() - before


def compiled_against_eager(num_envs: int, seconds: float, observe: bool, device: str,
                           validate: bool, packed=False):
    """``(eager steps/s, compiled steps/s, seconds the compiled env's first 5 steps took)``:
    both envs in this process, timed in alternating blocks of about 0.2 s (this machine's speed
    drifts by +-20% within minutes, so runs one after the other do not compare)."""
    plays = [random_play(num_envs, observe, device, validate, compile=c, packed=packed)[0]
             for c in (False, True)]
    timed(plays[0], 5, device)
    warm_up = timed(plays[1], 5, device)                 # compiling
    block = max(1, int(0.2 / (timed(plays[0], 3, device) / 3)))
    elapsed, steps = [0.0, 0.0], 0
    while min(elapsed) < seconds:
        for k, play in enumerate(plays):
            elapsed[k] += timed(play, block, device)
        steps += block
    return steps * num_envs / elapsed[0], steps * num_envs / elapsed[1], warm_up


def aec(seconds: float, observe: bool) -> float:
    """Steps/s of random play in ``raw_env``: its mask only, or its full observation as well."""
    env = sevenrocks_v0.raw_env()
    rng = random.Random(0)
    steps, matches, start = 0, 0, time.perf_counter()
    while time.perf_counter() - start < seconds or not matches:  # one match at least
        env.reset(seed=matches)
        matches += 1
        while not (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
            agent = env.agent_selection
            if observe:
                mask = env.observe(agent)["action_mask"]
            else:
                mask = obs_mod.action_mask(env.match, int(agent[-1]))
            legal = np.flatnonzero(mask)
            env.step(int(legal[rng.randrange(len(legal))]))
            steps += 1
    return steps / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=arguments.int_in(1, MAX_ENVS), nargs="+",
                        default=[256, 1024, 4096, 16384, 65536])
    parser.add_argument("--seconds", type=arguments.seconds, default=3.0, help="per row")
    parser.add_argument("--threads", type=arguments.threads, default=1)
    parser.add_argument("--device", type=arguments.device, default="cpu")
    parser.add_argument("--validate", action="store_true", help="step with validate=True")
    parser.add_argument("--compile", action="store_true",
                        help="also measure vector_env(compile=True)")
    parser.add_argument("--plot", type=arguments.output_file,
                        help="write the steps/s curve to this PNG")
    args = parser.parse_args(argv)
    if args.plot:  # (its folder checked by its type) a .txt: before minutes of measuring
        if Path(args.plot).suffix.lower() not in (".png", ".svg", ".pdf"):
            parser.error(f"--plot: give a .png, .svg or .pdf file, got {args.plot}")
        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.threads)
    print(f"# {platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"{args.threads} thread(s), device {args.device}, validate={args.validate}")
    raw_masks = aec(args.seconds, observe=False)
    raw_obs = aec(args.seconds, observe=True)
    print(f"raw_env random play: {raw_masks:,.0f} steps/s (mask only), "
          f"{raw_obs:,.0f} steps/s (observation + mask)\n")
    largest = max(args.sizes)
    nbytes, rss = memory(largest, args.device)
    if args.compile:
        print("Eager and compile=True envs timed in alternating blocks in one process "
              "(compare these columns with each other, not with other runs).\n")
        print("| B | masks only, steps/s | x raw_env | compiled | x raw_env | "
              "packed legal set, steps/s | x raw_env | compiled | x raw_env | "
              "masks + observations, steps/s | x raw_env | compiled | x raw_env |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    else:
        print("| B | masks only, steps/s | x raw_env | masks + observations, steps/s | "
              "x raw_env | packed legal set, steps/s | x raw_env |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
    rows, warm_ups = [], []
    for size in args.sizes:
        settings = (size, args.seconds)
        if args.compile:
            masks, fused, warm = compiled_against_eager(*settings, False, args.device,
                                                        args.validate)
            packed, fused_packed, _ = compiled_against_eager(*settings, False, args.device,
                                                             args.validate, packed=True)
            full, fused_full, _ = compiled_against_eager(*settings, True, args.device,
                                                         args.validate)
            rows.append((size, masks, full, packed, fused, fused_full, fused_packed))
            warm_ups.append(f"{size:,}: {warm:.1f} s")
            print(f"| {size:,} | {masks:,.0f} | {masks / raw_masks:.1f} | {fused:,.0f} | "
                  f"{fused / raw_masks:.1f} | {packed:,.0f} | {packed / raw_masks:.1f} | "
                  f"{fused_packed:,.0f} | {fused_packed / raw_masks:.1f} | {full:,.0f} | "
                  f"{full / raw_obs:.1f} | {fused_full:,.0f} | {fused_full / raw_obs:.1f} |",
                  flush=True)
        else:
            masks = batched(*settings, False, args.device, args.validate)
            full = batched(*settings, True, args.device, args.validate)
            packed = batched(*settings, False, args.device, args.validate, packed=True)
            rows.append((size, masks, full, packed))
            print(f"| {size:,} | {masks:,.0f} | {masks / raw_masks:.1f} | {full:,.0f} | "
                  f"{full / raw_obs:.1f} | {packed:,.0f} | {packed / raw_masks:.1f} |",
                  flush=True)
    if warm_ups:
        print("\ncompile=True, the first 5 steps (compiling; Inductor's on-disk cache makes a "
              "later run's shorter), by B: " + ", ".join(warm_ups))
    print(f"\nmemory at B = {largest:,} (eager, measured first): env tensors "
          f"{nbytes / 2**20:.1f} MiB ({nbytes / largest:.0f} bytes/match), process RSS growth "
          f"{rss / 2**20:.1f} MiB; peak RSS of the whole run "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10:.0f} MiB")
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
        sizes = [r[0] for r in rows]
        ax.plot(sizes, [r[1] for r in rows], "o-", label="batched, masks only")
        ax.plot(sizes, [r[2] for r in rows], "s-", label="batched, masks + observations")
        ax.plot(sizes, [r[3] for r in rows], "^-", label="batched, packed legal set")
        if args.compile:
            ax.plot(sizes, [r[4] for r in rows], "o--", label="compile=True, masks only")
            ax.plot(sizes, [r[5] for r in rows], "s--", label="compile=True, masks + observations")
            ax.plot(sizes, [r[6] for r in rows], "^--", label="compile=True, packed legal set")
        ax.axhline(raw_masks, color="grey", linestyle="--", label="raw_env, mask only")
        ax.axhline(raw_obs, color="grey", linestyle=":", label="raw_env, observation + mask")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("matches stepped together (B)")
        ax.set_ylabel("steps / s")
        ax.set_title(f"Seven Rocks random play, {args.device}, {args.threads} torch thread(s)")
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        with atomic_path(args.plot) as partial:
            fig.savefig(partial, dpi=110, format=Path(args.plot).suffix[1:])
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
