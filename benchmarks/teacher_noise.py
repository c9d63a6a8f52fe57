"""How much of a distillation teacher's choice is the noise of its sampled worlds.

    .venv/bin/python benchmarks/teacher_noise.py --labels checkpoints/distilled/r5_62.labels.npz \\
        --init checkpoints/candidates/v3.pt --envs 32 \\
        --teacher "search:policy=checkpoints/candidates/v3.pt,inference=0.5" \\
        --students checkpoints/distilled/r5_61_A.pt

A collection's matches depend on its student, its seed and each env's index alone
(``training.distill_collect.student_games``), so they can be played again.  This plays the games
of ``--envs`` envs (from ``--first-env``) of the collection that made ``--labels`` (``--init``:
its student; every observation is checked against the file's) and labels each of their labelled
decisions a second time with the same teacher, its worlds drawn from another seed
(``--same-worlds``: the collection's own, which give the file's labels back -- up to the last
bits of a network's outputs, which may differ with the batch: labelled again in other spans of
envs than the collection's, a near-tie could turn).  The first table says how often the
second labelling repeats the first one's action, where the init policy agreed with the first
and, split by the first's preference for its action over the init's (points, as
``benchmarks/distill_gaps.py`` splits them), where it did not.  The second gives, for the init
and each ``--students`` policy (trained on other labels), the first labelling's actions it plays
where both labellings chose the same action otherwise than the init, and where only the first
did.  A student can only learn what the teacher repeats; docs/experiments.md, "How noisy is the
teacher?".  No arena game is played.  ``--out`` also saves those decisions as a labels file
whose values are the mean of both labellings: a teacher with less noise, for
``training.distill --labels`` (spans of the envs labelled by several processes join there).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch

from sevenrocks_env import arguments
from sevenrocks_env.agents.layout import best_action, legal_from_mask
from sevenrocks_env.policy import load_policy
from sevenrocks_env.public_round import reads_history
from training.distill import buckets, modes_on, preference, share
from training.distill_collect import (MAX_ENVS, TEACHER_SALT, labelled_turns, make_teacher,
                                      pinned_teacher, teacher_labels)
from training.distill_labels import is_teacher_text, load_labels, save_labels

#: The second labelling's worlds: ``(seed, AGAIN_SALT, step, env)``.
AGAIN_SALT = 0x5EC0
#: What ``--out``'s file adds to the teacher it records.
MEAN = "(mean of 2 labellings)"


@torch.inference_mode()
def label_again(labels: dict, student, teacher, envs: range, salt: int, log=print) -> dict:
    """The labelled decisions of the collection's envs ``envs``, labelled again: ``{"index":
    rows of labels, "action": int64, "values": float32 [n, 113]}``."""
    env_of = labels["match"] >> 32
    total = int(((env_of >= envs.start) & (env_of < envs.stop)).sum())
    if not total:
        raise ValueError(f"the labels hold no decision of envs {envs.start} to {envs.stop - 1}")
    index, actions, values = [], [], []
    started = time.perf_counter()
    for turn, envs_now, label_rows in labelled_turns(labels, student, envs,
                                                     reads_history(teacher)):
        table, teachers_actions = teacher_labels(teacher, int(labels["seed"]), turn, envs_now,
                                                 salt)
        index += label_rows
        actions += teachers_actions
        values.append(table)
        if len(index) // 500 != (len(index) - len(label_rows)) // 500:
            log(f"labelled again: {len(index):,}/{total:,} "
                f"({len(index) / (time.perf_counter() - started):.1f}/s)")
    return {"index": np.array(index, np.int64), "action": np.array(actions, np.int64),
            "values": np.concatenate(values)}


def mean_labels(labels: dict, again: dict) -> dict:
    """The decisions labelled again, their values the mean of both labellings and their action
    its best (ties to the lower action): a teacher with less noise, for ``training.distill``."""
    index = again["index"]
    mask = labels["action_mask"][index]   # (checked equal to the matches played again)
    values = np.where(mask, (labels["values"][index] + again["values"]) / 2, 0)
    actions = [best_action(legal_from_mask(legal), row[legal].tolist())
               for legal, row in zip(mask, values)]
    return {"observation": labels["observation"][index], "action_mask": mask,
            "action": np.array(actions, np.int64), "values": values.astype(np.float32),
            "match": labels["match"][index]}


def tables(labels: dict, again: dict, init: str, students: list[str]) -> list[str]:
    """The two markdown tables' lines, and the preference noise."""
    index = torch.from_numpy(again["index"])
    obs = torch.from_numpy(labels["observation"][again["index"]])
    mask = torch.from_numpy(labels["action_mask"][again["index"]])
    first = torch.from_numpy(labels["action"])[index]
    second = torch.from_numpy(again["action"])
    values, values_again = torch.from_numpy(labels["values"])[index], torch.from_numpy(
        again["values"])
    init_modes = modes_on(load_policy(init).model, obs, mask)
    differs = init_modes != first
    # the first labelling's action over the init's, as each labelling values it
    prefers, prefers_again = (preference(table, first, init_modes)
                              for table in (values, values_again))
    split = buckets(prefers, differs)
    split["all differing"] = differs
    lines = ["| first labelling | decisions | again the same action | again the init's action |",
             "|---|---:|---:|---:|"]
    for name, rows in split.items():
        lines.append(f"| {name} | {int(rows.sum()):,} | {_cell(share((second == first)[rows]))} | "
                     f"{_cell(share((second == init_modes)[rows]))} |")
    noise = (prefers - prefers_again)[differs]
    if int(differs.sum()) > 1:
        lines += ["", f"where the first differs from the init: its preference for its action "
                  f"{prefers[differs].mean():.2f} points, the second labelling's "
                  f"{prefers_again[differs].mean():.2f}; one labelling's noise (sd of "
                  f"their difference / sqrt 2) {noise.std() / 2 ** 0.5:.2f} points", ""]
    else:
        lines += ["", f"the first labelling differs from the init in {int(differs.sum())} "
                  "decision(s): no preference or noise to measure", ""]
    both, only_first = differs & (second == first), differs & (second != first)
    lines += [f"| policy | agrees with the first labelling ({len(first):,}) | both chose it, "
              f"not the init's ({int(both.sum()):,}) | only the first did "
              f"({int(only_first.sum()):,}) |", "|---|---:|---:|---:|"]
    for path in [init, *students]:
        plays = (init_modes if path == init else modes_on(load_policy(path).model, obs, mask)
                 ) == first
        lines.append(f"| {path} | {_cell(share(plays))} | {_cell(share(plays[both]))} | "
                     f"{_cell(share(plays[only_first]))} |")
    return lines


def _cell(fraction: float) -> str:
    """A table's fraction to 3 places, ``-`` for a group with no decision (``share``: NaN)."""
    return "-" if fraction != fraction else f"{fraction:.3f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", required=True, help="one collection's labels file")
    parser.add_argument("--init", required=True, help="the collection's student (its --init)")
    parser.add_argument("--teacher", required=True,
                        help="the collection's teacher spec (checked against the file's)")
    parser.add_argument("--envs", type=arguments.int_in(1, MAX_ENVS), default=32,
                        help="label again the decisions of ENVS of the collection's envs")
    parser.add_argument("--first-env", type=arguments.int_in(0, MAX_ENVS - 1), default=0,
                        help="the first of them (default 0)")
    parser.add_argument("--out", type=arguments.output_file, default=None,
                        help="also save those decisions as a labels file, their values the "
                             "mean of both labellings (a less noisy teacher, for "
                             "training.distill --labels)")
    parser.add_argument("--same-worlds", action="store_true",
                        help="the collection's own worlds (a check: the file's labels again)")
    parser.add_argument("--students", nargs="*", default=[], help="distilled checkpoints")
    parser.add_argument("--threads", type=arguments.threads, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    return arguments.one_line_errors(lambda: run(args))


def run(args) -> None:
    """Label the decisions again and print the tables (a ``ValueError`` for bad input)."""
    labels, recorded = load_labels(args.labels)
    for key in ("values", "match", "seed"):
        if labels.get(key) is None:
            raise ValueError(f"{args.labels} has no {key!r} (collected before it was kept): "
                             "its matches cannot be played again")
    envs = int((labels["match"] >> 32).max()) + 1
    chosen = range(args.first_env, args.first_env + args.envs)
    if chosen.stop > envs:
        raise ValueError(f"--first-env {args.first_env} --envs {args.envs}: the collection has "
                         f"{envs} envs")
    if pinned_teacher(args.teacher) != recorded:
        raise ValueError(f"the labels' teacher is {recorded}, not {pinned_teacher(args.teacher)}")
    mean_teacher = f"{recorded} {MEAN}"
    if args.out is not None and not is_teacher_text(mean_teacher):
        raise ValueError(f"--out: the teacher's spec is too long to record {MEAN!r} after it")
    again = label_again(labels, load_policy(args.init).model.eval(), make_teacher(args.teacher),
                        chosen, TEACHER_SALT if args.same_worlds else AGAIN_SALT)
    print(f"{len(again['index']):,} decisions of {args.envs} envs labelled again by {recorded}, "
          f"{'the same' if args.same_worlds else 'other'} worlds")
    print("\n".join(tables(labels, again, args.init, args.students)))
    if args.out is not None:
        saved = save_labels(args.out, mean_labels(labels, again), mean_teacher,
                            int(labels["seed"]))
        print(f"the mean of both labellings saved to {saved}")


if __name__ == "__main__":  # a closed stdout, an ASCII terminal: as the sevenrocks commands
    from sevenrocks_env.cli import guarded
    sys.exit(guarded("benchmarks/teacher_noise.py", main))
