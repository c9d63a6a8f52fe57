"""The labels file of :mod:`training.distill`: what a collection saves, read back with every
value checked (it may come from elsewhere: a shared ``.labels.npz`` is untrusted input).

An ``.npz`` of ``observation`` float32 ``[N, 238]``, ``action_mask`` bool ``[N, 113]``,
``action`` int ``[N]`` (the teacher's choice), ``values`` float32 ``[N, 113]`` (the teacher's
value of every legal action, 0 elsewhere; absent in files from before values were kept),
``match`` int64 ``[N]`` (which match of the collection each decision is from, for the
held-out split; absent in older files), ``seed`` (the collection's ``--seed``, which with the
match's env fixes its deals; absent in older files), ``obs_version`` (the observation layout's
version, :data:`~sevenrocks_env.observation.OBS_VERSION`: a file of another layout is refused
rather than misread; absent in older files, all of version 1) and ``teacher`` (its spec).  No
pickles are read, and no array is read before its header's shape, dtype and stored size are
checked against the bounds below (:mod:`training.labels_zip`: the zip level, and what the arrays
may inflate to).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from sevenrocks_env.arena_report import is_card_text
from sevenrocks_env.atomic_file import atomic_path
from sevenrocks_env.checks import shown
from sevenrocks_env.env import observation_bounds
from sevenrocks_env.observation import OBS_SIZE, OBS_VERSION
from sevenrocks_env.record import MAX_ROUNDS, MAX_TARGET
from sevenrocks_env.tiles import NUM_ACTIONS

from .labels_zip import LabelsError
from .labels_zip import check_inflation, not_labels, open_labels, read_headers, read_scalar

#: Labels a file may hold (bounds the work a labels file from elsewhere can ask for).
MAX_LABELS = 2_000_000
#: Largest teacher value a file may hold, in points (a match is won at a few hundred).
MAX_VALUE = 1e6
#: Labels files one training run may join.
MAX_FILES = 64
#: Match ids are below this (``env << 32 | match``: up to 2**30 envs).
MAX_MATCH_ID = 1 << 62
#: Collection seeds are below this (``training.distill``'s ``--seed`` range).
MAX_SEED = 1 << 63


def _bounds_of_any_game() -> tuple[np.ndarray, np.ndarray]:
    """Every observation the game can give, whatever its target (1..MAX_TARGET) and round
    limit: the union of those observation spaces (they differ only in the scores' columns)."""
    (low_1, high_1), (low_max, high_max) = (observation_bounds(target, MAX_ROUNDS)
                                            for target in (1, MAX_TARGET))
    return np.minimum(low_1, low_max), np.maximum(high_1, high_max)


_OBS_LOW, _OBS_HIGH = _bounds_of_any_game()


def save_labels(path, labels: dict, teacher: str, seed: int | None = None) -> Path:
    """Write atomically (a temporary file, then a rename): a collection stopped or killed while
    saving leaves its previous save whole, and so does a write that fails (the disk full: an
    ``OSError`` naming ``path``).  ``seed``: the collection's, recorded (``None``: labels that
    are not one collection's, saved without it)."""
    path = Path(path)
    extra = {key: labels[key] for key in ("values", "match") if labels.get(key) is not None}
    if seed is not None:
        if not 0 <= seed < MAX_SEED:
            raise ValueError(f"a collection's seed is in 0..2**63 - 1, got {shown(seed)}")
        extra["seed"] = np.array(seed, np.int64)
    path.parent.mkdir(parents=True, exist_ok=True)  # (its error names the folder)
    # a file object: given a name, numpy would add ".npz" to it (a failed write: atomic_path's
    # OSError names path)
    with atomic_path(path) as partial, open(partial, "wb") as file:
        np.savez_compressed(file, observation=labels["observation"],
                            action_mask=labels["action_mask"], action=labels["action"],
                            teacher=np.array(teacher),
                            obs_version=np.array(OBS_VERSION, np.int64), **extra)
    return path


#: Each array's trailing shape (its first axis is the number of labels); ``teacher`` is a string.
_LABEL_ARRAYS = {"observation": (OBS_SIZE,), "action_mask": (NUM_ACTIONS,), "action": (),
                 "values": (NUM_ACTIONS,), "match": ()}
#: Each array's dtype: (words, check).
_LABEL_DTYPES = {"observation": ("float32", lambda d: d == np.float32),
                 "action_mask": ("bool", lambda d: d == np.bool_),
                 "action": ("integers", lambda d: d.kind in "iu"),
                 "values": ("float32", lambda d: d == np.float32),
                 "match": ("integers", lambda d: d.kind in "iu")}
#: Longest teacher spec a file (or a checkpoint's distillation record) may hold.
MAX_TEACHER_CHARS = 4096
#: What a teacher spec may be, in words (it is printed, and written into the model card).
TEACHER_TEXT = f"one line of at most {MAX_TEACHER_CHARS} printable characters, no ` or |"


def is_teacher_text(text) -> bool:
    """Whether ``text`` may name a teacher: :data:`TEACHER_TEXT` (a spec from a file is
    printed to the terminal and written into a model card's Markdown table: the rule of every
    name a card shows, :func:`sevenrocks_env.arena_report.is_card_text`)."""
    return is_card_text(text, MAX_TEACHER_CHARS)


def _check_declared_shapes(path, file=None) -> dict[str, int]:
    """Read each array's ``.npy`` header (not its data) and refuse a shape or dtype that would
    size an allocation past the bounds: ``np.load`` allocates what a header declares; and
    arrays inflating past :data:`~training.labels_zip.MAX_INFLATION` times the file's size.
    Returns the label count each label array's header declares (``{"action": N, ...}``).
    ``file``: ``path`` opened by :func:`~training.labels_zip.open_labels` (else opened here)."""
    if file is None:
        with open_labels(path) as opened:
            return _check_declared_shapes(path, opened)
    declared = read_headers(path, file, {f"{key}.npy" for key in (*_LABEL_ARRAYS, "teacher",
                                                                  "seed", "obs_version")})
    absent = [key for key in ("observation", "action_mask", "action", "teacher")
              if key not in declared]
    if absent:
        raise LabelsError(f"{path}: not a labels file (it has no '{absent[0]}')")
    version = declared.get("obs_version")
    if version is not None and version[0] == () and version[1].kind in "iu" and \
            version[1].itemsize <= 8:  # (another version's arrays may have other shapes too)
        check_version(path, read_scalar(path, file, "obs_version"))
    for key, (shape, dtype, (header, stored)) in declared.items():
        if key == "teacher":
            if not (shape == () and dtype.kind == "U"
                    and dtype.itemsize <= 4 * MAX_TEACHER_CHARS):
                raise LabelsError(f"{path}: 'teacher' declares {str(dtype)[:20]} "
                                  f"{str(shape)[:60]}: not a text of at most "
                                  f"{MAX_TEACHER_CHARS} characters")
        elif key in ("seed", "obs_version"):
            if not (shape == () and dtype.kind in "iu" and dtype.itemsize <= 8):
                raise LabelsError(f"{path}: '{key}' declares {str(dtype)[:20]} "
                                  f"{str(shape)[:60]}: not one integer")
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
    check_inflation(path, file, declared)
    return {key: shape[0] for key, (shape, _, _) in declared.items()
            if key not in ("teacher", "seed", "obs_version")}


def check_version(path, version: int) -> None:
    """:class:`LabelsError` for labels of another observation layout than this sevenrocks's."""
    if version != OBS_VERSION:
        raise LabelsError(f"{path}: labels of observation version {version}; this "
                          f"sevenrocks uses v{OBS_VERSION} ({OBS_SIZE} features): its "
                          "observations would be misread. Collect them again with this version.")


def _first_outside_the_game(obs: np.ndarray, rows: int = 65_536) -> int | None:
    """The first row of ``obs`` with a value outside every observation space of the game (NaN
    too), or ``None``; checked ``rows`` at a time (the masks of 2 M rows at once: 1.4 GB)."""
    for start in range(0, len(obs), rows):
        block = obs[start:start + rows]
        outside = np.flatnonzero(~((block >= _OBS_LOW) & (block <= _OBS_HIGH)).all(axis=1))
        if len(outside):
            return start + int(outside[0])
    return None


def _first_label_not_the_best(values: np.ndarray, mask: np.ndarray, action: np.ndarray,
                              rows: int = 65_536) -> int | None:
    """The first row whose label is not a best value among its legal actions, or whose illegal
    actions' values are not 0 (what a collection writes, :func:`save_labels`), or ``None``;
    checked ``rows`` at a time.  Ties are allowed: a collection breaks them to the lower action."""
    for start in range(0, len(values), rows):
        block, legal = values[start:start + rows], mask[start:start + rows]
        best = np.where(legal, block, -np.inf).max(axis=1)
        chosen = block[np.arange(len(block)), action[start:start + rows]]
        wrong = np.flatnonzero((chosen != best) | (np.where(legal, 0, block) != 0).any(axis=1))
        if len(wrong):
            return start + int(wrong[0])
    return None


def load_labels(path) -> tuple[dict, str]:
    """A labels file, every array checked (shapes, dtypes, finite, bounded values, each label
    legal under its mask and the best of its values); :class:`LabelsError` naming what is wrong.  No pickles are read.
    ``values``, ``match`` and ``seed`` (the collection's, an int) are ``None`` for files from
    before they were kept."""
    with open_labels(path) as file:  # one open file, checked and read: never swapped between
        _check_declared_shapes(path, file)
        try:
            file.seek(0)
            with np.load(file, allow_pickle=False) as data:
                arrays = {key: data[key] for key in ("observation", "action_mask", "action",
                                                     "teacher")}
                for key in ("values", "match", "seed", "obs_version"):
                    arrays[key] = data[key] if key in data.files else None
        except MemoryError:
            raise
        except Exception as error:  # a damaged member (its CRC, its compressed data)
            raise not_labels(path, error) from None
    version = arrays["obs_version"]  # (its header said: one integer)
    if version is not None:
        check_version(path, int(version))
    obs, mask, action = arrays["observation"], arrays["action_mask"], arrays["action"]
    n = len(action) if action.ndim == 1 else 0  # (len of a 0-d array is a TypeError)
    if not 0 < n <= MAX_LABELS:
        raise LabelsError(f"{path}: 'action' must be 1-D with 1..{MAX_LABELS} labels")
    if obs.shape != (n, OBS_SIZE) or obs.dtype != np.float32:
        raise LabelsError(f"{path}: 'observation' must be float32 of shape ({n}, {OBS_SIZE})")
    outside = _first_outside_the_game(obs)
    if outside is not None:
        raise LabelsError(f"{path}: observation {outside} is not one the game gives (a value "
                          "outside the observation space, or not finite)")
    if mask.shape != (n, NUM_ACTIONS) or mask.dtype != np.bool_:
        raise LabelsError(f"{path}: 'action_mask' must be bool of shape ({n}, {NUM_ACTIONS})")
    if action.dtype.kind not in "iu" or action.min() < 0 or action.max() >= NUM_ACTIONS:
        raise LabelsError(f"{path}: 'action' must be integers in 0..{NUM_ACTIONS - 1}")
    illegal = np.flatnonzero(~mask[np.arange(n), action])
    if len(illegal):
        raise LabelsError(f"{path}: label {illegal[0]} ({action[illegal[0]]}) is not legal "
                          "under its mask")
    values = arrays["values"]
    # (min and max are NaN if a value is: a comparison with NaN is False; no array is made)
    if values is not None and (values.shape != mask.shape or values.dtype != np.float32
                               or not -MAX_VALUE <= values.min() <= values.max() <= MAX_VALUE):
        raise LabelsError(f"{path}: 'values' must be float32 of shape ({n}, {NUM_ACTIONS}) "
                          f"with finite values within +-{MAX_VALUE:g}")
    unlike = None if values is None else _first_label_not_the_best(values, mask, action)
    if unlike is not None:
        raise LabelsError(f"{path}: label {unlike} ({action[unlike]}) is not the teacher's best "
                          "value among its legal actions, or an illegal action has a value "
                          "other than 0 (labels and values from two teachers?)")
    match = arrays["match"]
    if match is not None and (match.shape != (n,) or match.dtype.kind not in "iu"
                              or match.min() < 0 or match.max() >= MAX_MATCH_ID):
        raise LabelsError(f"{path}: 'match' must be {n} integers in 0..2**62 - 1")
    seed = arrays["seed"]
    if seed is not None and (seed.shape != () or seed.dtype.kind not in "iu"
                             or not 0 <= int(seed) < MAX_SEED):
        raise LabelsError(f"{path}: 'seed' must be one integer in 0..2**63 - 1")
    teacher = arrays["teacher"]
    if teacher.ndim != 0 or teacher.dtype.kind != "U" or not is_teacher_text(str(teacher)):
        raise LabelsError(f"{path}: 'teacher' must be a spec: {TEACHER_TEXT}")
    return {"observation": obs, "action_mask": mask,
            "action": action.astype(np.int64, copy=False), "values": values,
            "match": None if match is None else match.astype(np.int64, copy=False),
            "seed": None if seed is None else int(seed)}, str(teacher)


#: Random odd weights of :func:`_row_keys` (fixed: the keys are compared within one run only).
_ROW_WEIGHTS = np.random.default_rng(20261204).integers(
    1, 2 ** 63, OBS_SIZE, dtype=np.uint64) | np.uint64(1)


def _row_keys(labels: dict, rows: int = 65_536) -> np.ndarray:
    """A 64-bit key for each decision, whoever labelled it: a weighted sum, modulo 2**64, of
    its observation's float32 bits (the teacher's choice is left out, so the same decisions
    labelled by two teachers have the same keys)."""
    keys = np.empty(len(labels["action"]), np.uint64)
    for start in range(0, len(keys), rows):
        bits = labels["observation"][start:start + rows].view(np.uint32).astype(np.uint64)
        with np.errstate(over="ignore"):
            keys[start:start + rows] = (bits * _ROW_WEIGHTS).sum(1)
    return keys


def _refuse_a_copy(path, keys: np.ndarray, seen: dict) -> None:
    """:class:`LabelsError` if two files share more than half of the smaller one's decisions
    (``seen``: path -> keys of the files read before): a copy, even saved anew, reordered or
    cut (a part file beside its joined file), or the same collection (seed and student) labelled
    by another teacher, would put the same decisions on both sides of the held-out split
    (held-out agreement 1.0 for a copy).  Different collections share a few positions (an
    opening hand), never half."""
    for other, known in seen.items():
        if np.isin(keys, known).sum() > 0.5 * min(len(keys), len(known)):
            raise LabelsError(f"{path}: most of its decisions are those of {other} (a copy, one "
                              "collection labelled twice, or a student that barely moved "
                              "collected on its init's --seed?): the same decisions would be "
                              "held out and trained on (collect again with another --seed)")
    seen[path] = keys


def _refuse_the_same_deals(path, labels: dict, teacher: str, seen: dict) -> None:
    """:class:`LabelsError` if two files record the same collection seed and teacher and share
    a match's env (``seen``: path -> (seed, teacher, envs) of the files read before): decision
    ``(step, env)`` of a collection is dealt from its seed and env, so they hold the same
    decisions (with one student; with two, each match's first ones, before their students'
    moves part: a few percent), whatever :func:`_refuse_a_copy` finds of them.  The part
    files of one collection (disjoint spans of envs) join; a file without match ids shares
    every env."""
    if labels["seed"] is None:  # an older file: the copy check only
        return
    envs = None if labels["match"] is None else np.unique(labels["match"] >> 32)
    for other, (seed, its_teacher, its_envs) in seen.items():
        if (seed, its_teacher) == (labels["seed"], teacher) and (
                envs is None or its_envs is None or len(np.intersect1d(envs, its_envs))):
            raise LabelsError(f"{path}: collected with the seed ({seed}) and teacher of {other} "
                              "in the same matches: the same deals, so the same decisions held "
                              "out and trained on (every match's first ones; all of them with "
                              "the same student): collect again with another --seed")
    seen[path] = (labels["seed"], teacher, envs)


def labels_file_names(values) -> list[str]:
    """The files of ``--labels`` (a list of values, or one): each value names one file as
    given, commas included, except a value that names nothing and holds commas, the older form
    ``"a.npz,b.npz"``: split on them, blanks dropped, each part naming a file."""
    names = []
    for value in [values] if isinstance(values, str) else values:
        if "," not in value or os.path.lexists(value):
            names.append(value)
            continue
        parts = [part.strip() for part in value.split(",") if part.strip()]
        if len(names) + len(parts) > MAX_FILES:  # (bounds the look-ups below)
            raise LabelsError(f"give 1 to {MAX_FILES} labels files, got more")
        missing = [part for part in parts if not os.path.lexists(part)]
        if missing:
            raise LabelsError(f"'{value}': no such file, nor, read as files separated by "
                              f"commas, is '{missing[0]}'")
        names += parts
    if not 0 < len(names) <= MAX_FILES:
        raise LabelsError(f"give 1 to {MAX_FILES} labels files, got {len(names)}")
    return names


def load_labels_files(paths, need_values: bool = False) -> tuple[dict, str]:
    """The labels of ``--labels`` values (``["a.npz", "b.npz"]``, or the older ``"a.npz,b.npz"``:
    :func:`labels_file_names`), read by :func:`join_labels_files`."""
    return join_labels_files(labels_file_names(paths), need_values)


def join_labels_files(files: list[str], need_values: bool = False) -> tuple[dict, str]:
    """The labels of one file or of several (each name one file: several collections trained
    on together), each file checked by :func:`load_labels`.  Match ids are renumbered so that
    no two files share one; a file without ids counts each decision as its own match.

    The label counts the files' headers declare are added up before any file is read; a file
    may be named once, and one collection's decisions read once (a copy, or a collection
    dealt the same matches, would put the same decisions on both sides of the held-out split);
    ``need_values`` refuses files without the teacher's values, naming them.  One file's arrays
    are returned as read; several files are copied, one at a time, into one array each (2 M
    labels are 3 GB: the files' arrays and their join at once would be twice that)."""
    resolved = [Path(path).resolve() for path in files]
    if len(set(resolved)) != len(resolved):
        raise LabelsError("a labels file is named twice")
    headers = [_check_declared_shapes(path) for path in files]
    counts = [max(header.values()) for header in headers]  # (a file's arrays agree, once read)
    total = sum(counts)
    if total > MAX_LABELS:
        raise LabelsError(f"{len(files)} files hold {total:,} labels, more than {MAX_LABELS:,}")
    lacking = [path for path, header in zip(files, headers) if "values" not in header]
    if need_values and lacking:
        raise LabelsError(f"{shown(lacking[0])} has no teacher's values (collected before values "
                          f"were kept), and a temperature > 0 needs them")
    joined = None if len(files) == 1 else _empty_labels(total, values=not lacking)
    teachers, row, match_offset, seen, deals = [], 0, 0, {}, {}
    for path, header, count in zip(files, headers, counts):
        labels, teacher = load_labels(path)
        n = len(labels["action"])
        if n != count or (labels["values"] is None) == ("values" in header):
            raise LabelsError(f"{path}: the file changed while it was read")
        if len(files) > 1:  # what two files must not share
            _refuse_the_same_deals(path, labels, teacher, deals)
            _refuse_a_copy(path, _row_keys(labels), seen)
        match = labels.pop("match")
        local = np.arange(n) if match is None else np.unique(match, return_inverse=True)[1]
        labels["match"] = match_offset + local.astype(np.int64, copy=False)
        match_offset += int(local.max()) + 1
        del labels["seed"]
        if joined is None:
            joined = labels
        else:
            for key, array in joined.items():
                if array is not None:
                    array[row:row + n] = labels[key]
        del labels, match, local  # this file's arrays: freed before the next file is read
        row += n
        teachers.append(teacher)
    return joined, " + ".join(dict.fromkeys(teachers))[:MAX_TEACHER_CHARS]


def _empty_labels(n: int, values: bool) -> dict:
    """Arrays for ``n`` labels, to be filled (``values``: with the teacher's values)."""
    return {"observation": np.empty((n, OBS_SIZE), np.float32),
            "action_mask": np.empty((n, NUM_ACTIONS), np.bool_),
            "action": np.empty(n, np.int64),
            "values": np.empty((n, NUM_ACTIONS), np.float32) if values else None,
            "match": np.empty(n, np.int64)}
