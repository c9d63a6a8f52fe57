"""Reading a policy checkpoint file safely: size, archive, safe unpickler, layout, network bounds.

A checkpoint is an untrusted file (``docs/security.md``).  :func:`read_checkpoint` returns its
validated dict without building anything; :func:`check_model_config` bounds the network it
declares.  :mod:`sevenrocks_env.policy` builds the network from them (``build_model``,
``load_policy``) and re-exports these names.
"""

from __future__ import annotations

import difflib
import os
import re
import zipfile
from importlib import resources
from pathlib import Path

import torch

from .checks import checked_path, is_int, shown
from .observation import OBS_SIZE, OBS_VERSION
from .pickle_scan import PickleExpansionError, expanded_size
from .policy_features import ActionFeatures
from .policy_scorer import DEFAULT_SIZES as DEFAULT_SCORER_SIZES, MAX_LAYERS as \
    MAX_SCORER_LAYERS, MAX_WIDTH as MAX_SCORER_WIDTH
from .textfile import not_regular, shown_path
from .tiles import NUM_ACTIONS
from .torch_archive import CheckpointError, read_archive, refusal_reason

CHECKPOINT_FORMAT = "sevenrocks-ppo/1"
#: Bounds on a network a checkpoint (an untrusted file) may declare, checked before anything is
#: allocated: at most 8 hidden layers of at most 4096 units (~130 M parameters at the extreme).
MAX_HIDDEN_LAYERS = 8
MAX_HIDDEN_WIDTH = 4096
HIDDEN_SIZES = f"1-{MAX_HIDDEN_LAYERS} layer widths (1-{MAX_HIDDEN_WIDTH})"


def are_hidden_sizes(value, plain: bool = True) -> bool:
    """``value`` is a network's hidden layer widths within the bounds above: a list or tuple of
    1 to 8 ints of 1 to 4096 -- plain ints (``plain``: a file's values, kept as they are), or
    any ints, NumPy's too (a caller's arguments, converted)."""
    return isinstance(value, (list, tuple)) and 0 < len(value) <= MAX_HIDDEN_LAYERS and all(
        (type(width) is int and 0 < width <= MAX_HIDDEN_WIDTH) if plain
        else is_int(width, 1, MAX_HIDDEN_WIDTH) for width in value)
#: Per-action scorers (``action_scorer``): ``bilinear`` (features . weights(state)) or ``mlp``
#: (:class:`~sevenrocks_env.policy_scorer.PlacementScorer`, hidden layers ``scorer_sizes``).
ACTION_SCORERS = ("bilinear", "mlp")
#: The keys a ``model_config`` may hold (``PolicyNet.model_config``; every shipped file's).
MODEL_CONFIG_KEYS = frozenset({"hidden_sizes", "action_features", "value_head", "action_scorer",
                               "scorer_sizes"})
#: Largest checkpoint file read (the shipped policy is ~1 MB; a resumable one a few MB).
MAX_CHECKPOINT_BYTES = 1 << 30

#: ``load_policy(SHIPPED)`` / ``ckpt:shipped``: the policy installed with the package.
SHIPPED = "shipped"
SHIPPED_FILE = "sevenrocks_ppo.pt"



def shipped_path() -> Path:
    """The shipped policy's file: package data (``sevenrocks_env/shipped/``), or, in a source
    checkout where that is missing, ``checkpoints/shipped/`` beside the package."""
    packaged = resources.files("sevenrocks_env") / "shipped" / SHIPPED_FILE
    if packaged.is_file():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[1] / "checkpoints" / "shipped" / SHIPPED_FILE


def resolve_path(path) -> Path:
    """``"shipped"`` -> :func:`shipped_path`; any other path as given, a leading ``~`` expanded
    (``ckpt:~/x.pt``: no shell expands it there; ``sb3:`` paths are expanded too).  Raises
    :class:`CheckpointError` when it is not a regular file, saying what it is instead (missing:
    ``no such file: PATH``, with the working folder for a relative path; a folder; a device);
    ``TypeError`` naming the path's type when it is not a ``str`` or ``os.PathLike`` of one."""
    text = checked_path("checkpoint path", path,
                        f"a str or os.PathLike ({SHIPPED!r}: the installed policy)")
    if text != SHIPPED:
        try:
            return existing_file(Path(os.path.expanduser(text)))
        except CheckpointError as error:  # ckpt:shiped (not for sb3:, which has no shipped)
            if str(error).startswith("no such file: ") and "/" not in text and \
                    difflib.get_close_matches(text.lower(), [SHIPPED], 1, 0.75):
                raise CheckpointError(f"{error}; did you mean {SHIPPED!r} (the installed "
                                      "policy)?") from None
            raise
    shipped = shipped_path()
    if not shipped.is_file():
        raise CheckpointError(
            f"the shipped policy is not installed with this package (no file "
            f"{shown_path(shipped)}): a wheel built from a checkout without symbolic links "
            "(git's core.symlinks=false, Windows' default) leaves it out; reinstall from a "
            "checkout with them, or give the policy's path")
    return existing_file(shipped)


def existing_file(resolved: Path) -> Path:
    """``resolved`` if it is a regular file; :class:`CheckpointError` saying what it is
    instead (see :func:`resolve_path`)."""
    if "\x00" in str(resolved):  # os.stat's "embedded null byte" named no path
        raise CheckpointError(f"checkpoint path {shown(str(resolved))} contains a NUL "
                              "character (\\x00): no file has such a name")
    try:
        mode = resolved.stat().st_mode  # one look, and only a missing path is "no such file"
    except FileNotFoundError:
        where = "" if resolved.is_absolute() else f" (relative to {os.getcwd()})"
        if str(resolved).startswith(("ckpt:", "policy:")):  # search:policy=ckpt:shipped
            where += f"; a path or {SHIPPED!r} is expected here, not an agent spec"
        raise CheckpointError(f"no such file: {shown_path(resolved)}{where}") from None
    except OSError as error:  # e.g. a name longer than the file system allows
        raise CheckpointError(f"cannot read checkpoint path "
                              f"{shown_path(str(resolved)[:80])}...: {error.strerror}") from None
    problem = not_regular(mode, "checkpoint file")  # a folder, a device, a pipe
    if problem:
        raise CheckpointError(f"{shown_path(resolved)} {problem}")
    return resolved


def load_torch_file(path, max_bytes: int | None = None):
    """What ``torch.save`` wrote to ``path`` (a regular file, already resolved), read as every
    checkpoint of this project is (``docs/security.md``): at most ``max_bytes``, its archive
    checked from Python's index (layout, entry kinds and count, the pickle's size), its pickle
    scanned for objects that would take hours to build, then ``torch.load(weights_only=True)``
    and its tensors' bytes checked against what the archive stores.  Anything wrong is one
    :class:`CheckpointError`.  For any torch file a user may pass in (the checkpoints here,
    and e.g. ``examples/openspiel_dqn.py``'s Q-networks); ``max_bytes`` defaults to
    :data:`MAX_CHECKPOINT_BYTES`."""
    max_bytes = MAX_CHECKPOINT_BYTES if max_bytes is None else max_bytes
    if path.stat().st_size > max_bytes:
        raise CheckpointError(f"{path} is larger than {max_bytes >> 20} MB; "
                              "not a sevenrocks checkpoint")
    pickled, tensor_bytes = read_archive(path)
    try:  # before unpickling: a few hundred bytes can describe a key that takes hours to hash
        expanded_size(pickled, 2 * len(pickled) + 10_000)
    except PickleExpansionError as error:
        raise CheckpointError(f"{path} is not a sevenrocks checkpoint: {error}") from None
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except (RuntimeError, EOFError, OSError, zipfile.BadZipFile, ValueError, KeyError) as error:
        raise CheckpointError(f"{path} is not a readable checkpoint (truncated or not a torch "
                              f"file: {refusal_reason(error)})") from None
    except Exception as error:  # e.g. pickle.UnpicklingError: an object weights_only refuses
        blocked = re.search(r"GLOBAL ([\w.]{1,200})", str(error))  # torch names the global
        raise CheckpointError(
            f"{path} was refused by the safe loader (it holds more than tensors and plain "
            f"Python values): {type(error).__name__}"
            + (f", the blocked global {shown(blocked[1])}: it would run code if loaded unsafely"
               if blocked else "")) from None
    _check_tensor_bytes(data, tensor_bytes, path)
    return data


def read_checkpoint(path) -> dict:
    """Load and validate a checkpoint dict (safely, ``weights_only=True``); raise
    :class:`CheckpointError` with a clear message when it cannot be used."""
    path = resolve_path(path)
    data = load_torch_file(path)
    if isinstance(data, dict) and "format" not in data and data and all(
            isinstance(value, torch.Tensor) for value in data.values()):
        raise CheckpointError(f"{path} looks like a bare state_dict (torch.save(model."
                              "state_dict())), not a sevenrocks policy checkpoint: save it with "
                              "the trainer's checkpoint (training.checkpoint) or training.ship")
    version = data.get("format") if isinstance(data, dict) else None
    if isinstance(version, str) and re.fullmatch(r"sevenrocks-ppo/\d{1,9}", version) and \
            version != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path} was made by another version of sevenrocks (format "
                              f"{shown(version)}): not a sevenrocks policy checkpoint this "
                              f"version reads ({CHECKPOINT_FORMAT!r})")
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        found = shown(data.get("format")) if isinstance(data, dict) else type(data).__name__
        raise CheckpointError(f"{path} is not a sevenrocks policy checkpoint "
                              f"(format {found}, expected {CHECKPOINT_FORMAT!r})")
    layout = (data.get("obs_version"), data.get("obs_size"), data.get("num_actions"))
    if not all(type(value) is int for value in layout) or layout != (OBS_VERSION, OBS_SIZE,
                                                                      NUM_ACTIONS):
        ours = (f"this sevenrocks uses v{OBS_VERSION} ({OBS_SIZE} features, {NUM_ACTIONS} "
                "actions)")
        missing = [key for key, value in zip(("obs_version", "obs_size", "num_actions"), layout)
                   if value is None]
        if missing:  # (it read "layout vNone")
            raise CheckpointError(f"{path} does not say which observation layout it was trained "
                                  f"on (no {', '.join(missing)}); {ours}")
        layout = tuple(shown(value) for value in layout)
        raise CheckpointError(
            f"{path} was trained on observation layout v{layout[0]} ({layout[1]} features, "
            f"{layout[2]} actions); {ours}. Retrain or use a matching sevenrocks version.")
    for key in ("model", "model_config"):
        if not isinstance(data.get(key), dict):
            raise CheckpointError(f"{path} has no {key!r} entry")
    check_model_config(data["model_config"], path)  # every reader gets a checked one
    return data


def _check_tensor_bytes(data, stored: int, path) -> None:
    """Refuse tensors that hold more bytes than the archive stores (``stored``): a tensor
    expanded from one element (stride 0), or one tensor referenced many times, would make a
    tiny file allocate gigabytes once a caller copies or builds from it.  ``data``'s size is
    bounded by the pickle scan, so walking it is cheap."""
    held, todo = 0, [data]
    while todo:
        value = todo.pop()
        if isinstance(value, torch.Tensor):
            held += value.numel() * value.element_size()
            todo.append(value._backward_hooks)  # None, or the dict the file gave the rebuild
        elif isinstance(value, dict):
            todo.extend(value.keys())  # a tensor may be a key
            todo.extend(value.values())
        elif isinstance(value, (list, tuple, set, frozenset)):  # the safe loader makes sets too
            todo.extend(value)
        # attributes the file set (the safe loader's BUILD sets an OrderedDict's, a tensor's)
        todo.extend(getattr(value, "__dict__", {}).values())
    if held > stored:
        raise CheckpointError(f"{path} is not a sevenrocks checkpoint: its tensors hold "
                              f"{held:,} bytes but the file stores {stored:,} (tensors expanded "
                              "from fewer elements, or one tensor used many times)")


def check_model_config(config, path="checkpoint") -> tuple[list[int], int, bool, dict]:
    """``(hidden_sizes, action_features, value_head, scorer)`` of a checkpoint's
    ``model_config``, each checked and bounded (:data:`MAX_HIDDEN_LAYERS`,
    :data:`MAX_HIDDEN_WIDTH`, :data:`MAX_SCORER_LAYERS`, :data:`MAX_SCORER_WIDTH`); ``scorer``
    is ``{"action_scorer": ..., "scorer_sizes": [...]}`` (no ``action_scorer``: bilinear)."""
    if not isinstance(config, dict):
        raise CheckpointError(f"{path}: model_config must be a dict")
    unknown = [key for key in config if not (type(key) is str and key in MODEL_CONFIG_KEYS)]
    if unknown:  # a typo ("activation") would be ignored, then copied into exports and cards
        raise CheckpointError(f"{path}: model_config has unknown keys "
                              f"{', '.join(shown(key) for key in unknown[:5])}"
                              f"{' ...' if len(unknown) > 5 else ''} (known: "
                              f"{', '.join(sorted(MODEL_CONFIG_KEYS))})")
    hidden = config.get("hidden_sizes")
    if not are_hidden_sizes(hidden):
        raise CheckpointError(f"{path}: model_config.hidden_sizes must be {HIDDEN_SIZES}, got "
                              f"{shown(hidden)}")
    features = config.get("action_features", False)
    if type(features) is bool:  # checkpoints from before feature versions
        features = int(features)
    if type(features) is not int or (features and features not in ActionFeatures.SIZES):
        raise CheckpointError(f"{path}: model_config.action_features must be 0 or a feature "
                              f"version {sorted(ActionFeatures.SIZES)}, got {shown(features)}")
    value_head = config.get("value_head", True)
    if type(value_head) is not bool:
        raise CheckpointError(f"{path}: model_config.value_head must be true or false")
    scorer = config.get("action_scorer", "bilinear")  # checkpoints from before the mlp scorer
    if not (type(scorer) is str and scorer in ACTION_SCORERS):
        raise CheckpointError(f"{path}: model_config.action_scorer must be one of "
                              f"{', '.join(ACTION_SCORERS)}, got {shown(scorer)}")
    if scorer == "mlp" and not features:
        raise CheckpointError(f"{path}: model_config.action_scorer 'mlp' needs action features")
    sizes = config.get("scorer_sizes", list(DEFAULT_SCORER_SIZES))
    if not (isinstance(sizes, (list, tuple)) and 0 < len(sizes) <= MAX_SCORER_LAYERS
            and all(type(h) is int and 0 < h <= MAX_SCORER_WIDTH for h in sizes)):
        raise CheckpointError(f"{path}: model_config.scorer_sizes must be 1-{MAX_SCORER_LAYERS} "
                              f"layer widths (1-{MAX_SCORER_WIDTH}), got {shown(sizes)}")
    return list(hidden), features, value_head, {"action_scorer": scorer,
                                                "scorer_sizes": list(sizes)}


__all__ = ["ACTION_SCORERS", "CHECKPOINT_FORMAT", "CheckpointError", "HIDDEN_SIZES",
           "MAX_CHECKPOINT_BYTES", "MAX_HIDDEN_LAYERS", "MAX_HIDDEN_WIDTH", "MODEL_CONFIG_KEYS",
           "SHIPPED", "are_hidden_sizes", "check_model_config", "load_torch_file",
           "read_checkpoint", "resolve_path", "shipped_path"]
