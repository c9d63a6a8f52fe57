"""Which of a teacher's choices a distilled student learned, by how sure the teacher was.

    .venv/bin/python benchmarks/distill_gaps.py --labels checkpoints/distilled/r5_62.labels.npz \\
        --init checkpoints/candidates/v3.pt --students checkpoints/distilled/r5_61_A.pt

For labels a student was *not* trained on (another collection's file), the decisions where the
init policy's most probable action differs from the teacher's are split by the teacher's
preference for its own action over the init's choice (its values, in points: the mean rollout
margin plus the prior term, ``training.distill_labels``). For the init and each student the
table gives the share of the teacher's choices it plays in each bucket, and the share of the
decisions where the init agreed that it still agrees on. A student that learned the teacher's
confident deviations scores higher in the high-preference buckets; one that only moved near-ties
scores alike everywhere (docs/experiments.md, "A fifth round"). No arena game is played.
"""

from __future__ import annotations

import argparse
import sys

import torch

from sevenrocks_env import arguments
from sevenrocks_env.policy import load_policy
from training.distill import buckets, modes_on, preference, share
from training.distill_labels import join_labels_files

def table(labels: dict, init: str, students: list[str]) -> list[str]:
    """The markdown table's lines."""
    obs = torch.from_numpy(labels["observation"])
    mask = torch.from_numpy(labels["action_mask"])
    action = torch.from_numpy(labels["action"])
    values = torch.from_numpy(labels["values"])
    init_modes = modes_on(load_policy(init).model, obs, mask)
    differs = init_modes != action
    rows = buckets(preference(values, action, init_modes), differs)
    lines = ["| policy | " + " | ".join(f"{name} ({int(r.sum()):,})" for name, r in rows.items())
             + " |", "|---|" + "---:|" * len(rows)]
    for path in [init, *students]:
        agrees = (init_modes if path == init else
                  modes_on(load_policy(path).model, obs, mask)) == action
        lines.append(f"| {path} | " + " | ".join(f"{share(agrees[r]):.3f}" for r in rows.values())
                     + " |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", nargs="+", required=True,
                        help="labels files the students were not trained on")
    parser.add_argument("--init", required=True, help="the policy the students started from")
    parser.add_argument("--students", nargs="*", default=[], help="distilled checkpoints")
    parser.add_argument("--threads", type=arguments.threads, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    def work():  # a bad labels file or checkpoint: one line of error
        labels, teacher = join_labels_files(args.labels, need_values=True)
        print(f"{len(labels['action']):,} labels of teacher {teacher}")
        print("\n".join(table(labels, args.init, args.students)))
    return arguments.one_line_errors(work)


if __name__ == "__main__":  # a closed stdout, an ASCII terminal: as the sevenrocks commands
    from sevenrocks_env.cli import guarded
    sys.exit(guarded("benchmarks/distill_gaps.py", main))
