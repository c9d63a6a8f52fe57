"""sb3-contrib MaskablePPO on Seven Rocks through the Gymnasium single-agent view.

    pip install -e ".[sb3]"
    python examples/sb3_maskable_ppo.py --opponents heuristic --steps 200000
    python examples/sb3_maskable_ppo.py --opponents self ...      # vs frozen copies of itself

The learner is a partnership (``partner="self"``: it decides for seat and seat+2, see
:mod:`sevenrocks_env.single_agent`) against ``--opponents`` (an agent spec).  ``--opponents self``
plays against a copy of the learner, refreshed every ``--refresh`` steps (fictitious self-play:
a single-agent library cannot update the opponents' policy inside its own rollout).  The seat is
drawn per match (``seat="random"``) so the learner sees both opening orders; forced moves (a
knock, or a single fitting placement) are played by the env (``skip_forced=True``) so a step is
a real decision.  MaskablePPO reads the
legal actions from ``env.action_masks()`` and never samples an illegal one.

At the end the policy plays ``greedy`` and ``heuristic`` in the arena (duplicate deals, CIs) as
:class:`~sevenrocks_env.agents.sb3_agent.SB3Agent`, an :class:`~sevenrocks_env.agents.base.Agent`.
The saved zip plays anywhere as the agent spec ``sb3:PATH``, e.g.
``sevenrocks arena sb3:checkpoints/sb3/maskable_ppo.zip heuristic`` (an SB3 zip is a pickle:
use only files you trust).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import gymnasium
import numpy as np

from sevenrocks_env import arguments
import sevenrocks_env  # noqa: F401  (registers sevenrocks/SevenRocks-v0)
from sevenrocks_env.atomic_file import check_output_file
from sevenrocks_env.arena_cli import (add_evaluation_arguments, check_evaluation_arguments,
                                      report_evaluation)
from sevenrocks_env.agents import make_agent
from sevenrocks_env.agents.sb3_agent import SB3Agent


class _FrozenCopy:
    """The opponent for ``--opponents self``: an Agent playing a frozen copy of the learner."""

    name = "self"

    def __init__(self):
        self.agent: SB3Agent | None = None
        self._rng = np.random.default_rng(0)

    def seed(self, seed: int | None) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, observation, action_mask) -> int:
        if self.agent is None:  # before the first refresh: uniform over legal actions
            return int(self._rng.choice(np.flatnonzero(action_mask)))
        return self.agent.act(observation, action_mask)


def make_env(opponents="heuristic", partner="self", seat="random", reward: str = "win",
             skip_forced: bool = True, **kwargs) -> gymnasium.Env:
    """``gymnasium.make("sevenrocks/SevenRocks-v0", ...)`` with the options used here."""
    return gymnasium.make("sevenrocks/SevenRocks-v0", opponents=opponents, partner=partner, seat=seat,
                          reward=reward, skip_forced=skip_forced, **kwargs)


def train(opponents: str = "heuristic", steps: int = 100_000, seed: int = 1, n_envs: int = 1,
          n_steps: int = 2048, batch_size: int = 256, n_epochs: int = 4, learning_rate: float = 2.5e-4,
          hidden=(256, 256), refresh: int = 16_384, reward: str = "win", verbose: int = 0):
    """Train MaskablePPO for ``steps`` env steps; returns ``(model, seconds)``."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(1)
    frozen = _FrozenCopy() if opponents == "self" else None
    spec = frozen if frozen is not None else opponents
    vec = make_vec_env(lambda: make_env(opponents=spec, reward=reward), n_envs=n_envs, seed=seed)
    model = MaskablePPO("MultiInputPolicy", vec, n_steps=n_steps, batch_size=batch_size,
                        n_epochs=n_epochs, learning_rate=learning_rate, gamma=0.99, gae_lambda=0.95,
                        ent_coef=0.01, policy_kwargs={"net_arch": list(hidden)}, seed=seed,
                        verbose=verbose, device="cpu")
    model.set_logger(_console_logger(verbose))
    started = time.perf_counter()
    if frozen is None:
        model.learn(total_timesteps=steps)
    else:  # SB3 learns whole rollouts: copy the learner every whole rollouts, at least one
        rollout = n_steps * n_envs
        every = max(rollout, refresh - refresh % rollout)
        while model.num_timesteps < steps:  # (a chunk of 100 steps of 64-step rollouts ran 128)
            model.learn(total_timesteps=min(every, steps - model.num_timesteps),
                        reset_num_timesteps=model.num_timesteps == 0)
            frozen.agent = SB3Agent(_snapshot(model), name="self")
    return model, time.perf_counter() - started


def _console_logger(verbose: int):
    """SB3's logger printing to stdout when ``verbose``, writing no files.

    SB3's default logger makes an empty ``<tmp>/SB3-<date>`` folder at every ``learn()``, even
    when it writes nothing there: one per refresh of the self-play copy.
    """
    from stable_baselines3.common.logger import HumanOutputFormat, Logger

    return Logger(folder=None, output_formats=[HumanOutputFormat(sys.stdout)] if verbose else [])


def _snapshot(model):
    """A frozen copy of ``model``'s policy (a new policy object with the weights copied)."""
    policy = type(model.policy)(**model.policy._get_constructor_parameters())
    policy.load_state_dict(model.policy.state_dict())
    policy.set_training_mode(False)
    return policy


#: Largest rollout (``--n-steps * --n-envs``): SB3's buffer holds ~1 kB a step.
MAX_ROLLOUT = 1 << 20


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--opponents", default="heuristic", help="agent spec, or 'self'")
    parser.add_argument("--steps", type=arguments.count, default=200_000,
                        help="env steps (learner decisions)")
    parser.add_argument("--seed", type=arguments.training_seed, default=1)
    parser.add_argument("--n-envs", type=arguments.int_in(1, MAX_ROLLOUT), default=1)
    parser.add_argument("--n-steps", type=arguments.int_in(1, MAX_ROLLOUT), default=2048,
                        help="rollout length per env")
    parser.add_argument("--reward", default="win", choices=["win", "points", "shaped"],
                        help="env reward: R8 win/loss, the score margin / 100 (dense), or "
                             "shaped = 0.01 * margin +- 1 (the project trainer's reward)")
    parser.add_argument("--refresh", type=arguments.count, default=16_384,
                        help="--opponents self: copy the learner every N steps (rounded down "
                             "to whole rollouts of --n-steps * --n-envs, at least one; SB3 "
                             "rounds --steps up to whole rollouts)")
    parser.add_argument("--save", default="checkpoints/sb3/maskable_ppo.zip")
    add_evaluation_arguments(parser)
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.save.endswith(("/", "\\")) or Path(args.save).is_dir():  # before ".zip" is added
            raise ValueError(f"--save {args.save!r} names a folder; give a file name")
        if not args.save.endswith(".zip"):
            args.save += ".zip"  # SB3 adds it when saving: print and record the real file
        check_evaluation_arguments(args, args.save)
        check_output_file(args.save)  # a folder or /proc: refused now, not after training
        if args.opponents != "self":
            make_agent(args.opponents)
        rollout = args.n_steps * args.n_envs
        if rollout < 2:
            raise ValueError("MaskablePPO needs a rollout of at least 2 steps (--n-steps * --n-envs)")
        if rollout > MAX_ROLLOUT:
            raise ValueError(f"--n-steps * --n-envs is at most {MAX_ROLLOUT:,} (a rollout buffer "
                             f"of ~1 kB a step), got {rollout:,}")
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    model, seconds = train(args.opponents, args.steps, args.seed, args.n_envs, args.n_steps,
                           refresh=args.refresh, reward=args.reward, verbose=1)
    Path(args.save).parent.mkdir(parents=True, exist_ok=True)
    model.save(args.save)
    print(f"saved {args.save}; in the arena: sevenrocks arena sb3:{args.save} heuristic")
    results = {"env_steps": int(model.num_timesteps), "train_seconds": seconds, "model": args.save}
    report_evaluation(SB3Agent(model, name="sb3-maskable-ppo"), "MaskablePPO", args, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
