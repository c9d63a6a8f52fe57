"""``argparse`` types for the benchmark and example scripts: a bad number or device is
argparse's one-line usage error (exit 2: ``argument --pairs: must be an int in [1,
1000000000000], got 0``), never a traceback from deep inside a run that has started.

    parser.add_argument("--pairs", type=count, default=100)
    parser.add_argument("--seed", type=seed, default=0)
    parser.add_argument("--seconds", type=seconds, default=3.0)
    parser.add_argument("--device", type=device, default="cpu")
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from .atomic_file import OutputError, check_output_file, check_output_folder
from .checks import shown
from .dealing import MAX_SEED

#: The largest count a script takes (pairs, steps, decisions): far above any real run.  A
#: product of two of them can pass int64's 9.2e18, so a script that multiplies counts bounds
#: the product itself (as ``benchmarks/cut_bias.py`` does).
MAX_COUNT = 10 ** 12


def int_in(low: int, high: int):
    """An argparse type: an int in ``[low, high]``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            digits = text.strip().lstrip("+-").replace("_", "") if isinstance(text, str) else ""
            if digits.isdecimal() and len(digits) > sys.get_int_max_str_digits():
                # an int all the same, past the digits int() reads (4300): far out of range
                raise argparse.ArgumentTypeError(f"must be an int in [{low}, {high}], got an "
                                                 f"int of {len(digits)} digits") from None
            raise argparse.ArgumentTypeError(f"must be an int, got {text[:40]!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be an int in [{low}, {high}], "
                                             f"got {shown(value)}")
        return value
    parse.__name__ = f"int in [{low}, {high}]"
    return parse


#: The longest time budget a script takes (``--seconds``: per row, per run): an hour, far above
#: any real run (``--seconds 1e12`` was taken, a run of 30,000 years).
MAX_SECONDS = 3600.0

#: The arena's bounds (:func:`sevenrocks_env.arena.check_settings`): pairs one run plays (weeks
#: of play even for the fastest agents), worker processes, pairs the batched arena steps
#: together (``2 *`` this many envs: ~300 MB of engine state and a policy's activations).
MAX_PAIRS, MAX_WORKERS, MAX_BATCH = 10 ** 9, 64, 1 << 16
#: torch threads a script may ask for (far more crashed torch: a segmentation fault at 100,000).
MAX_THREADS = 256

count = int_in(1, MAX_COUNT)
non_negative_int = int_in(0, MAX_COUNT)
pairs = int_in(1, MAX_PAIRS)
non_negative_pairs = int_in(0, MAX_PAIRS)  # 0: skip that arena
workers = int_in(1, MAX_WORKERS)
batch = int_in(1, MAX_BATCH)
threads = int_in(1, MAX_THREADS)
seed = int_in(0, MAX_SEED)  # a deal seed (the arena's, the engine's)
#: A training run's seed: the trainer's config, numpy's legacy ``np.random.seed`` (SB3, RLlib)
#: and OpenSpiel take seeds below 2**32.
training_seed = int_in(0, 2 ** 32 - 1)


def _real(text: str, positive: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text[:40]!r}") from None
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise argparse.ArgumentTypeError(
            f"must be a finite number {'> 0' if positive else '>= 0'}, got {text[:40]}")
    return value


def positive_real(text: str) -> float:
    """An argparse type: a finite number > 0 (``nan`` and ``inf`` are refused)."""
    return _real(text, positive=True)


def non_negative_real(text: str) -> float:
    """An argparse type: a finite number >= 0."""
    return _real(text, positive=False)


def real_at_most(high: float, positive: bool = True):
    """An argparse type: a finite number > 0 (>= 0 unless ``positive``) and at most ``high``:
    the bound of what the option sets, refused as the command line is read, not hours in."""
    def parse(text: str) -> float:
        value = _real(text, positive)
        if value > high:
            raise argparse.ArgumentTypeError(
                f"must be a number in {'(' if positive else '['}0, {high:g}], got {text[:40]}")
        return value
    parse.__name__ = f"number in {'(' if positive else '['}0, {high:g}]"
    return parse


def seconds(text: str) -> float:
    """An argparse type: a time budget, a finite number of seconds in (0, :data:`MAX_SECONDS`]."""
    value = _real(text, positive=True)
    if value > MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds in (0, {MAX_SECONDS:g}], got {text[:40]}")
    return value


def _output(check):
    """An argparse type: a path ``check`` (:mod:`~sevenrocks_env.atomic_file`) accepts, checked
    before any work; missing folders are the script's to make."""
    def parse(text: str) -> str:
        try:
            check(text)
        except OutputError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        return text
    parse.__name__ = check.__name__.removeprefix("check_")
    return parse


#: A file the script may write (not a folder or a device, in a folder that can take a file).
output_file = _output(check_output_file)
#: A folder the script may write files in.
output_folder = _output(check_output_folder)

#: The pictures a script's ``--plot`` writes: matplotlib's format is the file's suffix.
PICTURE_FORMATS = ("png", "svg", "pdf")


def picture_format(path) -> str | None:
    """The format a picture at ``path`` is saved in, from its suffix (``r.PDF``: ``"pdf"``);
    ``None`` for a suffix not in :data:`PICTURE_FORMATS`."""
    suffix = Path(path).suffix.lower().removeprefix(".")
    return suffix if suffix in PICTURE_FORMATS else None


def picture_file(text: str) -> str:
    """An argparse type: an :data:`output_file` named ``.png``, ``.svg`` or ``.pdf``, checked
    before minutes of measuring; save it with ``format=picture_format(path)`` (a ``.pdf`` of
    PNG bytes was written before)."""
    if picture_format(text) is None:
        raise argparse.ArgumentTypeError(f"give a file name ending in .png, .svg or .pdf, got "
                                         f"{text[:300]!r}")
    return output_file(text)


def one_line_errors(work) -> int:
    """A script's exit status: 0 once ``work()`` has run; 2 if it raised ``ValueError`` (bad
    input found inside the run: a labels file, a checkpoint, a spec), printed as one line,
    ``error: ...``, on stderr, as argparse prints a bad option."""
    try:
        work()
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


def device(text: str) -> str:
    """An argparse type: a device the batched engine runs on (``cpu``, ``cuda``, ``cuda:1``
    where there is one), as its name."""
    from .batched.inputs import checked_device  # torch: only for scripts that need it
    try:
        return str(checked_device(text))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


__all__ = ["MAX_BATCH", "MAX_COUNT", "MAX_PAIRS", "MAX_SECONDS", "MAX_THREADS", "MAX_WORKERS",
           "PICTURE_FORMATS", "batch", "count", "device", "int_in", "non_negative_int",
           "non_negative_pairs", "non_negative_real", "one_line_errors", "output_file",
           "output_folder", "pairs", "picture_file", "picture_format", "positive_real", "seconds",
           "seed", "threads", "training_seed", "workers"]
