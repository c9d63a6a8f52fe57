"""Would a distilled student learn more of its teacher's choices seeing the round's order of play?

    .venv/bin/python benchmarks/order_of_play_probe.py --init checkpoints/candidates/v3.pt \\
        --labels checkpoints/distilled/r5_61.labels.npz checkpoints/distilled/r5_62.labels.npz

Observation version 1 says who placed each tile this round (``played_by``) but not when; the
search with inference reads the whole order (it weighs its worlds by how likely each past play
was).  This probe answers the question without a new observation version: it plays each
labels file's matches again (``training.distill_collect.labelled_turns``; ``--init`` must be
the collections' student), takes each labelled decision's round history, and trains three
students from ``--init`` on the same labels, the same way (``training.distill.train_student``,
soft targets at ``--temperature``), whose inputs differ:

| student | inputs beyond the observation |
|---|---|
| none | -- (the distillation of today) |
| recency | 28: 1 for the tile placed last this round, 27/28 for the one before, ..., 0 unplaced |
| recency + last 8 | and the round's last 8 actions, knocks included, one-hot (8 x 113) |

The extra inputs enter the first layer through weights that start at zero, so every student
starts as ``--init``.  The table gives each one's agreement with the teacher on the held-out
matches, where the init chose otherwise and where it agreed.  Nothing is saved; no arena game is
played.  Results: docs/experiments.md, "How noisy is the teacher?".
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import torch
from pydantic import ValidationError
from torch import nn

from sevenrocks_env import arguments
from sevenrocks_env.observation import OBS_SIZE
from sevenrocks_env.policy import load_policy
from sevenrocks_env.tiles import KNOCK, NUM_ACTIONS, NUM_TILES
from training import distill
from training.config import first_problem
from training.distill_args import Args
from training.distill_collect import labelled_turns
from training.distill_labels import join_labels_files, load_labels

#: Actions of the round's end given one-hot.
LAST = 8
#: (name, how many of the extra inputs it reads).
STUDENTS = (("none", 0), ("recency", NUM_TILES),
            (f"recency + last {LAST}", NUM_TILES + LAST * NUM_ACTIONS))


def order_of_play(played: list[int]) -> np.ndarray:
    """The extra inputs of one decision from its round's actions so far, in order."""
    recency = np.zeros(NUM_TILES, np.float32)
    tiles = [action // 4 for action in played if action != KNOCK]
    for placed, tile in enumerate(tiles):
        recency[tile] = 1 - (len(tiles) - 1 - placed) / NUM_TILES
    last = np.zeros((LAST, NUM_ACTIONS), np.float32)
    for back, action in enumerate(reversed(played[-LAST:])):
        last[back, action] = 1
    return np.concatenate([recency, last.ravel()])


@torch.inference_mode()
def history_inputs(labels: dict, student) -> np.ndarray:
    """:func:`order_of_play` of every labelled decision of one collection's file."""
    out = np.zeros((len(labels["action"]), STUDENTS[-1][1]), np.float32)
    env_of = labels["match"] >> 32  # (a labels file holds at least one label)
    envs = range(int(env_of.min()), int(env_of.max()) + 1)  # (a part file's span, say)
    for turn, envs_now, label_rows in labelled_turns(labels, student, envs, history=True):
        for env, row in zip(envs_now.tolist(), label_rows):
            out[row] = order_of_play(turn.history.actions[env, :int(turn.history.length[env])]
                                     .tolist())
    return out


class WiderFirstLayer(nn.Module):
    """A policy's trunk with ``extra`` more inputs after the observation, their weights at 0."""

    def __init__(self, trunk: nn.Sequential, extra: int):
        super().__init__()
        self.trunk = trunk
        self.extra = nn.Linear(extra, trunk[0].out_features, bias=False)
        nn.init.zeros_(self.extra.weight)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        first = self.trunk[0](inputs[:, :OBS_SIZE]) + self.extra(inputs[:, OBS_SIZE:])
        return self.trunk[1:](first)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", nargs="+", required=True,
                        help="labels files of collections whose student is --init")
    parser.add_argument("--init", required=True, help="the collections' student")
    parser.add_argument("--temperature", type=arguments.non_negative_real, default=5.0,
                        help="soft targets' temperature in points (0: the teacher's action)")
    parser.add_argument("--epochs", type=arguments.int_in(1, 100), default=6)
    parser.add_argument("--threads", type=arguments.threads, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    return arguments.one_line_errors(lambda: run(args))


def run(args) -> None:
    """Play the matches again, train the three students and print the table."""
    try:
        settings = Args(labels=args.labels, temperature=args.temperature, epochs=args.epochs)
    except ValidationError as error:  # (pydantic's message: several lines)
        key, _, message = first_problem(error)
        raise ValueError(f"--{key.replace('_', '-')}: {message}") from None
    labels, teacher = join_labels_files(settings.labels, need_values=args.temperature > 0)
    extra, init = [], load_policy(args.init).model.eval()
    for path in settings.labels:  # (join_labels_files keeps the files' order)
        one, _ = load_labels(path)
        if one.get("seed") is None or one.get("match") is None:
            raise ValueError(f"{path} has no seed or match ids: its matches cannot be "
                             "played again")
        extra.append(history_inputs(one, init))
    extra = np.concatenate(extra)
    print(f"{len(labels['action']):,} labels of teacher {teacher}")
    print("| student | extra inputs | held out | where the init chose otherwise | "
          "where it agreed |\n|---|---:|---:|---:|---:|")
    for name, width in STUDENTS:
        student = load_policy(args.init).model
        if width:
            student.trunk = WiderFirstLayer(student.trunk, width)
        result = distill.train_student(
            student, dict(labels, observation=np.concatenate(
                [labels["observation"], extra[:, :width]], 1)), settings, log=lambda *_: None)
        print(f"| {name} | {width} | {result['holdout_agreement']:.3f} | "
              f"{result['holdout_agreement_where_init_differed']:.3f} | "
              f"{result['holdout_agreement_where_init_agreed']:.3f} |", flush=True)


if __name__ == "__main__":  # a closed stdout, an ASCII terminal: as the sevenrocks commands
    from sevenrocks_env.cli import guarded
    sys.exit(guarded("benchmarks/order_of_play_probe.py", main))
