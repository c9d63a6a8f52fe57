"""Writing and reading training checkpoints (``checkpoints/<run>/step_<n>.pt``, ``latest.pt``).

A checkpoint is one dict of tensors and plain Python values (no pickled classes), so it loads
with ``torch.load(weights_only=True)``; the policy keys are documented in
:mod:`sevenrocks_env.policy`, which also validates them (:func:`read_checkpoint`).  The trainer
adds what ``--resume`` needs: optimizer state, config, update counter, RNG states, the matches in
progress and the opponent pool (``past`` snapshots and their generators).
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import torch

from sevenrocks_env.atomic_file import atomic_path
from sevenrocks_env.checks import shown
from sevenrocks_env.observation import OBS_SIZE, OBS_VERSION
from sevenrocks_env.policy import (CHECKPOINT_FORMAT, MAX_CHECKPOINT_BYTES, CheckpointError,
                                   expected_shapes, read_checkpoint, trained_with_oracle_critic)
from sevenrocks_env.tiles import NUM_ACTIONS

from .config_yaml import ConfigError
from .critic import HANDS_SIZE
from .opponents import PAST, cpu_weights


def policy_entries(model, global_step: int) -> dict:
    """The keys any policy checkpoint has (what ``load_policy`` reads)."""
    return {
        "format": CHECKPOINT_FORMAT,
        "obs_version": OBS_VERSION,
        "obs_size": OBS_SIZE,
        "num_actions": NUM_ACTIONS,
        "model_config": model.model_config(),
        "model": cpu_weights(model),
        "global_step": int(global_step),
    }


def on_cpu(value):
    """``value`` (an optimizer's state dict: dicts, lists and tensors) with every tensor on the
    CPU, so a checkpoint written on a GPU loads anywhere."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {key: on_cpu(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(on_cpu(item) for item in value)
    return value


def rng_state() -> dict:
    """Python, numpy (legacy global) and torch generator states as plain values/tensors."""
    version, internal, gauss = random.getstate()
    legacy = np.random.get_state()
    return {
        "python": [version, list(internal), gauss],
        "numpy": [legacy[0], torch.from_numpy(legacy[1].astype(np.int64)), *legacy[2:]],
        "torch": torch.get_rng_state(),
    }


def set_rng_state(state: dict) -> None:
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    name, keys, *rest = state["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), *rest))
    torch.set_rng_state(state["torch"])


class _KeptError:
    """The file ``torch.save`` writes through, keeping the ``OSError`` of a failed write: torch
    reports it as a ``RuntimeError`` (``unexpected pos 62016 vs 61904``) that names neither the
    file nor the cause (a full disk)."""

    def __init__(self, file):
        self.file, self.error = file, None

    def write(self, data):
        try:
            return self.file.write(data)
        except OSError as error:
            self.error = error
            raise

    def flush(self):
        self.file.flush()


def save_checkpoint(path, data: dict) -> Path:
    """Write atomically (temp file + rename), so a crash never leaves a truncated ``latest.pt``;
    a write that fails (the disk full) is an ``OSError`` naming ``path`` and its cause, and
    leaves the file that was there as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)  # (its error names the folder)
    with atomic_path(path) as partial, open(partial, "wb") as file:  # (its OSError names path)
        kept = _KeptError(file)
        try:
            torch.save(data, kept)
        except RuntimeError:
            if kept.error is None:
                raise
            raise kept.error from None
    return path


def save_training_checkpoint(directory, model, optimizer, cfg, global_step: int, update: int,
                             wall_time: float, engine_state: dict, pool_state: dict | None,
                             critic=None, guess=None, fingerprints: dict | None = None,
                             resumes: list | None = None) -> Path:
    """``step_<n>.pt`` plus a copy as ``latest.pt``; returns the step file's path.  An oracle
    ``critic`` and a hand-guess head ``guess`` (training only) are stored under ``critic`` and
    ``hand_guess``; the policy keys stay as they are.  ``fingerprints``: ``{spec: sha256}`` of
    the files the run's opponents and evaluation agents loaded (``training.agent_files``);
    ``resumes``: the run's resumes that changed what it learns (:mod:`.resume_record`), kept
    when there are any."""
    data = policy_entries(model, global_step)
    data.update({
        "optimizer": on_cpu(optimizer.state_dict()),
        "config": cfg.as_dict(),
        "update": int(update),
        "wall_time": float(wall_time),
        "rng": rng_state(),
        "engine": engine_state,
        "pool": pool_state,
        "critic": None if critic is None else cpu_weights(critic),
        "hand_guess": None if guess is None else cpu_weights(guess),
        "fingerprints": dict(fingerprints or {}),
        "torch_version": str(torch.__version__),
        **({"resumes": list(resumes)} if resumes else {}),
    })
    directory = Path(directory)
    (directory / EVALUATED).unlink(missing_ok=True)  # from an earlier run in this folder
    step_path = save_checkpoint(directory / f"step_{global_step}.pt", data)
    save_checkpoint(directory / "latest.pt", data)
    return step_path


#: Written beside a run's checkpoints once its final evaluation is logged (and removed by every
#: checkpoint saved): resuming the complete run would log that evaluation twice at one step.
EVALUATED = "evaluated.json"


def mark_evaluated(ckpt_dir, global_step: int, batch_size: int | None = None,
                   minutes: float | None = None, out_of_time: bool = False) -> None:
    """Say (in ``ckpt_dir``) that the run's final evaluation at ``global_step`` is logged, its
    batch (``num_matches * num_steps``: the steps an update adds, for the hint that trains the
    complete run on), the minutes the run has used (resumed sessions included) and whether
    ``max_minutes`` stopped it before its last update."""
    mark = {"global_step": int(global_step)}
    if batch_size is not None:
        mark["batch_size"] = int(batch_size)
    if minutes is not None:
        mark["minutes"] = float(minutes)
    if out_of_time:
        mark["out_of_time"] = True
    with atomic_path(Path(ckpt_dir) / EVALUATED) as path:
        Path(path).write_text(json.dumps(mark) + "\n")


def _mark(ckpt_dir) -> dict:
    """The mark in ``ckpt_dir`` (``{}``: none, or one unreadable: a FIFO or a folder there is
    no mark)."""
    mark_path = Path(ckpt_dir) / EVALUATED
    try:
        if not mark_path.is_file():
            return {}
        with open(mark_path, encoding="utf-8") as file:
            mark = json.loads(file.read(200))
    except (OSError, ValueError):
        return {}
    return mark if type(mark) is dict else {}


def evaluated_step(ckpt_dir):
    """The step whose final evaluation the mark in ``ckpt_dir`` says is logged, or None (none,
    or not a step count)."""
    step = _mark(ckpt_dir).get("global_step")
    return step if type(step) is int and step >= 0 else None


def stopped_out_of_time(ckpt_dir) -> bool:
    """Whether the mark in ``ckpt_dir`` says ``max_minutes`` stopped the run (not its last
    update): its final evaluation is logged, but it has updates left."""
    return _mark(ckpt_dir).get("out_of_time") is True


def evaluated_minutes(ckpt_dir) -> float | None:
    """The minutes the mark in ``ckpt_dir`` says the run had used, or None (none recorded)."""
    minutes = _mark(ckpt_dir).get("minutes")
    return minutes if type(minutes) is float and 0 <= minutes < 1e9 else None


def evaluated_batch(ckpt_dir, default: int) -> int:
    """The batch size the mark in ``ckpt_dir`` records, ``default`` where it has none (a mark
    written before it kept one)."""
    batch = _mark(ckpt_dir).get("batch_size")
    return batch if type(batch) is int and batch >= 1 else default


def more_steps(global_step: int, batch_size: int) -> str:
    """``--set total_steps=N`` with the smallest N that trains a run done at ``global_step`` on:
    an update adds a whole batch, so a smaller N adds none (``num_updates = total_steps //
    batch_size``)."""
    return f"--set total_steps=N (N at least {global_step + batch_size}: one more update)"


def more_minutes(used: float | None) -> str:
    """``--set max_minutes=M`` for a run that has used them (``used`` minutes: the mark's,
    :func:`evaluated_minutes`; None: not recorded)."""
    return "--set max_minutes=M (M above the " + \
        (f"{minutes_text(used)} minutes it has used)" if used is not None else
         "minutes it has used)")


def minutes_text(minutes: float) -> str:
    """Minutes as the messages write them: one decimal, a tiny budget's digits shown."""
    return f"{minutes:.1f}" if minutes >= 0.05 else f"{minutes:.2g}"


def check_not_complete(ckpt_dir, data: dict, num_updates: int) -> None:
    """:class:`ConfigError` for a resume (``data``, its counters checked) of a run whose updates
    are all done and whose final evaluation is logged in ``ckpt_dir`` after its last checkpoint
    (a run stopped during that evaluation resumes to run it); a missing or unreadable mark: not
    evaluated."""
    if data["update"] >= num_updates and evaluated_step(ckpt_dir) == data["global_step"]:
        step = data["global_step"]
        raise ConfigError(f"the run is complete: all its updates ({data['update']}) are done "
                          f"and its final evaluation is logged (step {step}); "
                          f"{more_steps(step, step // max(data['update'], 1))} trains on",
                          "total_steps")


def check_nothing_later(ckpt_dir, data: dict) -> None:
    """:class:`ConfigError` for a resume (``data``) in its own run folder ``ckpt_dir`` that goes
    back over the run's newer state: its ``latest.pt`` of a later step, or where that file is
    missing or unreadable, a ``step_N.pt`` of a later step (a ``latest.pt`` of the resumed step
    is the run's newest state, whatever step files an earlier run left there).  The resumed run
    would overwrite some of them, leave the others beside its own and hide their TensorBoard
    points (a resume's ``purge_step``), without a word.  A file of a later step than
    ``latest.pt``'s comes from a history a ``--force`` rewind left: refused too."""
    step = data["global_step"]
    later = sorted(int(path.name[5:-3]) for path in Path(ckpt_dir).glob("step_*.pt")
                   if path.name[5:-3].isdigit() and path.name[5:-3].isascii()
                   and len(path.name) < 30 and int(path.name[5:-3]) > step)
    latest = None
    if (Path(ckpt_dir) / "latest.pt").is_file():
        try:
            latest = read_checkpoint(Path(ckpt_dir) / "latest.pt").get("global_step")
        except CheckpointError:
            pass
    if type(latest) is int and latest < step:  # a --force rewind's discarded branch
        raise ConfigError(f"{ckpt_dir}'s latest.pt is at step {latest}, before the resumed step "
                          f"{step}: the file is of another history of this run (one a --force "
                          "rewind went back over), and resuming it there would mix the two; "
                          "write it elsewhere (--set run_name=NEW), or --force", "run_name")
    newer = latest > step if type(latest) is int else bool(later)
    if newer:
        names = ([f"latest.pt at step {latest}"] if type(latest) is int else []) + \
            [f"step_{n}.pt" for n in later[:3]] + (["..."] if later[3:] else [])
        raise ConfigError(f"{ckpt_dir} holds this run's later checkpoints ({', '.join(names)}): "
                          f"resuming step {step} there would overwrite some and mix the rest "
                          "with the new run's; resume the newest, write the new run elsewhere "
                          "(--set run_name=NEW), or --force", "run_name")


def load_training_checkpoint(path) -> dict:
    """A validated checkpoint that also has the trainer's resume state."""
    data = read_checkpoint(path)
    missing = [k for k in ("optimizer", "config", "update", "rng", "engine") if k not in data]
    if missing:
        raise CheckpointError(f"{path} is a policy-only checkpoint (no {', '.join(missing)}): "
                              "it can be played but not resumed")
    return data


MAX_CONFIG_CHARS = 64_000


#: The most seconds a checkpoint's ``wall_time`` may say (some 31 years): ``--resume`` and ship
#: read it with this bound, and the curves the minutes logged (``plot_curve.MAX_MINUTES``).
MAX_WALL_SECONDS = 10 ** 9


def run_facts(data: dict, path) -> dict:
    """What a checkpoint says about its run, checked before it is copied or printed:
    ``global_step`` (an int), ``wall_time`` (seconds, ``None`` when the file has none) and
    ``config`` (plain JSON values, ``{}`` when the file has none)."""
    step, wall, config = data.get("global_step"), data.get("wall_time"), data.get("config", {})
    if type(step) is not int or not 0 <= step <= 10 ** 12:
        raise CheckpointError(f"{path}: 'global_step' must be an int in [0, 1e12], "
                              f"got {shown(step)}")
    if wall is not None and (type(wall) not in (int, float) or not math.isfinite(wall)
                             or not 0 <= wall <= MAX_WALL_SECONDS):
        raise CheckpointError(f"{path}: 'wall_time' must be a number of seconds in [0, 1e9], "
                              f"got {shown(wall)}")
    try:
        size = len(json.dumps(config, allow_nan=False)) if isinstance(config, dict) else None
    except (TypeError, ValueError, RecursionError):
        size = None
    if size is None or size > MAX_CONFIG_CHARS:
        raise CheckpointError(f"{path}: 'config' must be a dict of plain values (JSON, at most "
                              f"{MAX_CONFIG_CHARS:,} characters)")
    return {"global_step": step, "wall_time": wall, "config": config}


def policy_only(data: dict) -> dict:
    """The policy keys of a validated checkpoint dict (:func:`run_facts` too), for playing, and
    a distilled policy's ``distill`` record (what its card says of it: shipping the shipped file
    again kept no distillation row) and a resumed run's ``resumes`` (:mod:`.resume_record`).
    A policy trained with the oracle critic loses its value head, which was never trained
    (``model_config["value_head"]`` becomes false); every other weight is kept bit for bit."""
    small = {k: data[k] for k in ("format", "obs_version", "obs_size", "num_actions",
                                  "model_config", "model", "global_step")}
    for key in ("distill", "resumes"):  # checked by whoever reads them (training.ship)
        if data.get(key) is not None:
            small[key] = data[key]
    if trained_with_oracle_critic(data):
        small["model"] = {k: v for k, v in data["model"].items()
                          if not k.startswith("value_head.")}
        small["model_config"] = dict(data["model_config"], value_head=False)
    return small


def export_policy(source, destination, extra: dict | None = None, data: dict | None = None) -> Path:
    """Copy just the policy (no optimizer or run state, no untrained value head: see
    :func:`policy_only`) to a small file, e.g. for shipping.  ``data``: the checkpoint at
    ``source`` as :func:`read_checkpoint` returned it, when the caller has read it already."""
    data = read_checkpoint(source) if data is None else data
    facts = run_facts(data, source)
    small = policy_only(data)
    small["config"] = facts["config"]
    if facts["wall_time"] is not None:
        small["wall_time"] = facts["wall_time"]
    small.update(extra or {})
    return save_checkpoint(destination, small)


def checkpoint_estimate(cfg) -> int:
    """Bytes of ``cfg``'s training checkpoints, from the networks' shapes (none is built: a
    4096-wide one takes seconds to initialise): the weights and Adam's two moments of the
    policy, of the oracle critic and of the hand-guess head, and a policy copy for each
    ``past`` snapshot kept."""
    def size(shapes: dict) -> int:
        return 4 * sum(math.prod(shape) for shape in shapes.values())  # float32
    policy = size(expected_shapes(cfg.hidden_sizes, cfg.action_features,
                                  action_scorer=cfg.action_scorer, scorer_sizes=cfg.scorer_sizes))
    critic = 0 if cfg.critic != "oracle" else size(  # a trunk and a value head (training.critic)
        expected_shapes(cfg.hidden_sizes, 0, obs_size=OBS_SIZE + HANDS_SIZE, num_actions=0))
    guess = 0 if cfg.hand_coef == 0 else 4 * (cfg.hidden_sizes[-1] + 1) * HANDS_SIZE
    snapshots = cfg.max_snapshots if PAST in cfg.opponents else 0
    return 3 * policy + 3 * critic + 3 * guess + snapshots * policy


def check_checkpoint_size(cfg, resumed: bool = False) -> None:
    """:class:`ConfigError` naming ``hidden_sizes`` when this run's training checkpoints would
    be too large to read back (``MAX_CHECKPOINT_BYTES``, the bound every reader of a downloaded
    file keeps): :func:`checkpoint_estimate` must fit in three quarters of it (the rest:
    snapshots still played after they leave the pool, the engine's state).  Checked before
    anything is written: such a run trained for hours, then could not be resumed, shipped or
    loaded.  A ``resumed`` run is checked too (``--set max_snapshots`` or ``opponents`` grow
    its checkpoints); its error names ``max_snapshots`` (its networks cannot change)."""
    estimate = checkpoint_estimate(cfg)
    if estimate <= MAX_CHECKPOINT_BYTES * 3 // 4:
        return
    bound = (f"too much to be read back (a checkpoint is read up to "
             f"{MAX_CHECKPOINT_BYTES >> 20} MB, and room is kept for snapshots)")
    if resumed:
        raise ConfigError(f"max_snapshots {cfg.max_snapshots}: this resumed run's checkpoints "
                          f"would hold about {estimate >> 20} MB, {bound}; keep fewer "
                          "max_snapshots (--set max_snapshots=N) or leave 'past' out of "
                          "opponents", "max_snapshots", ("opponents", "hidden_sizes"))
    raise ConfigError(f"hidden_sizes {cfg.hidden_sizes}: a training checkpoint would hold "
                      f"about {estimate >> 20} MB, {bound}; choose smaller hidden_sizes (or "
                      "fewer max_snapshots)", "hidden_sizes", ("max_snapshots", "critic"))
