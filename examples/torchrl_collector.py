"""Collect Seven Rocks frames with a TorchRL collector over the batched engine.

    pip install -e ".[torchrl]"
    python examples/torchrl_collector.py                          # 64 matches, 8192 frames, CPU
    python examples/torchrl_collector.py --device cuda --num-envs 4096 --frames 1000000
    python examples/torchrl_collector.py --policy random          # uniform over the legal actions

The env is :class:`sevenrocks_env.torchrl_env.SevenRocksTorchRLEnv` (``docs/torchrl.md``).  The
default policy is a small untrained MLP over the seat on turn's observation, sampled from
TorchRL's ``MaskedCategorical`` with the env's ``action_mask``, so it never picks an illegal
action; ``--policy random`` draws uniformly from the legal actions.  (``policy=None`` would not
do: TorchRL's ``RandomPolicy`` clones the action spec once, so it never sees the mask of later
steps.)  ``torchrl.collectors.Collector`` is TorchRL 0.14's name for the single-process
synchronous collector (``SyncDataCollector`` before).  A frame is one step of one match: a
batch of ``frames_per_batch`` frames is ``[num_envs, frames_per_batch / num_envs]``.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.collectors import Collector
from torchrl.modules import MaskedCategorical, ProbabilisticActor

from sevenrocks_env import arguments
from sevenrocks_env.observation import OBS_SIZE
from sevenrocks_env.tiles import NUM_ACTIONS
from sevenrocks_env.torchrl_env import GROUP, SevenRocksTorchRLEnv


def masked_mlp_policy(device, hidden: int = 64) -> ProbabilisticActor:
    """An (untrained) MLP actor whose samples respect ``action_mask``."""
    net = nn.Sequential(nn.Linear(OBS_SIZE, hidden), nn.Tanh(), nn.Linear(hidden, NUM_ACTIONS))
    module = TensorDictModule(net.to(device), in_keys=["observation"], out_keys=["logits"])
    return ProbabilisticActor(module, in_keys={"logits": "logits", "mask": "action_mask"},
                              out_keys=["action"], distribution_class=MaskedCategorical,
                              return_log_prob=True)


def masked_random_policy() -> TensorDictModule:
    """Uniform over each match's legal actions (``action_mask``), whatever the batch dims
    (``[B, 113]``, or ``[n, B, 113]`` under ``SerialEnv`` / ``ParallelEnv``)."""
    def draw(mask: torch.Tensor) -> torch.Tensor:
        rows = mask.flatten(0, -2).to(torch.float32)  # multinomial takes 1 or 2 dims only
        return torch.multinomial(rows, 1).view(mask.shape[:-1])

    return TensorDictModule(draw, in_keys=["action_mask"], out_keys=["action"])


#: Frames one collected batch may hold (each ~1 kB of observation, mask and reward tensors).
MAX_FRAMES_PER_BATCH = 1 << 20


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", type=arguments.int_in(1, MAX_FRAMES_PER_BATCH), default=64,
                        help="matches stepped together")
    parser.add_argument("--frames", type=arguments.count, default=8192,
                        help="total frames to collect, rounded up to whole batches of "
                             "--num-envs x --steps-per-batch")
    parser.add_argument("--steps-per-batch", type=arguments.int_in(1, MAX_FRAMES_PER_BATCH),
                        default=32, help="steps of every match per collected batch")
    parser.add_argument("--device", type=arguments.device, default="cpu",
                        help="torch device of env and policy")
    parser.add_argument("--policy", choices=("mlp", "random"), default="mlp")
    parser.add_argument("--seed", type=arguments.seed, default=0)
    args = parser.parse_args(argv)
    if args.num_envs * args.steps_per_batch > MAX_FRAMES_PER_BATCH:
        parser.error(f"--num-envs * --steps-per-batch is at most {MAX_FRAMES_PER_BATCH:,} frames "
                     f"a batch (~1 kB each), got {args.num_envs * args.steps_per_batch:,}")
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    env = SevenRocksTorchRLEnv(args.num_envs, device=args.device, seed=args.seed)
    policy = masked_mlp_policy(env.device) if args.policy == "mlp" else masked_random_policy()
    frames_per_batch = args.num_envs * args.steps_per_batch
    collector = Collector(env, policy, frames_per_batch=frames_per_batch,
                          total_frames=max(args.frames, frames_per_batch),
                          # the policies keep no recurrent state: no InitTracker transform needed
                          auto_register_policy_transforms=False)
    frames = matches = illegal = 0
    reward_sum = torch.zeros(4)
    start = time.perf_counter()
    for batch in collector:
        frames += batch.numel()
        matches += int(batch["next", "done"].sum())
        chosen = batch["action_mask"].gather(-1, batch["action"].unsqueeze(-1))
        illegal += int((~chosen).sum())
        reward_sum += batch["next", GROUP, "reward"].sum(dim=(0, 1)).squeeze(-1).cpu()
    seconds = time.perf_counter() - start
    collector.shutdown()
    summary = {"frames": frames, "seconds": seconds, "frames_per_s": frames / seconds,
               "matches_finished": matches, "illegal_actions": illegal,
               "reward_sum_per_seat": reward_sum.tolist()}
    print(f"{frames} frames in {seconds:.2f} s = {frames / seconds:,.0f} frames/s "
          f"({args.num_envs} envs on {env.device}, policy {args.policy}); "
          f"{matches} matches finished; reward sums per seat {reward_sum.tolist()}")
    return summary


if __name__ == "__main__":
    main(sys.argv[1:])
