"""Distil a search agent into the policy network (issue 11, expert iteration / DAgger).

    python -m training.distill --teacher "search:policy=shipped,samples=64" --decisions 12000 \\
        --out checkpoints/distilled/sevenrocks_ppo.pt
    python -m training.distill --labels runs/distill/labels.npz --epochs 8 --out ...  # retrain

Read top to bottom, it does three things:

1. **Collect** (DAgger): ``num_envs`` matches on the batched engine, every seat played by the
   *student* (the ``init`` policy, sampling from its distribution so that the states are the
   ones it visits, plus some variety).  Every decision with a real choice (two or more legal
   actions) is labelled with the *teacher's* action and its value of every legal action (what
   it maximises: the mean rollout margin, plus the prior term for ``search:policy``): a search
   agent (``search:...`` or ``search:policy=...``) given only that seat's observation and mask,
   all decisions of a step searched together.  Decision ``(step, env)`` samples its worlds from a generator seeded by
   ``(seed, step, env)``.  The labels are saved (``<out stem>.labels.npz``, also every thousand
   labels, or every twentieth of a large collection, while collecting) so training can be
   re-run without searching again (``--labels``).
2. **Train**: the student, starting from ``init``'s weights, minimises the cross entropy between
   its masked distribution and the teacher's action (or, with ``--temperature T`` > 0, the soft
   target ``softmax(values / T)`` over the legal actions: the teacher's preferences, not only
   its choice), ``epochs`` passes over the labels in shuffled minibatches; whole matches
   holding about a tenth of the labels (at most a fifth) are held out to measure agreement
   with the teacher.
3. **Save** a policy checkpoint (``load_policy`` / ``ckpt:PATH``), same network shape as
   ``init``; the file records the teacher (its spec and the SHA-256 of the network it
   loads), the number of labels and the agreement.

TensorBoard (``<log_dir>/<run_name>``): ``losses/distill_loss``, ``charts/teacher_agreement``
(on the training minibatches) and ``charts/holdout_agreement`` (per epoch).
Whether the result is *stronger* is the arena's question, on fresh deals (``docs/training.md``).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import numpy as np
import torch
from pydantic import AfterValidator, ConfigDict, Field, ValidationError
from pydantic.dataclasses import dataclass

from sevenrocks_env.agents.layout import best_action, legal_from_mask
from sevenrocks_env.batched import layout
from sevenrocks_env.policy import (MaskedCategorical, PolicyNet, build_model, read_checkpoint)

from .checkpoint import policy_entries, save_checkpoint
from .config import Folder, Int, Positive, Real, RunName, first_problem
from .distill_labels import (MAX_LABELS, MAX_TEACHER_CHARS, MAX_VALUE, LabelsError,
                             load_labels_files, save_labels)

#: Smallest soft-target temperature, in points (below it the target is the argmax anyway).
MIN_TEMPERATURE = 1e-3
_SALT = 0xD157


def _hard_or_soft(temperature: float) -> float:
    if 0 < temperature < MIN_TEMPERATURE:
        raise ValueError(f"temperature must be 0 (hard labels) or in [{MIN_TEMPERATURE:g}, "
                         f"{MAX_VALUE:g}] points")
    return temperature


def _one_line(text: str) -> str:
    if not text.isprintable():
        raise ValueError("must be one line of printable text")
    return text


def _named(run_name: str) -> str:
    if not run_name:
        raise ValueError("must not be empty (the logs go to <log_dir>/<run_name>)")
    return run_name


#: A spec or a path: one line of text (the teacher's spec is written into the student's record).
Spec = Annotated[str, Field(min_length=1, max_length=MAX_TEACHER_CHARS, strict=True),
                 AfterValidator(_one_line)]


@dataclass(config=ConfigDict(use_attribute_docstrings=True, validate_assignment=True))
class Args:
    """The run's settings, each checked (type and range) by pydantic when the object is made."""

    init: Spec = "shipped"
    """the student's starting weights: a policy checkpoint path or ``shipped``"""
    teacher: Spec = "search:policy=shipped,samples=64"
    """the search agent spec whose choices are the targets (``search:...``)"""
    decisions: Int(1, MAX_LABELS) = 12_000
    """labelled decisions to collect (ignored with ``labels``)"""
    labels: Spec | None = None
    """train on a labels file saved by an earlier run instead of collecting (several:
    ``a.npz,b.npz``)"""
    num_envs: Int(1, 1 << 16) = 64
    """matches played side by side while collecting"""
    epochs: Int(0, 10_000) = 6
    """passes over the labels (0: only collect)"""
    batch_size: Int(1, 1 << 16) = 256
    """labels per gradient step"""
    learning_rate: Positive(1.0) = 1e-4
    """Adam's step size"""
    temperature: Annotated[Real(0, MAX_VALUE), AfterValidator(_hard_or_soft)] = 0.0
    """0: train toward the teacher's action (hard labels); > 0: toward the soft target
    softmax(teacher's action values / temperature) over the legal actions (values in points;
    needs labels collected with values, as every collection since they were added is)"""
    seed: Int(0, 2 ** 63 - 1) = 1
    """seeds the collection's matches and worlds, the matches held out and the shuffling"""
    threads: Int(1, 256) = 1
    """torch threads (1: on a small or busy machine more threads mostly spin -- two runs side by
    side with two threads each took 9 minutes an epoch on 2 cores, with one thread each under a
    minute for six)"""
    out: Folder = "checkpoints/distilled/sevenrocks_ppo.pt"
    """the student checkpoint to write (the labels go beside it, ``<stem>.labels.npz``)"""
    log_dir: Folder = "runs"
    """root folder of the TensorBoard runs"""
    run_name: Annotated[RunName, AfterValidator(_named)] = "distill"
    """TensorBoard logs go to ``<log_dir>/<run_name>``"""


NO_VALUES = ("temperature > 0 needs the teacher's values, and these labels have none (collected "
             "before values were kept)")


# ---------------------------------------------------------------------------- 1. collect
def make_teacher(spec: str):
    """The batched searcher of a ``search`` spec: an object with ``action_values_many``."""
    from sevenrocks_env.arena_batched import BatchedSearchAgent, batched_agent
    teacher = batched_agent(spec)
    if not isinstance(teacher, BatchedSearchAgent):
        raise ValueError(f"teacher {spec!r} is not a search agent (search:..., "
                         "search:policy=...)")
    return teacher.searcher


def pinned_teacher(spec: str) -> str:
    """The teacher as its labels record it: the spec, plus the SHA-256 of the network files it
    loads (``arena_log.files_fingerprint``), since a path such as ``shipped`` names other
    weights once a new policy is shipped."""
    from sevenrocks_env.arena_log import files_fingerprint
    fingerprint = files_fingerprint(spec)
    return spec if fingerprint is None else f"{spec} (network sha256 {fingerprint[:16]})"


@torch.inference_mode()
def collect(student: PolicyNet, teacher, decisions: int, num_envs: int, seed: int,
            log=print, save=None) -> dict:
    """Play student-vs-student matches, label every real choice with the teacher's values.

    Returns ``{"observation": float32 [N, 238], "action_mask": bool [N, 113], "action": int64
    [N], "values": float32 [N, 113], "match": int64 [N]}`` with ``N == decisions``: the
    teacher's action (its best value, ties to the lower action), its value of every legal action
    (0 for illegal ones) and which match of the collection the decision is from
    (``env << 32 | matches that env finished before it``, for :func:`holdout_split`);
    ``save(labels)`` (optional) gets the labels so far every :func:`save_interval` labels, so
    a long collection that is killed keeps what it searched.  Ctrl-C (``KeyboardInterrupt``)
    stops it cleanly: the labels of every step labelled in full are returned (fewer than
    ``decisions``); a step interrupted part-way is dropped."""
    from sevenrocks_env import sevenrocks_v0
    venv = sevenrocks_v0.vector_env(num_envs=num_envs, validate=False)
    venv.reset(seed=seed)
    generator = torch.Generator().manual_seed(seed)
    observations, masks, actions, values, matches = [], [], [], [], []
    have, step, started = 0, 0, time.perf_counter()
    every = save_interval(decisions)
    try:  # ``have`` grows only once a step's labels are in all five lists
        while have < decisions:
            obs, mask = venv.observation, venv.action_mask
            logits, _ = student(obs, mask)
            chosen = torch.multinomial(MaskedCategorical(logits, mask).probs, 1,
                                       generator=generator).squeeze(1)
            rows = (layout.legal_counts(mask) > 1).nonzero().squeeze(1)[: decisions - have]
            if len(rows):
                obs_np, mask_np = obs[rows].numpy(), mask[rows].numpy()
                rngs = [np.random.default_rng((seed, _SALT, step, int(r))) for r in rows]
                scores = teacher.action_values_many(obs_np, mask_np, rngs)
                table = np.zeros(mask_np.shape, dtype=np.float32)
                for row, (legal_mask, score) in enumerate(zip(mask_np, scores)):
                    legal = legal_from_mask(legal_mask)
                    table[row, legal] = score
                    if not np.isfinite(table[row]).all() or np.abs(table[row]).max() > MAX_VALUE:
                        raise ValueError(f"teacher value out of range (finite, within "
                                         f"+-{MAX_VALUE:g}) at step {step}: {score}")
                    # chosen from the values as stored, so a label is always their argmax
                    actions.append(best_action(legal, table[row, legal].tolist()))
                observations.append(obs_np.copy())
                masks.append(mask_np.copy())
                values.append(table)
                matches.append(((rows << 32) | venv.state.matches[rows]).numpy())
                have += len(rows)
                if have // 1000 != (have - len(rows)) // 1000:
                    rate = have / (time.perf_counter() - started)
                    log(f"collect: {have:,}/{decisions:,} labels, {rate:.1f} labels/s")
                saving = have // every != (have - len(rows)) // every
                if save is not None and saving and have < decisions:
                    save(_joined(observations, masks, actions, values, matches, have))
            venv.step(chosen)
            step += 1
    except KeyboardInterrupt:
        if not have:
            raise
        log(f"collect: interrupted at {have:,} labels (the step in progress is dropped)")
    return _joined(observations, masks, actions, values, matches, have)


def save_interval(decisions: int) -> int:
    """Labels between two saves of a collection in progress: every thousand, or every twentieth
    of a large collection (each save rewrites the whole file, so a fixed interval would make a
    collection of N labels write O(N^2) bytes)."""
    return max(1000, decisions // 20 // 1000 * 1000)


def _joined(observations, masks, actions, values, matches, have: int) -> dict:
    """The first ``have`` labels of each list (an interrupted step may be in some lists)."""
    return {"observation": np.concatenate(observations)[:have],
            "action_mask": np.concatenate(masks)[:have],
            "action": np.asarray(actions[:have], dtype=np.int64),
            "values": np.concatenate(values)[:have],
            "match": np.concatenate(matches).astype(np.int64)[:have]}


# ---------------------------------------------------------------------------- 2. train
def train_student(student: PolicyNet, labels: dict, args: Args, writer=None, log=print) -> dict:
    """Cross entropy toward the teacher's actions (or, with ``args.temperature``, toward the
    soft targets of :func:`soft_targets`); returns the final agreements."""
    generator = torch.Generator().manual_seed(args.seed)
    n = len(labels["action"])
    targets = None
    if args.temperature > 0:
        if labels.get("values") is None:
            raise LabelsError(NO_VALUES)
        targets = soft_targets(torch.from_numpy(labels["values"]),
                               torch.from_numpy(labels["action_mask"]), args.temperature)
    test, train = holdout_split(labels.get("match"), n, generator)
    held = len(test)
    obs = torch.from_numpy(labels["observation"])
    mask = torch.from_numpy(labels["action_mask"])
    action = torch.from_numpy(labels["action"])
    optimizer = torch.optim.Adam(student.parameters(), lr=args.learning_rate, eps=1e-5)
    agreement = holdout = float("nan")
    step = 0
    for epoch in range(args.epochs):
        student.train()
        shuffled = train[torch.randperm(len(train), generator=generator)]
        for start in range(0, len(shuffled), args.batch_size):
            rows = shuffled[start:start + args.batch_size]
            logits, _ = student(obs[rows], mask[rows])
            dist = MaskedCategorical(logits, mask[rows])
            if targets is None:
                loss = -dist.log_prob(action[rows]).mean()
            else:
                loss = -(targets[rows] * dist.log_probs).sum(-1).mean()
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(student.parameters(), 0.5)
            optimizer.step()
            agreement = (dist.mode() == action[rows]).float().mean().item()
            step += len(rows)
            if writer is not None:
                writer.add_scalar("losses/distill_loss", loss.item(), step)
                writer.add_scalar("charts/teacher_agreement", agreement, step)
        holdout = agreement_on(student, obs[test], mask[test], action[test])
        if writer is not None:
            writer.add_scalar("charts/holdout_agreement", holdout, step)
        log(f"epoch {epoch + 1}/{args.epochs}: loss {loss.item():.3f}, holdout agreement "
            f"{holdout:.3f}")
    student.eval()
    return {"train_agreement": agreement, "holdout_agreement": holdout, "holdout": held}


def holdout_split(match, n: int, generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(held-out rows, training rows): about a tenth of the labels, at most a fifth (none below
    10 labels).

    With match ids (``collect`` records them) whole matches are held out: taken in a shuffled
    order, each if it keeps the held-out rows within a fifth, until a tenth is reached.
    Decisions of one match share most of their observation, so a split by decision would
    measure agreement on near-copies of training labels.  Nothing is held out when no match is
    small enough; labels without match ids are split by decision."""
    if n < 10:
        return torch.zeros(0, dtype=torch.long), torch.arange(n)
    if match is None:
        order = torch.randperm(n, generator=generator)
        return order[: n // 10], order[n // 10:]
    ids, which = np.unique(match, return_inverse=True)
    counts = np.bincount(which, minlength=len(ids))
    chosen, held = [], 0
    for match_index in torch.randperm(len(ids), generator=generator).tolist():
        if held >= n // 10:
            break
        if held + counts[match_index] <= n // 5:
            chosen.append(match_index)
            held += int(counts[match_index])
    rows = np.isin(which, chosen)
    return torch.from_numpy(np.flatnonzero(rows)), torch.from_numpy(np.flatnonzero(~rows))


def soft_targets(values: torch.Tensor, mask: torch.Tensor, temperature: float) -> torch.Tensor:
    """``softmax(values / temperature)`` over each row's legal actions, 0 elsewhere: the teacher's
    preferences, not only its choice (an action worth ``temperature`` points less gets ``1/e``
    times the weight)."""
    if not MIN_TEMPERATURE <= temperature <= MAX_VALUE:
        raise ValueError(f"temperature must be in [{MIN_TEMPERATURE:g}, {MAX_VALUE:g}] points, "
                         f"got {temperature!r}")
    legal = torch.where(mask, values, torch.full_like(values, -torch.inf))
    best = legal.amax(-1, keepdim=True)  # (x - best) / T <= 0: no overflow at a small T
    return torch.softmax((legal - best) / temperature, dim=-1)


@torch.inference_mode()
def agreement_on(model: PolicyNet, obs, mask, action) -> float:
    """Fraction of decisions where the model's most probable action is the teacher's."""
    if len(action) == 0:
        return float("nan")
    model.eval()
    agree = 0
    for start in range(0, len(action), 4096):  # in batches: 400,000 at once took gigabytes
        rows = slice(start, start + 4096)
        logits, _ = model(obs[rows], mask[rows])
        agree += int((MaskedCategorical(logits, mask[rows]).mode() == action[rows]).sum())
    return agree / len(action)


# ---------------------------------------------------------------------------- 3. run
def run(args: Args, log=print) -> dict:
    """Collect (or read) labels, train the student, save it; returns the checkpoint's
    ``distill`` facts.  Torch runs on ``args.threads`` threads meanwhile.  (``args`` was
    checked when it was made: :class:`Args`.)"""
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    try:
        return _run(args, log)
    finally:
        torch.set_num_threads(threads)


def _run(args: Args, log) -> dict:
    torch.manual_seed(args.seed)
    init_data = read_checkpoint(args.init)
    student = build_model(init_data, args.init)
    out = Path(args.out)
    if args.labels:
        labels, teacher = load_labels_files(args.labels, need_values=args.temperature > 0)
        if args.temperature > 0 and labels["values"] is None:
            raise LabelsError(NO_VALUES)
        log(f"{len(labels['action']):,} labels from {args.labels} (teacher {teacher})")
    else:
        searcher = make_teacher(args.teacher)
        teacher = pinned_teacher(args.teacher)
        started = time.perf_counter()
        path = out.with_name(out.stem + ".labels.npz")
        labels = collect(student.eval(), searcher, args.decisions, args.num_envs, args.seed, log,
                         save=lambda so_far: save_labels(path, so_far, teacher))
        log(f"collected {len(labels['action']):,} labels in {time.perf_counter() - started:.0f} s")
        log(f"labels saved to {save_labels(path, labels, teacher)}")
    from torch.utils.tensorboard import SummaryWriter
    writer = SummaryWriter(str(Path(args.log_dir) / args.run_name))
    before = agreement_on(student, torch.from_numpy(labels["observation"]),
                          torch.from_numpy(labels["action_mask"]),
                          torch.from_numpy(labels["action"]))
    log(f"student agrees with the teacher on {before:.3f} of the labels before training")
    result = train_student(student, labels, args, writer, log)
    writer.close()
    data = policy_entries(student, int(init_data.get("global_step", 0)))
    # the run that trained the init, for the model card (``training.ship`` checks them again)
    data.update({key: init_data[key] for key in ("config", "wall_time") if key in init_data})
    data["distill"] = {"teacher": teacher, "labels": int(len(labels["action"])),
                       "agreement_before": before, **result,
                       # with --labels the teacher is the files', not the unused --teacher default
                       "args": asdict(args) | {"teacher": teacher}}
    save_checkpoint(out, data)
    log(f"policy saved to {out}")
    return data["distill"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.distill", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, value in asdict(Args()).items():
        kind = type(value) if value is not None else str
        parser.add_argument("--" + name.replace("_", "-"), type=kind, default=value,
                            help=Args.__pydantic_fields__[name].description)
    values = vars(parser.parse_args(argv))
    try:
        args = Args(**values)
    except ValidationError as error:
        key, _, message = first_problem(error)
        parser.exit(2, f"error: --{key.replace('_', '-')}: {message}, got {values.get(key)!r}\n")
    try:
        run(args)
    except ValueError as error:  # bad spec, labels file or checkpoint: one clear line
        parser.exit(2, f"error: {error}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
