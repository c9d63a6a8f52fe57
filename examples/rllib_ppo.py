"""Ray RLlib PPO (new API stack) on Seven Rocks: a shared partnership policy with action masking.

    pip install -e ".[rllib]"                              # ray[rllib], torch (see docs/adapters.md)
    python examples/rllib_ppo.py --env-steps 200000 --export checkpoints/rllib/policy.pt
    sevenrocks arena ckpt:checkpoints/rllib/policy.pt heuristic --pairs 200

    ray start --head                                       # on the head node
    ray start --address HEAD_IP:6379                       # on every other node
    python examples/rllib_ppo.py --address auto --num-env-runners 16 --env-steps 5000000

One policy ("shared") plays every learner seat: with ``--opponent self`` all four seats (both
partnerships) are the same network; with ``--opponent heuristic`` (any agent spec) one partnership
is the learner (its side drawn per match) and the other is played inside the env.  The network
is :class:`sevenrocks_env.policy.PolicyNet`, wrapped as an RLModule whose illegal logits are set
to ``MASKED_LOGIT`` (probability exactly 0), so RLlib can only sample legal actions.  The trained
weights are written in this project's checkpoint format (``--export``): ``ckpt:PATH`` in the
arena, or :func:`sevenrocks_env.policy.load_policy`.  At the end the policy plays ``greedy`` and
``heuristic`` in the arena (duplicate deals, Wilson CIs).

The env is :class:`sevenrocks_env.rllib_env.SevenRocksMultiAgentEnv` (in the package, so Ray's
workers import it like any installed module).  Rewards: it gives every learner seat its team's
reward (``reward="win"``: R8 +-1; ``"points"``; ``"shaped"`` with ``points_scale``/``win_reward``,
the project trainer's reward; one definition in :mod:`sevenrocks_env.rewards`) on the step where
it happens, including rewards that arrive while the seat is not on turn (RLlib's episode keeps
them for the seat's next transition; those before the seat's first observation, such as the
opponents' opening points, the env holds back and sends with the seat's next output, so none is
lost; see docs/adapters.md), and the final reward of every seat when the match ends on any
seat's move.  ``skip_forced`` (default on) plays single-legal-action moves (a forced knock, or a
single fitting placement, R6) inside the env, so an env step is a real decision.  RLlib counts one env step
per seat decision (one seat acts at a time).
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
import time
from pathlib import Path

import numpy as np

try:  # Ray first: without it, say where it is (the main venv has no Ray, and may have no torch)
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModule
    from ray.rllib.core.rl_module.torch import TorchRLModule
except ImportError as missing:
    if __name__ != "__main__" or not (missing.name or "").startswith("ray"):
        raise
    print(f"rllib_ppo.py needs Ray RLlib ({missing.name} is not installed in {sys.executable}): "
          f"run it with .venv-rllib/bin/python (make install-rllib), or "
          f"pip install -e \".[rllib]\"", file=sys.stderr)
    sys.exit(2)

import torch  # noqa: E402  (after the Ray check above)

from sevenrocks_env import arguments
from sevenrocks_env.atomic_file import check_output_file
from sevenrocks_env.arena_cli import (add_evaluation_arguments, check_evaluation_arguments,
                                      report_evaluation)
from sevenrocks_env.agents import make_agent
from sevenrocks_env.env import AGENTS
from sevenrocks_env.policy import MASKED_LOGIT, MAX_HIDDEN_LAYERS, MAX_HIDDEN_WIDTH, PolicyNet
from sevenrocks_env.rewards import reward_weights
from sevenrocks_env.rllib_env import SevenRocksMultiAgentEnv

POLICY_ID = "shared"
#: Bounds of the options that size the run, refused as the command line is read (unbounded,
#: ``--num-cpus 10**9`` or ``--train-batch-size 10**12`` hung Ray or ran out of memory): CPUs of
#: a local Ray, envs per env runner (each steps its envs one after another), samples per
#: iteration (a sample's observation and mask alone are ~1.4 kB: a million is ~1.4 GB).
MAX_CPUS, MAX_ENVS_PER_RUNNER, MAX_TRAIN_BATCH = 256, 1024, 1_000_000
#: Env runners (one CPU each, on a cluster with --address) and passes over each batch.
MAX_ENV_RUNNERS, MAX_EPOCHS = 4096, 1000

if __name__ != "__main__":  # imported (tests, benchmarks): let Ray ship this module's classes by value
    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


class MaskedPolicyModule(TorchRLModule, ValueFunctionAPI):
    """:class:`~sevenrocks_env.policy.PolicyNet` as an RLModule; illegal actions get probability 0.

    ``model_config``: ``{"hidden_sizes": [256, 256]}``.  ``self.net`` is a plain PolicyNet, so
    exporting is a ``state_dict`` copy (:func:`export_policy`).  Built the way RLlib documents it:
    an ``RLModuleSpec(module_class=..., observation_space=..., action_space=..., model_config=...)``
    (:func:`build_config`), never ``RLModule(config=...)``.
    """

    def __init__(self, *args, **kwargs):
        _quiet_rllib_internal_deprecation()  # also when built alone, outside QuietMultiRLModule
        super().__init__(*args, **kwargs)

    def setup(self):
        # (only hidden_sizes: RLlib's fcnet_* keys do not apply, and PPO adds keys of its own,
        # vf_share_layers, so other keys cannot be refused)
        self.net = PolicyNet(self.model_config.get("hidden_sizes", [256, 256]))

    def _forward(self, batch, **kwargs):
        obs = batch[Columns.OBS]
        legal = obs["action_mask"] > 0
        features = self.net.trunk(obs["observations"])
        # the whole policy, its action-feature term included: the exported PolicyNet's logits
        logits, _ = self.net.heads(features, obs["observations"], legal)
        logits = torch.where(legal, logits, torch.full_like(logits, MASKED_LOGIT))
        return {Columns.ACTION_DIST_INPUTS: logits, Columns.EMBEDDINGS: features}

    def compute_values(self, batch, embeddings=None):
        if embeddings is None:
            embeddings = self.net.trunk(batch[Columns.OBS]["observations"])
        return self.net.value_head(embeddings).squeeze(-1)


class _DropRLModuleConfigNotice(logging.Filter):
    """Drops one message: RLlib's ``RLModule.__init__`` builds a deprecated ``RLModuleConfig``
    itself, so every RLModule -- RLlib's own default PPO module too -- logs "RLModule(config=
    [RLModuleConfig object]) has been deprecated" although no caller passes ``config``
    (ray-project/ray#51630, still so in Ray 2.60).  Every other message passes."""

    NOTICE = "RLModule(config=[RLModuleConfig object])"

    def filter(self, record: logging.LogRecord) -> bool:
        return self.NOTICE not in record.getMessage()


def _quiet_rllib_internal_deprecation() -> None:
    """Install the filter above in this process, once."""
    logger = logging.getLogger("ray._common.deprecation")
    if not any(type(f).__name__ == _DropRLModuleConfigNotice.__name__ for f in logger.filters):
        logger.addFilter(_DropRLModuleConfigNotice())


class QuietMultiRLModule(MultiRLModule):
    """RLlib's ``MultiRLModule``, installing the filter before its own ``RLModule.__init__`` logs
    the notice: every process that builds the modules (driver, env runners, learners) builds this
    container first."""

    def __init__(self, *args, **kwargs):
        _quiet_rllib_internal_deprecation()
        super().__init__(*args, **kwargs)


def build_config(opponent: str = "self", hidden_sizes=(256, 256), num_env_runners: int = 1,
                 num_envs_per_env_runner: int = 1, train_batch_size: int = 4000,
                 minibatch_size: int = 500, num_epochs: int = 4, lr: float = 2.5e-4,
                 entropy_coeff: float = 0.01, gamma: float = 0.99, lambda_: float = 0.95,
                 reward: str = "win", seed: int = 1, points_scale: float | None = None,
                 win_reward: float | None = None):
    """A ``PPOConfig`` (new API stack) training one shared, masked policy on Seven Rocks."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    env_config = {"opponent": opponent, "reward": reward, "seed": seed,
                  "points_scale": points_scale, "win_reward": win_reward}
    spaces = SevenRocksMultiAgentEnv(env_config)  # fails here, clearly, on a bad env_config
    module = RLModuleSpec(module_class=MaskedPolicyModule,
                          observation_space=spaces.observation_spaces[AGENTS[0]],
                          action_space=spaces.action_spaces[AGENTS[0]],
                          model_config={"hidden_sizes": list(hidden_sizes)})
    return (
        PPOConfig()
        .api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)
        # RLlib's own pre-check (check_multiagent_environments) runs on every env runner's env
        .environment(SevenRocksMultiAgentEnv, env_config=env_config)
        .multi_agent(policies={POLICY_ID}, policy_mapping_fn=_to_shared_policy,
                     policies_to_train=[POLICY_ID])
        .rl_module(rl_module_spec=MultiRLModuleSpec(multi_rl_module_class=QuietMultiRLModule,
                                                    rl_module_specs={POLICY_ID: module}))
        .env_runners(num_env_runners=num_env_runners, num_envs_per_env_runner=num_envs_per_env_runner,
                     num_cpus_per_env_runner=1)
        .learners(num_learners=0)
        .training(train_batch_size_per_learner=train_batch_size, minibatch_size=minibatch_size,
                  num_epochs=num_epochs, lr=lr, entropy_coeff=entropy_coeff, gamma=gamma,
                  lambda_=lambda_, vf_loss_coeff=0.5, clip_param=0.2, grad_clip=0.5)
        .debugging(seed=seed)
    )


def _to_shared_policy(agent_id, episode, **kwargs):
    return POLICY_ID


def policy_net(algo, policy_id: str = POLICY_ID) -> PolicyNet:
    """The learner's current policy ``policy_id`` (a :class:`MaskedPolicyModule`) as a plain
    :class:`PolicyNet` (works for local and remote learners: the weights come from the learner
    group).  ``ValueError`` for another module id or another module class."""
    modules = algo.learner_group.get_weights()
    if policy_id not in modules:
        raise ValueError(f"export: the algorithm has no RLModule {policy_id!r} (it has "
                         f"{', '.join(repr(str(m)) for m in sorted(modules, key=str)[:5])}): "
                         "pass policy_id=")
    weights = modules[policy_id]
    state = {key[len("net."):]: torch.as_tensor(np.asarray(value))
             for key, value in weights.items() if key.startswith("net.")}
    if not state:  # RLlib's ActionMaskingTorchRLModule, say: its own network, not a PolicyNet
        raise ValueError(f"export: RLModule {policy_id!r} holds no PolicyNet (no 'net.' weights): "
                         "only MaskedPolicyModule's policies export to this project's format")
    hidden = [state[key].shape[0] for key in sorted(
        (k for k in state if k.startswith("trunk.") and k.endswith(".weight")),
        key=lambda k: int(k.split(".")[1]))]
    net = PolicyNet(hidden)
    net.load_state_dict(state)
    return net.eval()


def export_policy(algo, path, global_step: int = 0, policy_id: str = POLICY_ID) -> Path:
    """Write the policy ``policy_id`` (a :class:`MaskedPolicyModule`) in this project's
    checkpoint format (``ckpt:PATH`` agent spec)."""
    from training.checkpoint import policy_entries, save_checkpoint

    data = policy_entries(policy_net(algo, policy_id), global_step)
    data["trainer"] = "rllib-ppo"
    return save_checkpoint(path, data)


def env_steps(result: dict) -> int:
    """Env steps sampled so far (the budget unit), from an RLlib result dict."""
    for source in (result, result.get("env_runners", {})):
        value = source.get("num_env_steps_sampled_lifetime")
        if value is not None:
            return int(value)
    raise KeyError("num_env_steps_sampled_lifetime not in the RLlib result")


def train(algo, env_steps_budget: int, max_iterations: int | None = None, log=print) -> tuple:
    """Train a built algorithm (``build_config(...).build_algo()``) until ``env_steps_budget``
    env steps; returns ``(steps, seconds)``."""
    started, steps, iteration = time.perf_counter(), 0, 0
    while steps < env_steps_budget and (max_iterations is None or iteration < max_iterations):
        result = algo.train()
        iteration += 1
        steps = env_steps(result)
        returns = result.get("env_runners", {}).get("agent_episode_returns_mean", {})
        shown = ", ".join(f"{agent} {float(value):+.2f}" for agent, value in sorted(returns.items()))
        log(f"iteration {iteration}: {steps} env steps, {time.perf_counter() - started:.0f} s, "
            f"mean return per seat: {shown or 'no episode finished yet'}")
    return steps, time.perf_counter() - started


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--address", default=None,
                        help="existing Ray cluster (e.g. 'auto' or HEAD_IP:6379); default: local Ray")
    parser.add_argument("--num-cpus", type=arguments.int_in(1, MAX_CPUS), default=None,
                        help=f"CPUs for a local Ray instance (1..{MAX_CPUS}; default: the "
                             f"machine's)")
    parser.add_argument("--env-steps", type=arguments.count, default=200_000,
                        help="env-step budget")
    parser.add_argument("--max-iterations", type=arguments.count, default=None)
    parser.add_argument("--opponent", default="self", help="'self' or an agent spec (e.g. heuristic)")
    parser.add_argument("--num-env-runners", type=arguments.int_in(0, MAX_ENV_RUNNERS), default=1,
                        help=f"0..{MAX_ENV_RUNNERS} (0: sample in the driver)")
    parser.add_argument("--num-envs-per-env-runner", default=1,
                        type=arguments.int_in(1, MAX_ENVS_PER_RUNNER),
                        help=f"1..{MAX_ENVS_PER_RUNNER}")
    parser.add_argument("--train-batch-size", type=arguments.int_in(1, MAX_TRAIN_BATCH),
                        default=4000, help=f"env steps per iteration, 1..{MAX_TRAIN_BATCH:,}")
    parser.add_argument("--minibatch-size", type=arguments.count, default=500)
    parser.add_argument("--num-epochs", type=arguments.int_in(1, MAX_EPOCHS), default=4,
                        help=f"passes over each batch, 1..{MAX_EPOCHS}")
    parser.add_argument("--lr", type=arguments.positive_real, default=2.5e-4)
    parser.add_argument("--reward", default="win", choices=["win", "points", "shaped"],
                        help="env reward: R8 win/loss, the score margin / 100 (dense), or "
                             "shaped = points_scale * margin +- win_reward (the trainer's)")
    parser.add_argument("--points-scale", type=arguments.non_negative_real, default=None,
                        help="reward=shaped: reward per point of margin (default 0.01)")
    parser.add_argument("--win-reward", type=arguments.non_negative_real, default=None,
                        help="reward=shaped: reward for winning the match (default 1.0)")
    parser.add_argument("--hidden", type=arguments.int_in(1, MAX_HIDDEN_WIDTH), nargs="+",
                        default=[256, 256], help=f"hidden layer widths (at most "
                                                 f"{MAX_HIDDEN_LAYERS} of 1..{MAX_HIDDEN_WIDTH})")
    parser.add_argument("--seed", type=arguments.training_seed, default=1)
    parser.add_argument("--export", default="checkpoints/rllib/policy.pt",
                        help="where to write the policy (project checkpoint format)")
    add_evaluation_arguments(parser)
    return parser


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """Refuse ``--address HOST:PORT`` (or ``ray://HOST:PORT``) at once when nothing accepts a
    connection there: Ray itself retries for minutes before giving up.  ``auto`` and ``local``
    are left to Ray (it finds the running cluster, or says there is none)."""
    if address in ("auto", "local"):
        return
    host, colon, port = address.removeprefix("ray://").rpartition(":")
    host = host.removeprefix("[").removesuffix("]")  # [::1]:6379
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--address {address!r}: expected 'auto', HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as error:
        raise ValueError(f"--address {address}: nothing accepts a connection there "
                         f"({error.strerror or error}); is the head node started "
                         f"(`ray start --head`)?") from None


def local_cpus() -> int:
    """The CPUs a local Ray counts: its own count (a container's CPU quota included), else the
    machine's."""
    try:
        from ray._private.utils import get_num_cpus  # not public API: may move
        return int(get_num_cpus())
    except (ImportError, AttributeError, ValueError, TypeError):
        return os.cpu_count() or 1


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        check_evaluation_arguments(args, args.export)
        check_output_file(args.export)  # a folder or /proc: refused now, not after training
        if args.opponent != "self":
            make_agent(args.opponent)
        if args.train_batch_size < args.minibatch_size:  # each number alone: its argparse type
            raise ValueError("need --train-batch-size >= --minibatch-size")
        if args.address and args.num_cpus:
            raise ValueError("--num-cpus sizes a local Ray; with --address the cluster's CPUs "
                             "count: drop one of them")
        if args.address:
            check_reachable(args.address)
        cpus = None if args.address else args.num_cpus or local_cpus()  # a cluster: Ray's count
        if cpus is not None and args.num_env_runners > cpus:  # Ray would wait for them forever
            raise ValueError(f"--num-env-runners {args.num_env_runners} needs a CPU each; this "
                             f"local Ray has {cpus} (--num-cpus): use at most {cpus}")
        reward_weights(args.reward, args.points_scale, args.win_reward)
        if len(args.hidden) > MAX_HIDDEN_LAYERS:
            raise ValueError(f"--hidden: at most {MAX_HIDDEN_LAYERS} layers, got {len(args.hidden)}")
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    import ray

    torch.set_num_threads(1)
    if args.address:
        try:
            ray.init(address=args.address)
        except ConnectionError as error:  # no cluster there ('auto' with none running)
            print(f"error: --address {args.address}: {str(error)[:300]}", file=sys.stderr)
            return 1
    else:
        ray.init(num_cpus=args.num_cpus, include_dashboard=False)
    config = build_config(args.opponent, args.hidden, args.num_env_runners,
                          args.num_envs_per_env_runner, args.train_batch_size, args.minibatch_size,
                          args.num_epochs, args.lr, reward=args.reward, seed=args.seed,
                          points_scale=args.points_scale, win_reward=args.win_reward)
    algo = config.build_algo()
    steps, seconds = train(algo, args.env_steps, args.max_iterations)
    path = export_policy(algo, args.export, steps)
    print(f"exported the policy to {path} (agent spec ckpt:{path})")
    algo.stop()
    ray.shutdown()
    results = {"env_steps": steps, "train_seconds": seconds, "checkpoint": str(path)}
    report_evaluation(f"ckpt:{path}", "RLlib PPO", args, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
