"""Speed of the batched engine (``sevenrocks_v0.vector_env``) against the AEC env, same run.

    .venv/bin/python benchmarks/vector_speed.py [--sizes 256 1024 4096 16384 65536]
        [--seconds 3] [--blocks 5] [--threads 1] [--device cpu] [--compile]
        [--plot docs/vector_speed.png]

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

Every rate is timed in blocks: a row's ``--seconds`` in ``--blocks`` blocks (the eager and
compiled envs' alternating blocks of about 0.2 s with ``--compile``; ``raw_env`` in ``--blocks``
runs of ``seconds / blocks``).  A figure is the mean of its blocks' rates ± half the 95%
interval of that mean (Student's t over the blocks, :func:`sevenrocks_env.ratings.mean_interval`),
and the plot draws that interval as a band: how much the machine's speed moved during the row,
not between runs or days (which moves more: compare columns of one run).
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from sevenrocks_env import arguments
from sevenrocks_env import observation as obs_mod
from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.atomic_file import atomic_path
from sevenrocks_env.batched import random_actions
from sevenrocks_env.batched.vector_env import MAX_ENVS
from sevenrocks_env.machine import machine_text
from sevenrocks_env.ratings import mean_interval

#: Timing blocks of a row, by default (at least 4: a t interval needs them).
BLOCKS = 5


class Rate(NamedTuple):
    """Steps/s of one row: the mean of its timing blocks' rates and the 95% interval of that
    mean."""

    mean: float
    low: float
    high: float

    @classmethod
    def of(cls, rates) -> "Rate":
        low, high = mean_interval(rates)   # (>= 4 blocks: every caller times at least that)
        return cls(float(np.mean(rates)), low, high)

    def cell(self) -> str:
        """``"1,234,567 ± 8,901"``: the mean and half the interval."""
        return f"{self.mean:,.0f} ± {(self.high - self.low) / 2:,.0f}"


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
            packed=False, blocks: int = BLOCKS) -> Rate:
    """Steps/s of random play over ``num_envs`` matches: ``blocks`` blocks of ``seconds /
    blocks`` (and at least 2 steps) each, after 5 steps of warm-up."""
    step, _ = random_play(num_envs, observe, device, validate, packed=packed)
    timed(step, 5, device)
    rates = []
    for _ in range(blocks):
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds / blocks or steps < 2:
            step()
            steps += 1
        if device != "cpu":
            torch.cuda.synchronize()
        rates.append(steps * num_envs / (time.perf_counter() - start))
    return Rate.of(rates)


def memory(num_envs: int, device: str) -> tuple[int, int]:
    """``(the env's tensor bytes, the process's RSS growth)`` of an env of ``num_envs`` matches
    that has stepped and written observations, read while it is alive (measured first, before
    other envs leave memory to the allocator)."""
    before = rss_bytes()
    step, venv = random_play(num_envs, True, device, False)
    timed(step, 5, device)
    return venv.nbytes(), rss_bytes() - before


def compiled_against_eager(num_envs: int, seconds: float, observe: bool, device: str,
                           validate: bool, packed=False, blocks: int = BLOCKS):
    """``(eager Rate, compiled Rate, seconds the compiled env's first 5 steps took)``: both
    envs in this process, timed in alternating blocks of about 0.2 s (this machine's speed
    drifts by +-20% within minutes, so runs one after the other do not compare), until each
    had ``seconds`` and at least ``blocks`` blocks."""
    plays = [random_play(num_envs, observe, device, validate, compile=c, packed=packed)[0]
             for c in (False, True)]
    timed(plays[0], 5, device)
    warm_up = timed(plays[1], 5, device)                 # compiling
    block = max(1, int(0.2 / (timed(plays[0], 3, device) / 3)))
    elapsed, rates = [0.0, 0.0], ([], [])
    while min(elapsed) < seconds or len(rates[0]) < blocks:
        for k, play in enumerate(plays):
            took = timed(play, block, device)
            elapsed[k] += took
            rates[k].append(block * num_envs / took)
    return Rate.of(rates[0]), Rate.of(rates[1]), warm_up


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


def aec_rate(seconds: float, observe: bool, blocks: int = BLOCKS) -> Rate:
    """:func:`aec` in ``blocks`` runs of ``seconds / blocks`` (each from the same first deal)."""
    return Rate.of([aec(seconds / blocks, observe) for _ in range(blocks)])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=arguments.int_in(1, MAX_ENVS), nargs="+",
                        default=[256, 1024, 4096, 16384, 65536])
    parser.add_argument("--seconds", type=arguments.seconds, default=3.0, help="per row")
    parser.add_argument("--blocks", type=arguments.int_in(4, 1000), default=BLOCKS,
                        help="timing blocks per row (a figure's interval is over its blocks)")
    parser.add_argument("--threads", type=arguments.threads, default=1)
    parser.add_argument("--device", type=arguments.device, default="cpu")
    parser.add_argument("--validate", action="store_true", help="step with validate=True")
    parser.add_argument("--compile", action="store_true",
                        help="also measure vector_env(compile=True)")
    parser.add_argument("--plot", type=arguments.picture_file,
                        help="write the steps/s curve to this .png, .svg or .pdf file")
    args = parser.parse_args(argv)
    if args.plot:  # (its suffix and folder checked by its type: before minutes of measuring)
        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.threads)
    print(f"# {machine_text(with_torch=True)}, device {args.device}, validate={args.validate}")
    raw_masks = aec_rate(args.seconds, False, args.blocks)
    raw_obs = aec_rate(args.seconds, True, args.blocks)
    print(f"raw_env random play: {raw_masks.cell()} steps/s (mask only), "
          f"{raw_obs.cell()} steps/s (observation + mask)")
    print("(each figure: the mean of its timing blocks' rates ± half the 95% interval of that "
          "mean; the ratios are of the means)\n")
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
                                                        args.validate, blocks=args.blocks)
            packed, fused_packed, _ = compiled_against_eager(
                *settings, False, args.device, args.validate, packed=True, blocks=args.blocks)
            full, fused_full, _ = compiled_against_eager(*settings, True, args.device,
                                                         args.validate, blocks=args.blocks)
            rows.append((size, masks, full, packed, fused, fused_full, fused_packed))
            warm_ups.append(f"{size:,}: {warm:.1f} s")
            cells = [(masks, raw_masks), (fused, raw_masks), (packed, raw_masks),
                     (fused_packed, raw_masks), (full, raw_obs), (fused_full, raw_obs)]
        else:
            masks = batched(*settings, False, args.device, args.validate, blocks=args.blocks)
            full = batched(*settings, True, args.device, args.validate, blocks=args.blocks)
            packed = batched(*settings, False, args.device, args.validate, packed=True,
                             blocks=args.blocks)
            rows.append((size, masks, full, packed))
            cells = [(masks, raw_masks), (full, raw_obs), (packed, raw_masks)]
        print(f"| {size:,} | " + " | ".join(f"{rate.cell()} | {rate.mean / raw.mean:.1f}"
                                            for rate, raw in cells) + " |", flush=True)
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
        series = [(1, "o-", "batched, masks only"), (2, "s-", "batched, masks + observations"),
                  (3, "^-", "batched, packed legal set")]
        if args.compile:
            series += [(4, "o--", "compile=True, masks only"),
                       (5, "s--", "compile=True, masks + observations"),
                       (6, "^--", "compile=True, packed legal set")]
        for column, style, label in series:
            rates = [r[column] for r in rows]
            line, = ax.plot(sizes, [rate.mean for rate in rates], style, label=label)
            ax.fill_between(sizes, [rate.low for rate in rates], [rate.high for rate in rates],
                            color=line.get_color(), alpha=0.2, linewidth=0)
        for raw, style, label in ((raw_masks, "--", "raw_env, mask only"),
                                  (raw_obs, ":", "raw_env, observation + mask")):
            ax.axhline(raw.mean, color="grey", linestyle=style, label=label)
            ax.axhspan(raw.low, raw.high, color="grey", alpha=0.15, linewidth=0)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("matches stepped together (B)")
        ax.set_ylabel("steps / s (bands: 95% intervals over timing blocks)")
        ax.set_title(f"Seven Rocks random play, {args.device}, {args.threads} torch thread(s)")
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        with atomic_path(args.plot) as partial:
            fig.savefig(partial, dpi=110, format=arguments.picture_format(args.plot))
        print(f"wrote {args.plot}")


if __name__ == "__main__":  # a closed stdout, an ASCII terminal: as the sevenrocks commands
    from sevenrocks_env.cli import guarded
    sys.exit(guarded("benchmarks/vector_speed.py", main))
