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
   labels while collecting) so training can be re-run without searching again (``--labels``).
2. **Train**: the student, starting from ``init``'s weights, minimises the cross entropy between
   its masked distribution and the teacher's action (or, with ``--temperature T`` > 0, the soft
   target ``softmax(values / T)`` over the legal actions: the teacher's preferences, not only
   its choice), ``epochs`` passes over the labels in shuffled minibatches; 10% of the labels are held out to measure agreement with the teacher.
3. **Save** a policy checkpoint (``load_policy`` / ``ckpt:PATH``), same network shape as
   ``init``; the file records the teacher, the number of labels and the agreement.

TensorBoard (``<log_dir>/<run_name>``): ``losses/distill_loss``, ``charts/teacher_agreement``
(on the training minibatches) and ``charts/holdout_agreement`` (per epoch).
Whether the result is *stronger* is the arena's question, on fresh deals (``docs/training.md``).
"""

from __future__ import annotations

import argparse
import time
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from sevenrocks_env.agents.layout import best_action, legal_from_mask
from sevenrocks_env.batched import layout
from sevenrocks_env.observation import OBS_SIZE
from sevenrocks_env.policy import (MaskedCategorical, PolicyNet, build_model, read_checkpoint)
from sevenrocks_env.record import shown
from sevenrocks_env.tiles import NUM_ACTIONS

from .checkpoint import policy_entries, save_checkpoint

#: Labels a file may hold (bounds the work a labels file from elsewhere can ask for).
MAX_LABELS = 2_000_000
#: Largest teacher value a file may hold, in points (a match is won at a few hundred).
MAX_VALUE = 1e6
#: Smallest soft-target temperature, in points (below it the target is the argmax anyway).
MIN_TEMPERATURE = 1e-3
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
    temperature: float = 0.0
    """0: train toward the teacher's action (hard labels); > 0: toward the soft target
    softmax(teacher's action values / temperature) over the legal actions (values in points;
    needs labels collected with values, as every collection since they were added is)"""
    seed: int = 1
    out: str = "checkpoints/distilled/sevenrocks_ppo.pt"
    log_dir: str = "runs"
    run_name: str = "distill"


class LabelsError(ValueError):
    """A labels file that is not what :func:`save_labels` writes."""


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


@torch.inference_mode()
def collect(student: PolicyNet, teacher, decisions: int, num_envs: int, seed: int,
            log=print, save=None) -> dict:
    """Play student-vs-student matches, label every real choice with the teacher's values.

    Returns ``{"observation": float32 [N, 238], "action_mask": bool [N, 113], "action": int64
    [N], "values": float32 [N, 113]}`` with ``N == decisions``: the teacher's action (its best
    value, ties to the lower action) and its value of every legal action (0 for illegal ones);
    ``save(labels)`` (optional) gets the labels so far after every thousand, so a long
    collection that is stopped keeps what it searched."""
    from sevenrocks_env import sevenrocks_v0
    venv = sevenrocks_v0.vector_env(num_envs=num_envs, validate=False)
    venv.reset(seed=seed)
    generator = torch.Generator().manual_seed(seed)
    observations, masks, actions, values = [], [], [], []
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
            have += len(rows)
            if have // 1000 != (have - len(rows)) // 1000:
                rate = have / (time.perf_counter() - started)
                log(f"collect: {have:,}/{decisions:,} labels, {rate:.1f} labels/s")
                if save is not None and have < decisions:
                    save(_joined(observations, masks, actions, values))
        venv.step(chosen)
        step += 1
    return _joined(observations, masks, actions, values)


def _joined(observations, masks, actions, values) -> dict:
    return {"observation": np.concatenate(observations), "action_mask": np.concatenate(masks),
            "action": np.asarray(actions, dtype=np.int64), "values": np.concatenate(values)}


def save_labels(path, labels: dict, teacher: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    extra = {} if labels.get("values") is None else {"values": labels["values"]}
    np.savez_compressed(path, observation=labels["observation"],
                        action_mask=labels["action_mask"], action=labels["action"],
                        teacher=np.array(teacher), **extra)
    return path


#: Each array's trailing shape (its first axis is the number of labels); ``teacher`` is a string.
_LABEL_ARRAYS = {"observation": (OBS_SIZE,), "action_mask": (NUM_ACTIONS,), "action": (),
                 "values": (NUM_ACTIONS,)}
#: Each array's dtype: (words, check).
_LABEL_DTYPES = {"observation": ("float32", lambda d: d == np.float32),
                 "action_mask": ("bool", lambda d: d == np.bool_),
                 "action": ("integers", lambda d: d.kind in "iu"),
                 "values": ("floats", lambda d: d.kind == "f")}
_MAX_TEACHER_CHARS = 4096


def _check_declared_shapes(path) -> None:
    """Read each array's ``.npy`` header (not its data) and refuse a shape or dtype that would
    size an allocation past the bounds: ``np.load`` allocates what a header declares."""
    declared = {}
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            # np.load would read a member named "observation" before "observation.npy", and a
            # zip may hold one name twice: only the arrays this file has, each once
            allowed = {f"{key}.npy" for key in (*_LABEL_ARRAYS, "teacher")}
            if len(set(names)) != len(names) or not set(names) <= allowed:
                odd = sorted(set(names) - allowed) or ["a name given twice"]
                raise LabelsError(f"{path}: not a labels file (it holds {shown(odd[0])}; a "
                                  f"labels file holds only {', '.join(sorted(allowed))})")
            for name in names:
                with archive.open(name) as member:
                    version = np.lib.format.read_magic(member)
                    read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                            else np.lib.format.read_array_header_2_0)
                    shape, _, dtype = read(member)
                    size = (member.tell(), archive.getinfo(name).file_size)
                declared[name[:-len(".npy")]] = (shape, dtype, size)
    except LabelsError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile) as error:
        raise LabelsError(f"{path}: not a labels file ({str(error)[:200]})") from None
    for key, (shape, dtype, (header, stored)) in declared.items():
        if key == "teacher":
            if not (shape == () and dtype.kind == "U"
                    and dtype.itemsize <= 4 * _MAX_TEACHER_CHARS):
                raise LabelsError(f"{path}: 'teacher' declares {str(dtype)[:20]} "
                                  f"{str(shape)[:60]}: not a text of at most "
                                  f"{_MAX_TEACHER_CHARS} characters")
        else:
            # the exact dtype and a label count within bounds, from the header: a float64
            # observation of 2 M labels would be read whole (3.8 GB) before any check of its data
            words, dtype_ok = _LABEL_DTYPES[key]
            if not (dtype_ok(dtype) and dtype.itemsize <= 8 and len(shape) >= 1
                    and 0 < shape[0] <= MAX_LABELS and tuple(shape[1:]) == _LABEL_ARRAYS[key]):
                raise LabelsError(f"{path}: '{key}' declares {str(dtype)[:20]} "
                                  f"{str(shape)[:60]}: not {words} of shape (N, "
                                  f"{', '.join(map(str, _LABEL_ARRAYS[key]))}) with N in "
                                  f"1..{MAX_LABELS}".replace(", )", ")"))
        # a compressed member inflates to what its zip entry declares: exactly its array
        if stored != header + int(np.prod(shape)) * dtype.itemsize:
            raise LabelsError(f"{path}: '{key}' stores {stored:,} bytes, not the {shape} "
                              f"{dtype} array its header declares")


def load_labels(path) -> tuple[dict, str]:
    """A labels file, every array checked (shapes, dtypes, finite, bounded values, each label
    legal under its mask); :class:`LabelsError` naming what is wrong.  No pickles are read.
    ``values`` is ``None`` for files from before the teacher's values were kept."""
    _check_declared_shapes(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {key: data[key] for key in ("observation", "action_mask", "action",
                                                 "teacher")}
            arrays["values"] = data["values"] if "values" in data.files else None
    except (OSError, ValueError, KeyError) as error:
        raise LabelsError(f"{path}: not a labels file ({error})") from None
    obs, mask, action = arrays["observation"], arrays["action_mask"], arrays["action"]
    n = len(action) if action.ndim == 1 else 0  # (len of a 0-d array is a TypeError)
    if not 0 < n <= MAX_LABELS:
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
    values = arrays["values"]
    if values is not None and (values.shape != mask.shape or values.dtype != np.float32
                               or not np.isfinite(values).all()
                               or np.abs(values).max() > MAX_VALUE):
        raise LabelsError(f"{path}: 'values' must be float32 of shape ({n}, {NUM_ACTIONS}) "
                          f"with finite values within +-{MAX_VALUE:g}")
    teacher = arrays["teacher"]
    if teacher.ndim != 0 or teacher.dtype.kind != "U":
        raise LabelsError(f"{path}: 'teacher' must be a string")
    return {"observation": obs, "action_mask": mask, "action": action.astype(np.int64),
            "values": values}, str(teacher)[:200]


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
    if args.decisions < 1 or args.num_envs < 1 or args.epochs < 0 or args.batch_size < 1:
        raise ValueError("decisions, num_envs and batch_size must be >= 1, epochs >= 0")
    if args.temperature != 0 and not MIN_TEMPERATURE <= args.temperature <= MAX_VALUE:
        raise ValueError(f"temperature must be 0 (hard labels) or in [{MIN_TEMPERATURE:g}, "
                         f"{MAX_VALUE:g}] points, got {args.temperature!r}")
    torch.manual_seed(args.seed)
    init_data = read_checkpoint(args.init)
    student = build_model(init_data, args.init)
    out = Path(args.out)
    if args.labels:
        labels, teacher = load_labels(args.labels)
        if args.temperature > 0 and labels["values"] is None:
            raise LabelsError(NO_VALUES)
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
