"""Distil a search agent into the policy network (issue 11, expert iteration / DAgger).

    python -m training.distill --teacher "search:policy=shipped,samples=64" --decisions 12000 \\
        --out checkpoints/distilled/sevenrocks_ppo.pt
    python -m training.distill --labels runs/distill/labels.npz --epochs 8 --out ...  # retrain

Read top to bottom, it does three things:

1. **Collect** (DAgger): ``num_envs`` matches on the batched engine, every seat played by the
   *student* (the ``init`` policy, sampling from its distribution so that the states are the
   ones it visits, plus some variety).  Every decision with a real choice (two or more legal
   actions) is labelled with the *teacher's* action: a search agent (``search:...`` or
   ``search:policy=...``) given only that seat's observation and mask, all decisions of a step
   searched together.  Decision ``(step, env)`` samples its worlds from a generator seeded by
   ``(seed, step, env)``.  The labels are saved (``<out stem>.labels.npz``, also every thousand
   labels while collecting) so training can be re-run without searching again (``--labels``).
2. **Train**: the student, starting from ``init``'s weights, minimises the cross entropy between
   its masked distribution and the teacher's action, ``epochs`` passes over the labels in
   shuffled minibatches; 10% of the labels are held out to measure agreement with the teacher.
3. **Save** a policy checkpoint (``load_policy`` / ``ckpt:PATH``), same network shape as
   ``init``; the file records the teacher, the number of labels and the agreement.

TensorBoard (``<log_dir>/<run_name>``): ``losses/distill_loss``, ``charts/teacher_agreement``
(on the training minibatches), ``charts/holdout_agreement`` (per epoch) and ``charts/labels_per_s``.
Whether the result is *stronger* is the arena's question, on fresh deals (``docs/training.md``).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from sevenrocks_env.batched import layout
from sevenrocks_env.observation import OBS_SIZE
from sevenrocks_env.policy import (MaskedCategorical, PolicyNet, build_model, read_checkpoint)
from sevenrocks_env.tiles import NUM_ACTIONS

from .checkpoint import policy_entries, save_checkpoint

#: Labels a file may hold (bounds the work a labels file from elsewhere can ask for).
MAX_LABELS = 2_000_000
_SALT = 0xD157


@dataclass
class Args:
    init: str = "shipped"
    """the student's starting weights: a policy checkpoint path or ``shipped``"""
    teacher: str = "search:policy=shipped,samples=64"
    """the search agent spec whose choices are the targets (``search:...``)"""
    decisions: int = 12_000
    """labelled decisions to collect (ignored with ``labels``)"""
    labels: str | None = None
    """train on a labels file saved by an earlier run instead of collecting"""
    num_envs: int = 64
    """matches played side by side while collecting"""
    epochs: int = 6
    batch_size: int = 256
    learning_rate: float = 1e-4
    seed: int = 1
    out: str = "checkpoints/distilled/sevenrocks_ppo.pt"
    log_dir: str = "runs"
    run_name: str = "distill"


class LabelsError(ValueError):
    """A labels file that is not what :func:`save_labels` writes."""


# ---------------------------------------------------------------------------- 1. collect
def make_teacher(spec: str):
    """The batched searcher of a ``search`` spec: an object with ``choose_many``."""
    from sevenrocks_env.arena_batched import BatchedSearchAgent, batched_agent
    teacher = batched_agent(spec)
    if not isinstance(teacher, BatchedSearchAgent):
        raise ValueError(f"teacher {spec!r} is not a search agent (search:..., "
                         "search:policy=...)")
    return teacher.searcher


@torch.inference_mode()
def collect(student: PolicyNet, teacher, decisions: int, num_envs: int, seed: int,
            log=print, save=None) -> dict:
    """Play student-vs-student matches, label every real choice with the teacher's action.

    Returns ``{"observation": float32 [N, 238], "action_mask": bool [N, 113], "action": int64
    [N]}`` with ``N == decisions``; ``save(labels)`` (optional) gets the labels so far after
    every thousand, so a long collection that is stopped keeps what it searched."""
    from sevenrocks_env import sevenrocks_v0
    venv = sevenrocks_v0.vector_env(num_envs=num_envs, validate=False)
    venv.reset(seed=seed)
    generator = torch.Generator().manual_seed(seed)
    observations, masks, actions = [], [], []
    have, step, started = 0, 0, time.perf_counter()
    while have < decisions:
        obs, mask = venv.observation, venv.action_mask
        logits, _ = student(obs, mask)
        chosen = torch.multinomial(MaskedCategorical(logits, mask).probs, 1,
                                   generator=generator).squeeze(1)
        rows = (layout.legal_counts(mask) > 1).nonzero().squeeze(1)[: decisions - have]
        if len(rows):
            obs_np, mask_np = obs[rows].numpy(), mask[rows].numpy()
            rngs = [np.random.default_rng((seed, _SALT, step, int(r))) for r in rows]
            labels = teacher.choose_many(obs_np, mask_np, rngs)
            observations.append(obs_np.copy())
            masks.append(mask_np.copy())
            actions.append(np.asarray(labels, dtype=np.int64))
            have += len(rows)
            if have // 1000 != (have - len(rows)) // 1000:
                rate = have / (time.perf_counter() - started)
                log(f"collect: {have:,}/{decisions:,} labels, {rate:.1f} labels/s")
                if save is not None and have < decisions:
                    save(_joined(observations, masks, actions))
        venv.step(chosen)
        step += 1
    return _joined(observations, masks, actions)


def _joined(observations, masks, actions) -> dict:
    return {"observation": np.concatenate(observations), "action_mask": np.concatenate(masks),
            "action": np.concatenate(actions)}


def save_labels(path, labels: dict, teacher: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, observation=labels["observation"],
                        action_mask=labels["action_mask"], action=labels["action"],
                        teacher=np.array(teacher))
    return path


def load_labels(path) -> tuple[dict, str]:
    """A labels file, every array checked (shapes, dtypes, finite, each label legal under its
    mask); :class:`LabelsError` naming what is wrong.  No pickles are read."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {key: data[key] for key in ("observation", "action_mask", "action",
                                                 "teacher")}
    except (OSError, ValueError, KeyError) as error:
        raise LabelsError(f"{path}: not a labels file ({error})") from None
    obs, mask, action = arrays["observation"], arrays["action_mask"], arrays["action"]
    n = len(action)
    if action.ndim != 1 or not 0 < n <= MAX_LABELS:
        raise LabelsError(f"{path}: 'action' must be 1-D with 1..{MAX_LABELS} labels")
    if obs.shape != (n, OBS_SIZE) or obs.dtype != np.float32 or not np.isfinite(obs).all():
        raise LabelsError(f"{path}: 'observation' must be finite float32 of shape ({n}, "
                          f"{OBS_SIZE})")
    if mask.shape != (n, NUM_ACTIONS) or mask.dtype != np.bool_:
        raise LabelsError(f"{path}: 'action_mask' must be bool of shape ({n}, {NUM_ACTIONS})")
    if action.dtype.kind not in "iu" or action.min() < 0 or action.max() >= NUM_ACTIONS:
        raise LabelsError(f"{path}: 'action' must be integers in 0..{NUM_ACTIONS - 1}")
    illegal = np.flatnonzero(~mask[np.arange(n), action])
    if len(illegal):
        raise LabelsError(f"{path}: label {illegal[0]} ({action[illegal[0]]}) is not legal "
                          "under its mask")
    teacher = arrays["teacher"]
    if teacher.ndim != 0 or teacher.dtype.kind != "U":
        raise LabelsError(f"{path}: 'teacher' must be a string")
    return {"observation": obs, "action_mask": mask, "action": action.astype(np.int64)}, \
        str(teacher)[:200]


# ---------------------------------------------------------------------------- 2. train
def train_student(student: PolicyNet, labels: dict, args: Args, writer=None, log=print) -> dict:
    """Cross entropy toward the teacher's actions; returns the final agreements."""
    generator = torch.Generator().manual_seed(args.seed)
    n = len(labels["action"])
    order = torch.randperm(n, generator=generator)
    held = max(1, n // 10) if n >= 10 else 0
    test, train = order[:held], order[held:]
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
            loss = -dist.log_prob(action[rows]).mean()
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


@torch.inference_mode()
def agreement_on(model: PolicyNet, obs, mask, action) -> float:
    """Fraction of decisions where the model's most probable action is the teacher's."""
    if len(action) == 0:
        return float("nan")
    model.eval()
    logits, _ = model(obs, mask)
    return (MaskedCategorical(logits, mask).mode() == action).float().mean().item()


# ---------------------------------------------------------------------------- 3. run
def run(args: Args, log=print) -> dict:
    if args.decisions < 1 or args.num_envs < 1 or args.epochs < 0 or args.batch_size < 1:
        raise ValueError("decisions, num_envs and batch_size must be >= 1, epochs >= 0")
    torch.manual_seed(args.seed)
    init_data = read_checkpoint(args.init)
    student = build_model(init_data, args.init)
    out = Path(args.out)
    if args.labels:
        labels, teacher = load_labels(args.labels)
        log(f"{len(labels['action']):,} labels from {args.labels} (teacher {teacher})")
    else:
        teacher = args.teacher
        searcher = make_teacher(teacher)
        started = time.perf_counter()
        path = out.with_name(out.stem + ".labels.npz")
        labels = collect(student.eval(), searcher, args.decisions, args.num_envs, args.seed, log,
                         save=lambda so_far: save_labels(path, so_far, teacher))
        log(f"collected {args.decisions:,} labels in {time.perf_counter() - started:.0f} s")
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
    data["distill"] = {"teacher": teacher, "labels": int(len(labels["action"])),
                       "agreement_before": before, **result, "args": asdict(args)}
    save_checkpoint(out, data)
    log(f"policy saved to {out}")
    return data["distill"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.distill", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    defaults = Args()
    for name, value in asdict(defaults).items():
        kind = type(value) if value is not None else str
        parser.add_argument("--" + name.replace("_", "-"), type=kind, default=value)
    args = Args(**vars(parser.parse_args(argv)))
    try:
        run(args)
    except ValueError as error:  # bad spec, labels file or checkpoint: one clear line
        parser.exit(2, f"error: {error}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
