"""Learning curve picture from a run's TensorBoard logs: eval win rate with 95% bands.

    python -m training.plot_curve runs/<run> --out docs/learning_curve.png
    python -m training.plot_curve runs/smoke --x steps --out /tmp/smoke_curve.png   # by decisions

Reads the ``eval/win_rate_vs_<agent>`` scalars and ``eval/wall_minutes`` (logged at each
evaluation, resume-safe).  The x axis is wall time in the unit that suits the run (seconds for a
run shorter than two minutes, minutes up to two hours, then hours), or the learner's decisions
(``global_step``) with ``--x steps``.  Each win rate gets the arena's 95% Wilson interval over
its duplicate pairs (:func:`sevenrocks_env.ratings.wilson_interval`; a band, or a bar for a
curve of one evaluation): the number of pairs is the
``eval/pairs`` scalar logged with each evaluation (runs before it: the logged hyperparameters
``eval_pairs``, ``final_eval_pairs`` for the last evaluation), or given with ``--pairs``.  Drawn with matplotlib (the ``[train]`` extra).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import re
import struct
import sys
from itertools import islice
from pathlib import Path

from sevenrocks_env.arguments import picture_format
from sevenrocks_env.atomic_file import OutputError, atomic_path, check_output_file
from sevenrocks_env.checks import shown
from sevenrocks_env.ratings import wilson_interval
from sevenrocks_env.textfile import not_regular, open_without_waiting, shown_path

#: Bounds of the logged values read from a run folder: the wall time a checkpoint may hold
#: (``training.checkpoint.MAX_WALL_SECONDS``, 1e9 s: 16,666,667 minutes as float32 logs them,
#: so a run resumed from any checkpoint is drawn), and the arena's pairs.
MAX_MINUTES, MAX_PAIRS = 1.7e7, 10 ** 7
#: Bounds of a run folder's event files, checked before TensorBoard reads them: all of them
#: together at most 1 GiB (a 25-minute ``make train`` run logs about 1 MB), and no record claiming
#: more than 16 MiB (a record holds one scalar or the hyperparameter table: a few kB; TensorBoard's
#: reader allocates what a record's length says).
MAX_EVENT_BYTES, MAX_RECORD_BYTES = 2 ** 30, 2 ** 24
#: Records (events) in all the event files, counted before TensorBoard reads them: its reader
#: takes ~18 us a record in pure Python, whatever the record holds (1 GiB of small ones was ~8
#: minutes and 4 GB; at this bound ~25 s and 0.4 GB in all); a 25-minute ``make train`` run
#: writes about 7,000.
MAX_EVENT_RECORDS = 1_000_000
#: Distinct tags (summary value names) in all the event files, counted in the same walk:
#: TensorBoard's reader keeps a reservoir of a few kB for each (999,000 tags of one scalar each,
#: 61 MB, took 3.5 GB and 67 s); a run evaluating 32 agents against 32 opponents logs ~260.
MAX_EVENT_TAGS = 1_000
#: Curves drawn (the trainer's ``eval_agents`` are at most 32: 2,000 took 8 s to draw, the
#: legend unreadable) and values of one scalar read (the evaluations of a run), refused beyond.
MAX_CURVES, MAX_POINTS = 32, 100_000
#: (largest x in seconds, unit name, seconds per unit): the first that fits the run is used.
TIME_UNITS = [(120.0, "seconds", 1.0), (7200.0, "minutes", 60.0), (float("inf"), "hours", 3600.0)]


@contextlib.contextmanager
def quiet_tensorboard():
    """TensorBoard's logger held to errors, its level put back after: a resumed run's logs make
    the reader warn "Detected out of order event.step likely caused by a TensorFlow restart.
    Purging expired events..." (the points the resume dropped on purpose: ``purge_step``)."""
    from tensorboard.util import tb_logging
    logger = tb_logging.get_logger()
    level = logger.level
    logger.setLevel(max(level, logging.ERROR))
    try:
        yield
    finally:
        logger.setLevel(level)


def read_run(run_dir) -> dict:
    """``{"curves": {agent: [(step, seconds, win_rate), ...]}, "pairs": (eval, final) or None,
    "name": run name}`` from a run's TensorBoard folder; ``ValueError`` (one line naming the
    folder or file) if it has no evaluations or holds anything odd."""
    from google.protobuf.message import DecodeError
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ValueError(f"{run_dir}: " + ("not a folder: give a run's folder (runs/<run>)"
                                           if run_dir.exists() else "no such folder"))
    check_event_files(run_dir)
    try:
        acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "tensors": 0})
        with quiet_tensorboard():
            acc.Reload()
        return _evaluations(run_dir, acc)
    except (OSError, MemoryError, OverflowError, IndexError, DecodeError) as problem:
        raise ValueError(f"{run_dir}: cannot be read: {type(problem).__name__}: "
                         f"{_cut(str(problem))}") from None


def _evaluations(run_dir: Path, acc) -> dict:
    """:func:`read_run`'s result from a loaded ``EventAccumulator``, every value checked."""
    tags = acc.Tags()
    if "eval/wall_minutes" not in tags["scalars"]:
        raise ValueError(f"{run_dir}: no evaluations logged (eval/wall_minutes missing)"
                         + _runs_below(run_dir))

    def scalars(tag: str, ok, words: str) -> list:
        """The events of ``tag``, each value checked (a shared run folder is untrusted)."""
        events = acc.Scalars(tag)
        if len(events) > MAX_POINTS:
            raise ValueError(f"{run_dir}: {shown(tag)} holds {len(events):,} values, more than "
                             f"the {MAX_POINTS:,} evaluations a curve may have")
        odd = next((e for e in events if not (math.isfinite(e.value) and ok(e.value))), None)
        if odd is not None:
            raise ValueError(f"{run_dir}: {shown(tag)} is {odd.value!r} at step {odd.step}, "
                             f"not {words}")
        return events

    seconds = {e.step: 60.0 * e.value for e in scalars(
        "eval/wall_minutes", lambda v: 0 <= v <= MAX_MINUTES, "a number of minutes")}
    curves, rates = {}, sorted(t for t in tags["scalars"] if t.startswith("eval/win_rate_vs_"))
    if len(rates) > MAX_CURVES:
        raise ValueError(f"{run_dir}: {len(rates):,} eval/win_rate_vs_<agent> curves, more than "
                         f"{MAX_CURVES} (a run evaluates against at most {MAX_CURVES} agents)")
    for tag in rates:
        points = {e.step: (e.step, seconds[e.step], e.value)
                  for e in scalars(tag, lambda v: 0 <= v <= 1, "a win rate in [0, 1]")
                  if e.step in seconds}  # a resumed step: the last one
        if points:  # (a win rate whose step has no wall time is not drawn)
            curves[tag.removeprefix("eval/win_rate_vs_")] = sorted(points.values())
    if not curves:
        raise ValueError(f"{run_dir}: no eval/win_rate_vs_<agent> scalars at a step that "
                         "has eval/wall_minutes")
    # the pairs of each evaluation, logged since they could differ from the rule below (a run
    # stopped by Ctrl-C skips its final, larger evaluation)
    pairs_at = {e.step: int(e.value) for e in scalars(
        "eval/pairs", lambda v: v.is_integer() and 1 <= v <= MAX_PAIRS, "a number of pairs")} \
        if "eval/pairs" in tags["scalars"] else {}
    pairs = None
    if "hyperparameters/text_summary" in tags.get("tensors", []):
        texts = acc.Tensors("hyperparameters/text_summary")[-1].tensor_proto.string_val
        if len(texts) != 1:
            raise ValueError(f"{run_dir}: the logged hyperparameters hold no text")
        try:
            pairs = _pairs_from_table(texts[0].decode("utf-8", "replace"))
        except ValueError as problem:
            raise ValueError(f"{run_dir}: the logged hyperparameters: {problem}") from None
    return {"curves": curves, "pairs": pairs, "pairs_at": pairs_at, "name": run_dir.name}


def _runs_below(run_dir: Path, most: int = 3) -> str:
    """A hint naming up to ``most`` subfolders that hold event files (``runs/``, the folder
    ``tensorboard --logdir`` takes, given for one run's); the first 1,000 entries of each folder
    looked at, none of them opened."""
    from tensorboard.backend.event_processing.io_wrapper import IsSummaryEventsFile

    def holds_events(folder: str) -> bool:
        with os.scandir(folder) as entries:
            return any(IsSummaryEventsFile(entry.name) for entry in islice(entries, 1000))

    try:
        with os.scandir(run_dir) as entries:
            found = [entry.name for entry in islice(entries, 1000)
                     if entry.is_dir() and holds_events(entry.path)]
    except OSError:
        return ""
    if not found:
        return ""
    names = ", ".join(shown_path(run_dir / name) for name in sorted(found)[:most])
    return f"; it holds runs, give one: {names}" + (", ..." if len(found) > most else "")


def check_event_files(run_dir: Path) -> None:
    """``ValueError`` unless the run's event files (the names TensorBoard reads: ``*tfevents*``)
    are regular files within the bounds above: their records (a length and its CRC-32C, the data
    and its CRC-32C) are walked, so a length that would make TensorBoard's reader allocate
    gigabytes is refused before the data is read, and so are too many records, and a record
    whose data fails its checksum (TensorBoard's reader stops there without a word, dropping
    every later evaluation).  A FIFO, a device or a folder under such a name (TensorBoard's
    reader would block on it, or fail) is refused unopened.  A record cut short at a file's
    end is a run still being written: TensorBoard skips it.  Each record is read as an event,
    and more than :data:`MAX_EVENT_TAGS` distinct tags are refused."""
    from google.protobuf.message import DecodeError
    from tensorboard.backend.event_processing.io_wrapper import IsSummaryEventsFile
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    try:
        files = sorted(p for p in run_dir.iterdir() if IsSummaryEventsFile(str(p)))
        for path in files:  # (links followed, as TensorBoard's reader does)
            problem = not_regular(os.stat(path).st_mode, "TensorBoard event file")
            if problem:
                raise ValueError(f"{_entry(path)} {problem}")
        total = sum(p.stat().st_size for p in files)
        if total > MAX_EVENT_BYTES:
            raise ValueError(f"{run_dir}: its event files hold {total:,} bytes, more than "
                             f"{MAX_EVENT_BYTES:,}")
        records, tags = 0, set()
        for path in files:
            descriptor, mode = open_without_waiting(  # (a FIFO's open() would wait)
                path, lambda where, why: OSError(f"{where}: {why}"))
            with os.fdopen(descriptor, "rb") as file:
                if not_regular(mode, "TensorBoard event file"):
                    raise ValueError(f"{_entry(path)}: changed while it was read")
                offset = 0
                while len(header := file.read(12)) == 12:  # length, its checksum
                    length, check = struct.unpack("<QI", header)
                    if masked_crc32c(header[:8]) != check:
                        raise ValueError(f"{_entry(path)}: record at byte {offset} fails its "
                                         "length checksum (not an event file, or damaged)")
                    if length > MAX_RECORD_BYTES:
                        raise ValueError(f"{_entry(path)}: record at byte {offset} claims "
                                         f"{length:,} bytes, more than {MAX_RECORD_BYTES:,}")
                    records += 1
                    if records > MAX_EVENT_RECORDS:
                        raise ValueError(f"{run_dir}: its event files hold more than "
                                         f"{MAX_EVENT_RECORDS:,} records (events)")
                    data, data_check = file.read(length), file.read(4)
                    if len(data) < length or len(data_check) < 4:
                        break  # cut short at the end: still being written
                    if masked_crc32c(data) != struct.unpack("<I", data_check)[0]:
                        raise ValueError(f"{_entry(path)}: record at byte {offset} fails its "
                                         "data checksum (damaged: TensorBoard would stop "
                                         "reading the file there, dropping every later event)")
                    try:
                        tags.update(value.tag for value in Event.FromString(data).summary.value)
                    except DecodeError:
                        raise ValueError(f"{_entry(path)}: record at byte {offset} is not an "
                                         "event") from None
                    if len(tags) > MAX_EVENT_TAGS:
                        raise ValueError(f"{run_dir}: its event files hold more than "
                                         f"{MAX_EVENT_TAGS:,} tags (curves); a run logs ~260 "
                                         "at most")
                    offset += 16 + length
    except OSError as problem:
        raise ValueError(f"{run_dir}: cannot be read: {_cut(str(problem))}") from None


def _entry(path: Path) -> str:
    """A file of the run folder, for an error message: its name quoted unless plain text."""
    return str(path) if path.name.isprintable() else f"{path.parent}/{shown(path.name)}"


def _pairs_from_table(table: str) -> tuple[int, int] | None:
    """``(eval_pairs, final_eval_pairs)`` from the logged hyperparameter table, if both are
    there; ``ValueError`` for a number of pairs out of ``[1, MAX_PAIRS]``."""
    found = dict(re.findall(r"^\|(eval_pairs|final_eval_pairs)\|(\d+)\|$", table, flags=re.M))
    if len(found) != 2:
        return None
    for name, digits in found.items():
        if len(digits) > 8 or not 1 <= int(digits) <= MAX_PAIRS:
            raise ValueError(f"{name} is {_cut(digits, 12)}, not a number of pairs (1 to "
                             f"{MAX_PAIRS:,})")
    return int(found["eval_pairs"]), int(found["final_eval_pairs"])


def _text(name: str) -> str:
    """A logged name as plain text in the picture: cut, and ``$`` not read as mathtext."""
    return _cut(name, 60).replace("$", r"\$")


def _cut(text: str, width: int = 80) -> str:
    """``text`` cut to ``width`` characters for an error message."""
    return text if len(text) <= width else text[:width - 3] + "..."


def time_unit(max_seconds: float) -> tuple[str, float]:
    """The unit (name, seconds per unit) for a run whose last evaluation is at ``max_seconds``."""
    return next((name, size) for limit, name, size in TIME_UNITS if max_seconds < limit)


def x_axis(run: dict, x: str) -> tuple[str, float, int]:
    """``(label, units per x value, column of the points)`` for ``x`` = ``"time"`` or ``"steps"``."""
    if x == "steps":  # global_step: the learner's decisions (forced and opponents' moves not)
        return "learner decisions", 1.0, 0
    unit, scale = time_unit(max(p[1] for points in run["curves"].values() for p in points))
    return f"wall time ({unit})", scale, 1


def draw(run: dict, out, x: str = "time", pairs: int | None = None) -> Path:
    """Write the picture; ``x`` is ``"time"`` or ``"steps"``; ``pairs`` overrides the logged
    number of duplicate pairs per evaluation (no bands when neither is known)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator, PercentFormatter

    curves = run["curves"]
    last_step = max(p[0] for points in curves.values() for p in points)
    label, scale, column = x_axis(run, x)
    fig, ax = plt.subplots(figsize=(9, 5.2), dpi=100)
    banded = False
    for agent, points in curves.items():
        xs = [p[column] / scale for p in points]
        rates = [p[2] for p in points]
        line, = ax.plot(xs, rates, marker="o", linewidth=2, label=f"vs {_text(agent)}")
        counts = [run.get("pairs_at", {}).get(step) if not pairs else pairs for step, _, _ in points]
        if not all(counts):  # logs from before eval/pairs: the rule of the config
            counts = [_pairs_at(step, last_step, run.get("pairs"), pairs) for step, _, _ in points]
        if all(counts):
            bands = [wilson_interval(r, n) for r, n in zip(rates, counts)]
            if len(xs) > 1:
                ax.fill_between(xs, [b[0] for b in bands], [b[1] for b in bands],
                                color=line.get_color(), alpha=0.18, linewidth=0)
            else:  # one evaluation (eval_every: 0): a band of no width; the interval as a bar
                ax.errorbar(xs, rates, yerr=[[rates[0] - bands[0][0]], [bands[0][1] - rates[0]]],
                            fmt="none", ecolor=line.get_color(), alpha=0.5, linewidth=2,
                            capsize=5)
            banded = True
    ax.axhline(0.5, color="grey", linewidth=1.2, linestyle="--")
    ax.set_ylim(-0.01, 1.01)  # a 100% line stays visible above the frame
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.xaxis.set_major_locator(MaxNLocator(nbins=8, steps=[1, 2, 2.5, 5, 10],
                                           integer=x == "steps"))
    if x == "steps":
        ax.ticklabel_format(axis="x", style="plain")
    ax.set_xlim(left=0)
    ax.set_xlabel(label)
    ax.set_ylabel("match win rate (duplicate arena)")
    band = "; bands: 95% Wilson over duplicate pairs" if banded else ""
    ax.set_title(f"{_text(run['name'])}: win rate vs {label.split(' (')[0]}{band}", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:  # never a partial picture; the output checked again at the write, not only at the start
        with atomic_path(out) as partial:
            fig.savefig(partial, format=out.suffix[1:].lower())
    finally:
        plt.close(fig)
    return out


def _pairs_at(step: int, last_step: int, logged: tuple[int, int] | None,
              override: int | None) -> int | None:
    if override:
        return override
    if logged is None:
        return None
    return logged[1] if step == last_step else logged[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.plot_curve", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", help="runs/<run-name> (a TensorBoard folder of one run)")
    parser.add_argument("--out", required=True,
                        help="the picture to write: .png, .svg or .pdf (e.g. docs/learning_curve.png)")
    parser.add_argument("--x", choices=("time", "steps"), default="time",
                        help="x axis: wall time (unit chosen by the run's length) or learner decisions")
    parser.add_argument("--pairs", type=int, default=None,
                        help="duplicate pairs per evaluation (default: read from the run's logs)")
    args = parser.parse_args(argv)
    if args.pairs is not None and not 1 <= args.pairs <= MAX_PAIRS:
        print(f"error: --pairs must be at least 1 and at most {MAX_PAIRS:,}", file=sys.stderr)
        return 2
    try:
        if picture_format(args.out) is None:
            raise ValueError(f"--out {args.out!r}: name a .png, .svg or .pdf file")
        check_output_file(args.out)
        run = read_run(args.run_dir)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except ImportError:
        print("error: plot_curve needs tensorboard: pip install -e \".[train]\"", file=sys.stderr)
        return 2
    try:
        print(draw(run, args.out, args.x, args.pairs))
    except ImportError:
        print("error: plot_curve needs matplotlib: pip install -e \".[train]\"", file=sys.stderr)
        return 2
    except OSError as error:  # the disk full, the folder gone meanwhile
        print(f"error: cannot write {args.out}: {error.strerror or error}", file=sys.stderr)
        return 1
    except OutputError as error:  # the output made a folder (or a device) while reading
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # a closed stdout, an ASCII terminal: as the sevenrocks commands
    from sevenrocks_env.cli import guarded
    sys.exit(guarded("python -m training.plot_curve", main))
