"""OpenSpiel's PyTorch DQN on Seven Rocks through ``rl_environment``: all four seats learn.

    pip install -e ".[openspiel,train]"   # OpenSpiel's PyTorch DQN needs torch as well
    python examples/openspiel_dqn.py --steps 98304 --seed 1 --save checkpoints/openspiel/dqn.pt

**Game and reward.**  The learner plays ``python_sevenrocks`` with ``rounds=1``: one round per
episode, whose returns are the partnership's round margin in points (placements R5, deductions
R7), scaled here by 1/100.  Summed over a match, these round margins are the final score margin,
so this is the benchmark's reward (score margin / 100) cut into one-round episodes.  The
whole-match game's returns (+1/-1 at R8's target) are not used: at this budget a fresh policy
never wins a match, so they carry no signal.  One honest difference: every one-round episode
starts at 0:0, so the network never sees the observation's score features move during training
(the weights on them keep their initial values), while in the arena it plays whole matches where
the scores grow.

**Input.**  ``rl_environment.Environment(..., observation_type=OBSERVATION)``: the Q-network
reads ``observation_tensor``, which is the env's 238-float observation
(:func:`sevenrocks_env.observation.encode`), the same vector an arena agent gets.

**Self-play, one shared network.**  OpenSpiel's DQN is a single-player learner, so there is one
``dqn.DQN`` per seat (each keeps its own previous step, as in OpenSpiel's examples), but the four
share one Q-network, target network, optimiser and replay buffer.  The observation is
seat-relative, so one network serves every seat and learns from four times the data; partners'
transitions are the same kind of data as one's own.  DQN rather than NFSP: NFSP's guarantees
(average policy -> Nash equilibrium) are for two-player zero-sum games, and this is a 4-player
partnership game; its average network is also trained by supervision on the best response's
moves, so at 98,304 decisions it lags the DQN inside it.  DQN is the plainer baseline.

**Budget.**  ``--steps`` counts learner decisions with more than one legal action.  Forced moves
(a single legal action, e.g. an R6 knock) are played without asking the agents and are not
counted, as in the benchmark's other rows.  The counted decisions are each seat's DQN steps, so
the replay buffer holds transitions from one real decision of a seat to its next one.

The saved file (``--save``) holds the Q-network's weights only; :func:`load_agent` turns it into
an arena agent (argmax of the legal Q-values), loading it with ``weights_only=True`` and checking
every shape, so a file from elsewhere cannot run code or size work.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from sevenrocks_env import arguments
from sevenrocks_env.atomic_file import check_output_file
from sevenrocks_env.checks import shown
from sevenrocks_env.arena_cli import (add_evaluation_arguments, check_evaluation_arguments,
                                      report_evaluation)
from sevenrocks_env.observation import OBS_SIZE
from sevenrocks_env.policy_file import CheckpointError, load_torch_file
from sevenrocks_env.tiles import NUM_ACTIONS, NUM_SEATS

FORMAT = "sevenrocks-openspiel-dqn/1"
HIDDEN = (256, 256)
MAX_LAYERS, MAX_WIDTH = 8, 4096
MAX_FILE_BYTES = 256 * 2 ** 20
REWARD_SCALE = 0.01  # round margin in points -> the benchmark's margin / 100


# -- the saved network as an arena agent ------------------------------------------------------

class QNetwork(nn.Module):
    """The layout of OpenSpiel's ``dqn.MLP`` (same state-dict keys), built without its global
    reseeding: ``model.i.0`` are the hidden Linear+ReLU blocks, the last ``model.n`` the output."""

    def __init__(self, hidden: tuple[int, ...]):
        super().__init__()
        blocks, width = [], OBS_SIZE
        for size in hidden:
            blocks.append(nn.Sequential(nn.Linear(width, size), nn.ReLU()))
            width = size
        blocks.append(nn.Linear(width, NUM_ACTIONS))
        self.model = nn.Sequential(*blocks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)


class DQNAgent:
    """An arena agent: the legal action with the largest Q-value (deterministic)."""

    def __init__(self, network: QNetwork, name: str = "openspiel-dqn"):
        self.network = network.eval()
        self.name = name

    def seed(self, seed: int | None) -> None:
        """Greedy in the Q-values: nothing to seed."""

    @torch.no_grad()
    def act(self, observation, action_mask) -> int:
        observation = np.asarray(observation, np.float32)
        mask = np.asarray(action_mask, bool)
        if observation.shape != (OBS_SIZE,) or mask.shape != (NUM_ACTIONS,):
            raise ValueError(f"expected an observation of shape ({OBS_SIZE},) and a mask of shape "
                             f"({NUM_ACTIONS},), got {observation.shape} and {mask.shape}")
        legal = np.flatnonzero(mask)
        if legal.size == 0:
            raise ValueError("the action mask has no legal action")
        if legal.size == 1:
            return int(legal[0])
        q = self.network(torch.from_numpy(observation).unsqueeze(0))[0].numpy()
        return int(legal[np.argmax(q[legal])])


def load_agent(path, name: str = "openspiel-dqn") -> DQNAgent:
    """The agent of a file written by :func:`save`; ``ValueError`` naming what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ValueError(f"{path}: {path.stat().st_size} bytes, more than a DQN file may hold "
                         f"({MAX_FILE_BYTES})")
    try:  # read as the project's checkpoints are: the archive and its pickle checked first
        data = load_torch_file(path, MAX_FILE_BYTES)
    except CheckpointError as error:  # a truncated, foreign, bomb or pickled-object file
        raise ValueError(f"{path}: not a torch weights file ({str(error)[:300]})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path}: not an OpenSpiel DQN file of this project "
                         f"(expected format {FORMAT!r})")
    hidden = data.get("hidden")
    if (not isinstance(hidden, (list, tuple)) or not 1 <= len(hidden) <= MAX_LAYERS
            or not all(type(h) is int and 1 <= h <= MAX_WIDTH for h in hidden)):
        raise ValueError(f"{path}: 'hidden' must be 1 to {MAX_LAYERS} layer widths in "
                         f"[1, {MAX_WIDTH}], got {shown(hidden)}")
    if type(data.get("obs_size")) is not int or type(data.get("num_actions")) is not int or \
            data["obs_size"] != OBS_SIZE or data["num_actions"] != NUM_ACTIONS:  # (a tensor: no ==)
        raise ValueError(f"{path}: made for observations of {shown(data.get('obs_size'))} floats"
                         f" and {shown(data.get('num_actions'))} actions, this game has "
                         f"{OBS_SIZE} and {NUM_ACTIONS}")
    weights = data.get("q_network")
    network = QNetwork(tuple(hidden))
    expected = network.state_dict()
    if not isinstance(weights, dict) or set(weights) != set(expected):
        odd = (sorted(map(shown, set(weights) ^ set(expected)))[:3] if isinstance(weights, dict)
               else [f"a {type(weights).__name__}"])  # (keys of any type, quoted short)
        raise ValueError(f"{path}: 'q_network' must hold the tensors {sorted(expected)}; "
                         f"missing, unexpected or not a dict: {', '.join(odd)}")
    for key, tensor in expected.items():
        value = weights[key]
        if not isinstance(value, torch.Tensor) or value.shape != tensor.shape:
            shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
            raise ValueError(f"{path}: {key} must have shape {tuple(tensor.shape)}, got {shape}")
        if value.layout != torch.strided or value.dtype != torch.float32:
            raise ValueError(f"{path}: {key} must be a dense float32 tensor, as save writes it "
                             f"(float64's 1e300 would load as inf), got {value.dtype} "
                             f"({str(value.layout)[:40]})")
        if not torch.isfinite(value).all():
            raise ValueError(f"{path}: {key} must hold finite values")
    network.load_state_dict(weights)
    _check_q_values(network, path)
    return DQNAgent(network, name)


def _check_q_values(network: QNetwork, path) -> None:
    """``ValueError`` when the network's Q-values of legal actions at the policy loader's probe
    positions are not finite: finite weights can overflow (3e38 each), and the agent would
    then play its first legal action at every decision without a word."""
    from sevenrocks_env.policy import probe_positions
    observations, masks = probe_positions()
    with torch.inference_mode():
        q_values = network(observations)
    if not bool(torch.isfinite(q_values[masks]).all()):
        raise ValueError(f"{path}: the network's Q-values are not finite (its weights overflow)")


def save(network: nn.Module, path, hidden, env_steps: int, seed: int) -> None:
    """Write the Q-network's weights (plain tensors, ints and strings only)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"format": FORMAT, "hidden": list(hidden), "obs_size": OBS_SIZE,
                "num_actions": NUM_ACTIONS, "env_steps": int(env_steps), "seed": int(seed),
                "q_network": {k: v.detach().cpu().clone()
                              for k, v in network.state_dict().items()}},
               path)


# -- training ---------------------------------------------------------------------------------

def make_environment(seed: int):
    """``rl_environment`` over the one-round game, the observation tensor as ``info_state``."""
    import pyspiel
    from open_spiel.python import rl_environment

    import sevenrocks_env.openspiel as seven_rocks_openspiel

    game = pyspiel.load_game(seven_rocks_openspiel.GAME_NAME, {"rounds": 1})
    return rl_environment.Environment(
        game, seed=seed, observation_type=rl_environment.ObservationType.OBSERVATION)


def _shared_buffer_class(dqn):
    """A replay-buffer class whose ``init`` makes one buffer and then hands out that same one,
    so the four seats' ``dqn.DQN`` objects append to and sample from a single buffer."""
    shared = {}

    class SharedReplayBuffer(dqn.ReplayBuffer):
        @classmethod
        def init(cls, capacity, experience):
            if "buffer" not in shared:
                shared["buffer"] = super().init(capacity, experience)
            return shared["buffer"]

    return SharedReplayBuffer


def make_learners(steps: int, seed: int, hidden=HIDDEN, learning_rate: float = 2.5e-4,
                  batch_size: int = 128, buffer: int = 50_000, learn_every: int = 4,
                  target_every: int = 250, gamma: float = 0.99, epsilon_end: float = 0.05,
                  min_buffer: int = 1000):
    """Four ``dqn.DQN`` (one per seat) sharing one Q-network, target, optimiser and buffer.

    Per-seat counts: each seat takes about ``steps / 4`` decisions, so it learns every
    ``learn_every`` of its own steps (one update per ``learn_every`` decisions overall, as four
    seats learn), copies the target every ``target_every`` of its own steps, and decays epsilon
    linearly from 1 to ``epsilon_end`` over the first half of its steps (a seat's step count
    also includes the one step per round in which it sees the round's end).  Learning starts once
    the shared buffer holds ``min_buffer`` transitions."""
    from open_spiel.python.pytorch import dqn

    if learn_every < 2:  # a seat's first learn() must come after its first transition
        raise ValueError("learn_every must be >= 2")
    buffer_class = _shared_buffer_class(dqn)
    learners = [dqn.DQN(player_id=seat, state_representation_size=OBS_SIZE,
                        num_actions=NUM_ACTIONS, hidden_layers_sizes=list(hidden),
                        batch_size=batch_size, replay_buffer_class=buffer_class,
                        replay_buffer_capacity=buffer, learning_rate=learning_rate,
                        update_target_network_every=target_every,
                        learn_every=learn_every, discount_factor=gamma,
                        min_buffer_size_to_learn=min_buffer, epsilon_start=1.0,
                        epsilon_end=epsilon_end,
                        epsilon_decay_duration=max(1, steps // (2 * NUM_SEATS)),
                        epsilon_decay_schedule_str="linear", optimizer_str="adam",
                        loss_str="huber", seed=(seed + seat) % 2**32)  # np.random.seed's range
                for seat in range(NUM_SEATS)]
    first = learners[0]
    for learner in learners[1:]:
        learner._q_network = first._q_network
        learner._target_q_network = first._target_q_network
        learner._optimizer = first._optimizer
    return learners


def _scaled(time_step):
    """The time step with rewards in the benchmark's unit (points / 100)."""
    if time_step.rewards is None:
        return time_step
    return time_step._replace(rewards=[r * REWARD_SCALE for r in time_step.rewards])


def train(steps: int = 98_304, seed: int = 1, progress: bool = False, **hyper):
    """Self-play DQN for ``steps`` counted decisions; ``(q_network, decisions, seconds)``."""
    torch.set_num_threads(1)
    env = make_environment(seed)
    learners = make_learners(steps, seed, **hyper)
    started = time.perf_counter()
    decisions = rounds = 0
    margins: list[float] = []
    time_step = env.reset()
    while decisions < steps:
        if time_step.last():
            for learner in learners:  # every seat sees the round's end (its last transition)
                learner.step(_scaled(time_step))
            margins.append(time_step.rewards[0])
            rounds += 1
            if progress and rounds % 500 == 0:
                print(f"{decisions:,} decisions, {rounds:,} rounds, mean round margin of seats "
                      f"0+2 over the last 500 {np.mean(margins[-500:]):+.1f}, "
                      f"loss {learners[0].loss}", flush=True)
            time_step = env.reset()
            continue
        seat = time_step.observations["current_player"]
        legal = time_step.observations["legal_actions"][seat]
        if len(legal) == 1:  # a forced move: played for the seat, not a decision
            time_step = env.step([legal[0]])
            continue
        output = learners[seat].step(_scaled(time_step))
        decisions += 1
        time_step = env.step([output.action])
    return learners[0]._q_network, decisions, time.perf_counter() - started


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=arguments.count, default=98_304,
                        help="learner decisions with more than one legal action")
    parser.add_argument("--seed", type=arguments.training_seed, default=1)
    parser.add_argument("--save", default="checkpoints/openspiel/dqn.pt")
    parser.add_argument("--progress", action="store_true", help="print the mean round margin")
    add_evaluation_arguments(parser)
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        check_evaluation_arguments(args, args.save)
        check_output_file(args.save)  # a folder or /proc: refused now, not after training
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        from open_spiel.python.pytorch import dqn  # noqa: F401  (needs dm-tree too)
    except ImportError:
        print("error: needs open-spiel and dm-tree (pip install open-spiel dm-tree, or the "
              "[openspiel] extra)", file=sys.stderr)
        return 2
    network, decisions, seconds = train(args.steps, args.seed, progress=args.progress)
    save(network, args.save, HIDDEN, decisions, args.seed)
    print(f"{decisions:,} decisions in {seconds:.1f} s; saved {args.save}")
    results = {"env_steps": decisions, "train_seconds": seconds, "model": str(args.save)}
    report_evaluation(load_agent(args.save), "OpenSpiel DQN", args, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
