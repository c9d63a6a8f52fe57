"""Checking a ``--resume`` checkpoint, piece by piece, before anything is built from it.

A resume checkpoint may come from someone else, so each piece the trainer restores (config,
step counters, RNG state, optimizer state, opponent pool, oracle critic, the fingerprints of
the agents' files, engine state) is checked on its own; the first bad one raises
:class:`CheckpointError` naming it.  The policy's own keys
were already checked by :func:`sevenrocks_env.policy.read_checkpoint`.  :func:`restore_engine`
restores the matches in progress (a :class:`ConfigError` when ``--set`` changed their
opponents).  :func:`resume_options` writes the command line that continues a run where it wrote.
"""

from __future__ import annotations

import json
import math
import random
import shlex

import numpy as np
import torch

from sevenrocks_env.checks import shown
from sevenrocks_env.policy import CheckpointError, expected_shapes

from .agent_files import check_fingerprints, opponents_gone
from .checkpoint import MAX_WALL_SECONDS
from .config import (OUTPUT_FOLDERS, ConfigError, TrainConfig, check_pool_played, config_from_dict,
                     parse_overrides)
from .engine_state import accepts, is_live_mersenne_key, is_numpy_state, is_torch_state
from .ppo import trained_parameters
from .resume_record import resume_record

#: torch's CPU generator state (``torch.get_rng_state()``) is this many bytes.
TORCH_RNG_BYTES = torch.get_rng_state().numel()


def _bad(path, piece: str, what: str) -> CheckpointError:
    return CheckpointError(f"{path}: resume piece '{piece}' {what}")


def check_counters(data: dict, cfg: TrainConfig, path) -> None:
    """``update``, ``global_step`` and ``wall_time`` are sane and agree with ``cfg``."""
    update, step, wall = data.get("update"), data.get("global_step"), data.get("wall_time", 0.0)
    if type(update) is not int or not 0 <= update <= cfg.num_updates:
        raise _bad(path, "update", f"must be an int in [0, {cfg.num_updates}] (num_updates), "
                                   f"got {shown(update)}")
    if type(step) is not int or step != update * cfg.batch_size:
        raise _bad(path, "global_step", f"must be update * batch size = "
                                        f"{update * cfg.batch_size}, got {shown(step)}")
    if type(wall) not in (int, float) or not (math.isfinite(wall)
                                              and 0 <= wall <= MAX_WALL_SECONDS):
        raise _bad(path, "wall_time", f"must be a number of seconds in [0, 1e9], "
                                      f"got {shown(wall)}")


def check_rng(state, path) -> None:
    """Python, numpy and torch generator states exactly as :func:`checkpoint.rng_state` writes,
    each set on a scratch generator first (a state of the right shape can still be refused,
    e.g. numpy's ``has_gauss`` past a C long), and a cached Gaussian finite."""
    if not (isinstance(state, dict) and set(state) == {"python", "numpy", "torch"}):
        raise _bad(path, "rng", "must be a dict with keys python, numpy, torch")
    python = state["python"]
    if not (isinstance(python, list) and len(python) == 3 and type(python[0]) is int
            and isinstance(python[1], list) and len(python[1]) == 625
            and all(type(v) is int and 0 <= v < 2 ** 32 for v in python[1])
            and is_live_mersenne_key(python[1])
            and (python[2] is None or (type(python[2]) is float and math.isfinite(python[2])))
            and accepts(random.Random().setstate, (python[0], tuple(python[1]), python[2]))):
        raise _bad(path, "rng", "python: not a Mersenne Twister state (a key not all zero, "
                                "a finite cached Gaussian or none)")
    numpy = state["numpy"]
    if not (isinstance(numpy, list) and len(numpy) == 5 and numpy[0] == "MT19937"
            and isinstance(numpy[1], torch.Tensor) and numpy[1].layout == torch.strided
            and tuple(numpy[1].shape) == (624,) and numpy[1].dtype == torch.int64
            and bool(((numpy[1] >= 0) & (numpy[1] < 2 ** 32)).all())
            and is_live_mersenne_key(numpy[1].tolist())
            and type(numpy[2]) is int and 0 <= numpy[2] <= 624 and type(numpy[3]) is int
            and numpy[3] in (0, 1) and type(numpy[4]) is float and math.isfinite(numpy[4])
            and accepts(np.random.RandomState().set_state,
                        ("MT19937", numpy[1].numpy().astype(np.uint32), *numpy[2:]))):
        raise _bad(path, "rng", "numpy: not an MT19937 state (a key not all zero, position "
                                "0-624, has_gauss 0 or 1, a finite cached Gaussian)")
    if not _is_torch_rng(state["torch"]):
        raise _bad(path, "rng", f"torch: must be a generator state ({TORCH_RNG_BYTES} bytes)")


def finite_float32(tensor, shape: tuple) -> bool:
    """A dense (strided) float32 tensor of ``shape`` with every value finite."""
    return (isinstance(tensor, torch.Tensor) and tensor.layout == torch.strided
            and tensor.dtype == torch.float32 and tuple(tensor.shape) == shape
            and bool(torch.isfinite(tensor).all()))


def found(tensor) -> str:
    """What a value that is not a dense, finite float32 tensor of the right shape is."""
    if not isinstance(tensor, torch.Tensor):
        return f"got {type(tensor).__name__}"
    layout = "" if tensor.layout == torch.strided else f" ({str(tensor.layout)[:40]})"
    finite = "" if layout or not tensor.dtype.is_floating_point or bool(
        torch.isfinite(tensor).all()) else ", with non-finite values"
    return f"got {tensor.dtype} {tuple(tensor.shape)}{layout}{finite}"


def check_weights(weights, shapes: dict, path, piece: str) -> None:
    """A state dict with exactly ``shapes``' keys, float32 tensors of those shapes, all finite."""
    if not (isinstance(weights, dict) and set(weights) == set(shapes)):
        raise _bad(path, piece, "does not have the network's parameter names")
    for key, shape in shapes.items():
        tensor = weights[key]
        if not finite_float32(tensor, shape):
            raise _bad(path, piece, f"{key} must be dense, finite float32 {shape}, "
                                    f"{found(tensor)}")


def _is_torch_rng(state) -> bool:
    return (isinstance(state, torch.Tensor) and tuple(state.shape) == (TORCH_RNG_BYTES,)
            and is_torch_state(state))


def check_pool(pool, cfg: TrainConfig, path) -> None:
    """``None`` or ``{"snapshots": [policy weights], "generators": [torch generator states],
    "retired": [{"weights", "generator"}], "fixed": {spec: {"torch"/"numpy": state}}}`` (the
    last two absent in older checkpoints)."""
    if pool is None:
        return
    if not (isinstance(pool, dict) and {"snapshots", "generators"} <= set(pool)
            <= {"snapshots", "generators", "retired", "fixed"}
            and isinstance(pool["snapshots"], list) and isinstance(pool["generators"], list)
            and len(pool["snapshots"]) == len(pool["generators"]) <= cfg.max_snapshots):
        raise _bad(path, "pool", f"must hold matching lists of at most {cfg.max_snapshots} "
                                 "snapshots and generators")
    shapes = expected_shapes(cfg.hidden_sizes, cfg.action_features,
                             action_scorer=cfg.action_scorer, scorer_sizes=cfg.scorer_sizes)
    for index, (weights, generator) in enumerate(zip(pool["snapshots"], pool["generators"])):
        check_weights(weights, shapes, path, "pool")
        if not _is_torch_rng(generator):
            raise _bad(path, "pool", f"generator {index} is not a torch generator state")
    retired = pool.get("retired", [])
    if not (isinstance(retired, list) and len(retired) <= cfg.num_matches):
        raise _bad(path, "pool", f"retired must be a list of at most {cfg.num_matches} snapshots")
    for index, entry in enumerate(retired):
        if not (isinstance(entry, dict) and set(entry) == {"weights", "generator"}
                and _is_torch_rng(entry["generator"])):
            raise _bad(path, "pool", f"retired[{index}] must be weights and a torch generator")
        check_weights(entry["weights"], shapes, path, "pool")
    fixed = pool.get("fixed", {})
    if not (isinstance(fixed, dict) and len(fixed) <= cfg.num_matches + 64):
        raise _bad(path, "pool", "fixed must be a dict of opponents' generator states")
    for name, states in fixed.items():
        if not (isinstance(name, str) and len(name) <= 4096 and isinstance(states, dict)
                and set(states) <= {"torch", "numpy"}
                and ("torch" not in states or _is_torch_rng(states["torch"]))
                and ("numpy" not in states or is_numpy_state(states["numpy"]))):
            raise _bad(path, "pool", f"fixed[{shown(name)}] must map 'torch'/'numpy' to "
                                     "generator states")


def _moment_ratio(beta1: float, beta2: float) -> float:
    """The largest ``|exp_avg| / sqrt(exp_avg_sq)`` an Adam run can reach, whatever its
    gradients: by Cauchy-Schwarz over the two moving averages,
    ``m^2 <= (1 - b1)^2 / ((1 - b2) (1 - b1^2 / b2)) v``."""
    return (1 - beta1) / math.sqrt((1 - beta2) * (1 - beta1 ** 2 / beta2))


#: The betas of the trainer's Adam (``networks.build_networks``; torch's defaults).
ADAM_BETAS = (0.9, 0.999)
#: That Adam keeps ``|m| <= this * sqrt(v)`` (7.27), and 1 % for float32 rounding: a file's
#: moments beyond it would blow up the first update (a step of lr * |m| / (sqrt(v) + eps) per
#: weight).
ADAM_MOMENT_RATIO = 1.01 * _moment_ratio(*ADAM_BETAS)


def check_optimizer(state, parameters: list, path) -> None:
    """Adam's state for exactly ``parameters``: moments shaped like them, finite, one group.
    Only the moments and step counts are taken (:func:`optimizer_state`, which sets the
    group's betas, weight decay, amsgrad, maximize, ... from this run's config)."""
    if not (isinstance(state, dict) and set(state) == {"state", "param_groups"}
            and isinstance(state["param_groups"], list) and len(state["param_groups"]) == 1
            and isinstance(state["param_groups"][0], dict)
            and state["param_groups"][0].get("params") == list(range(len(parameters)))
            and isinstance(state["state"], dict)):
        raise _bad(path, "optimizer", "is not the Adam state of this run's networks")
    for index, moments in state["state"].items():
        if not (type(index) is int and 0 <= index < len(parameters) and isinstance(moments, dict)
                and set(moments) == {"step", "exp_avg", "exp_avg_sq"}):
            raise _bad(path, "optimizer", f"state {shown(index)} is not an Adam moment entry")
        shape = tuple(parameters[index].shape)
        for key in ("exp_avg", "exp_avg_sq"):
            tensor = moments[key]
            if not finite_float32(tensor, shape):
                raise _bad(path, "optimizer", f"state {index}.{key} must be dense, finite "
                                              f"float32 {shape}, {found(tensor)}")
        if bool((moments["exp_avg_sq"] < 0).any()):  # a mean of squares: its sqrt divides steps
            raise _bad(path, "optimizer", f"state {index}.exp_avg_sq must be >= 0")
        # (+ 1e-10: v underflows float32 to 0 for gradients below ~1e-22, where m does not;
        # such an m is far below eps, so its steps are tiny anyway)
        if not bool((moments["exp_avg"].abs()
                     <= ADAM_MOMENT_RATIO * moments["exp_avg_sq"].sqrt() + 1e-10).all()):
            raise _bad(path, "optimizer", f"state {index}.exp_avg is larger than any Adam run "
                       f"gives beside its exp_avg_sq (|m| <= {ADAM_MOMENT_RATIO:.2f} sqrt(v))")
        step = moments["step"]
        if not (isinstance(step, torch.Tensor) and step.layout == torch.strided
                and step.dtype == torch.float32 and step.numel() == 1
                and math.isfinite(float(step)) and 1 <= float(step) <= 1e12
                and float(step).is_integer()):
            raise _bad(path, "optimizer", f"state {index}.step is not a step count (a whole "
                       "float32 number in [1, 1e12], as torch's Adam keeps it)")
    group = state["param_groups"][0]
    for key in ("lr", "eps", "weight_decay"):
        value = group.get(key)
        if type(value) not in (int, float) or not math.isfinite(value) or value < 0:
            raise _bad(path, "optimizer", f"param_groups[0].{key} must be a finite number")


def optimizer_state(saved: dict, optimizer) -> dict:
    """A checked optimizer state (:func:`check_optimizer`) with the hyperparameters of
    ``optimizer`` (built from the config), for ``optimizer.load_state_dict``: a file cannot turn
    on ``maximize`` or ``amsgrad`` or set ``betas`` the checks above do not cover."""
    return {"state": saved["state"], "param_groups": optimizer.state_dict()["param_groups"]}


def trained_networks(model, critic=None, guess=None) -> dict:
    """The networks a run trains, by their checkpoint keys: the policy (``model``), the oracle
    critic and the hand-guess head where the config has them."""
    networks = {"model": model, "critic": critic, "hand_guess": guess}
    return {name: network for name, network in networks.items() if network is not None}


def check_resume(data: dict, cfg: TrainConfig, model, critic, path, guess=None) -> list[dict]:
    """Every resume piece but the engine's (checked as it loads: :func:`load_engine`), against
    fresh networks built from ``cfg`` (``guess``: the hand-guess head, with ``hand_coef``);
    nothing is changed.  Returns the resumed run's record of resumes (:mod:`.resume_record`)."""
    check_counters(data, cfg, path)
    check_rng(data.get("rng"), path)
    for name, network in trained_networks(model, critic, guess).items():
        check_weights(data.get(name), {k: tuple(v.shape) for k, v in
                                       network.state_dict().items()}, path, name)
    check_optimizer(data.get("optimizer"), trained_parameters(model, critic, guess), path)
    check_pool(data.get("pool"), cfg, path)
    check_fingerprints(data.get("fingerprints"), cfg.num_matches, path)
    before = config_from_dict(saved_values(data), "config", agents=False)  # (resumed_config's)
    return resume_record(data, before, cfg, path)


def load_engine(engine, state, path) -> None:
    """``engine.load_state_dict(state)``, its ``ValueError`` as a :class:`CheckpointError`
    naming ``engine`` (the engine checks every field before changing anything)."""
    try:
        engine.load_state_dict(state)
    except (ValueError, TypeError, KeyError) as error:
        raise _bad(path, "engine", f"is unusable: {str(error)[:200]}") from None


def restore_engine(engine, resume: dict, cfg: TrainConfig, path) -> None:
    """The engine's matches in progress from ``resume`` (:func:`load_engine`); when ``--set``
    changed the opponents and those matches cannot be restored with the new ones, a
    :class:`ConfigError` naming ``opponents`` (not a damaged checkpoint)."""
    try:
        load_engine(engine, resume.get("engine"), path)
    except CheckpointError as error:
        gone = opponents_gone(resume.get("engine"))  # (--set cannot take them away)
        if gone is not None:
            raise gone from None
        saved = resume["config"].get("opponents")
        if isinstance(saved, list) and saved != cfg.opponents:
            raise ConfigError(
                f"--set opponents: the run's matches in progress play its opponents {saved} "
                f"and cannot be restored with {cfg.opponents} ({str(error)[:200]}); keep the "
                "run's opponents (opponent_fraction=0 starts no new matches against them) or "
                "start a new run", "opponents") from None
        raise


def resumed_config(data: dict, overrides: dict, path) -> TrainConfig:
    """The run's config for ``--resume``: the checkpoint's saved config with the output folders
    reset to the defaults (``runs/``, ``checkpoints/``: a downloaded file never decides where
    files go), then the user's ``--set`` on top (which may choose other folders)."""
    saved = data.get("config")
    if not isinstance(saved, dict):
        raise _bad(path, "config", "must be a dict of config fields")
    values = saved_values(data)
    try:  # its agents are made below, after --set (which may replace one whose file is gone)
        before = config_from_dict(values, "config", agents=False)
    except ConfigError as error:
        raise _bad(path, "config", f"is invalid: {str(error)[:300]}") from None
    # said first: the counters or weights checked later would blame another piece
    problem = network_disagreement(saved, before, data["model_config"])
    engine = data.get("engine")
    learner = engine.get("learner") if isinstance(engine, dict) else None
    if problem is None and isinstance(learner, list) and len(learner) != before.num_matches:
        problem = (f"num_matches {before.num_matches} disagrees with the {len(learner)} "
                   "matches of its engine state")
    if problem:
        raise _bad(path, "config", problem)
    try:
        cfg = config_from_dict(dict(values, **overrides), f"{path} (config)",
                               origins={key: "--set" for key in overrides})
    except ConfigError as error:
        gone = opponents_gone(data.get("engine")) if error.key == "opponents" else None
        if gone is not None:  # (a ckpt: file gone that a match in progress needs)
            raise gone from None
        if error.key in AGENT_KEYS and error.key not in overrides:  # (a ckpt: file gone)
            raise ConfigError(f"{error} (the run's saved config names it: restore its file, "
                              f"or --set {error.key}=[...] without it)", error.key) from None
        raise
    if not before.opponents:  # a self-play run given a pool (one with a pool keeps its choice)
        check_pool_played(cfg, overrides, "--set")
    update = data.get("update")
    if "total_steps" in overrides and type(update) is int and update > cfg.num_updates:
        raise ConfigError(f"--set total_steps={cfg.total_steps}: the run has trained "
                          f"{update * cfg.batch_size} decisions already (update {update}); give "
                          "a larger total_steps", "total_steps")
    for key in FIXED_ON_RESUME:
        if getattr(cfg, key) != getattr(before, key):
            raise ConfigError(f"--set: {key} cannot change on --resume (the run has "
                              f"{getattr(before, key)!r}); start a new run instead", key)
    if (cfg.hand_coef > 0) != (before.hand_coef > 0):  # the head exists or not: its weights
        raise ConfigError(f"--set: hand_coef cannot change between 0 and > 0 on --resume (the "
                          f"run has {before.hand_coef!r}); start a new run instead", "hand_coef")
    pool = data.get("pool")
    snapshots = pool.get("snapshots") if isinstance(pool, dict) else None
    if "max_snapshots" in overrides and isinstance(snapshots, list) \
            and len(snapshots) > cfg.max_snapshots:  # (without --set: a damaged 'pool')
        raise ConfigError(f"--set max_snapshots={cfg.max_snapshots}: the run keeps "
                          f"{len(snapshots)} past snapshots already; give at least that many",
                          "max_snapshots")
    return cfg


def saved_values(data: dict) -> dict:
    """A checkpoint's saved config (a dict) as :func:`config_from_dict` takes it: the fields
    of runs from before them filled in, and the output folders the defaults (a file never
    decides where files go)."""
    values = {"action_features": data["model_config"].get("action_features", 0),
              "critic": "shared", "engine": "python"}  # runs from before these fields
    values.update(data["config"])
    if type(values["action_features"]) is bool:
        values["action_features"] = int(values["action_features"])
    for key in OUTPUT_FOLDERS:
        values[key] = TrainConfig.model_fields[key].default
    return values


def network_disagreement(saved: dict, cfg: TrainConfig, model_config: dict,
                         widened: bool = False) -> str | None:
    """How the network of ``cfg`` (the fields the saved config ``saved`` holds) differs from
    ``model_config`` (checked: ``check_model_config``), the weights' own, in words; ``None``
    when it does not.
    ``widened``: a distilled policy, whose layers may be wider than its run's
    (``training.distill --hidden-sizes``), never fewer or narrower."""
    hidden = model_config.get("hidden_sizes")
    theirs_by_key = {"hidden_sizes": list(hidden) if isinstance(hidden, (list, tuple)) else None,
                     "action_features": int(model_config.get("action_features", 0)),
                     "action_scorer": model_config.get("action_scorer", "bilinear")}
    for key, theirs in theirs_by_key.items():
        mine = getattr(cfg, key)
        if key not in saved or theirs is None or mine == theirs or (
                widened and key == "hidden_sizes" and len(mine) == len(theirs)
                and all(wide >= narrow for wide, narrow in zip(theirs, mine))):
            continue
        return (f"{key} {shown(mine)} disagrees with the weights' model_config {key} "
                f"{shown(theirs)}")
    return None


#: The config's agent specs (made after ``--set``: it may replace one whose file is gone).
AGENT_KEYS = ("opponents", "eval_agents")


#: Settings a resumed run keeps: they size the networks or the rollouts, count the steps, or
#: are held by the matches in progress and the saved generators (``seed``: the generators are
#: restored from the file, so a new seed would be recorded and never used; ``target`` and
#: ``max_rounds``: the matches in progress were dealt and scored under them).
FIXED_ON_RESUME = ("hidden_sizes", "action_features", "action_scorer", "scorer_sizes", "critic",
                   "engine", "num_matches", "num_steps", "seed", "target", "max_rounds",
                   "init_from", "init_temperature")  # the warm start: done when the run began


def resume_options(checkpoint, cfg: TrainConfig) -> str:
    """``--resume CHECKPOINT`` and :func:`output_folders`, quoted for a shell: the command-line
    options that continue this run where it wrote."""
    return f"--resume {shlex.quote(str(checkpoint))}{output_folders(cfg)}"


def output_folders(cfg: TrainConfig) -> str:
    """The ``--set`` options that keep a resumed run's output folders where this run wrote (a
    resume takes them from the command line, never from the checkpoint)."""
    default, options = TrainConfig(), ""
    for key in OUTPUT_FOLDERS:
        value = getattr(cfg, key)
        if value != getattr(default, key):  # as --set reads it back: 2024, yes, ~ stay text
            try:
                same = parse_overrides([f"{key}={value}"])[key] == value
            except ConfigError:  # "a: b: c", "010"
                same = False
            written = value if same else json.dumps(value)
            options += f" --set {shlex.quote(f'{key}={written}')}"
    return options
