"""``sevenrocks replay RECORD.json --out game.gif``: a game record as an animation.

One frame per placement or knock, seen as a spectator (every hand face up); the frame after a
round's last move shows the round's end: the deductions and the scores (R7; none after a won
round, R8).  ``--out``
ending in ``.gif`` writes an animated GIF; a folder (an existing directory, or a path ending in
``/`` or without a suffix) gets one PNG per frame, ``frame_0000.png`` ...  ``--round N`` keeps
one round (0-based), ``--fps`` sets the speed, ``--scale`` shrinks the frames.  An existing GIF, or a folder already holding frames,
is refused unless ``--force`` (then replaced; the folder's other frames removed).  A replay of
more than ``--max-frames`` frames (default :data:`MAX_FRAMES`) is refused before any drawing.

Within a round every frame is drawn with the framing of the round's final layout, so tiles stay
where they are while the layout grows.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Iterator

from PIL import Image

from .. import arguments, record as records
from ..atomic_file import OutputError, atomic_path, check_output_file, check_output_folder
from ..textfile import shown_path
from .geometry import frame_layout
from .layout import build_layout
from .picture import SIZE, board_box, draw_picture


def record_frames(record: dict, round_index: int | None = None, spectator: bool = True,
                  scale: float = 1.0) -> Iterator[tuple[Image.Image, dict, int]]:
    """``(image, move, round)`` after every move of ``record`` (or of one round).

    Raises :class:`~sevenrocks_env.record.RecordError` for a malformed record and
    ``ValueError`` for a round that does not exist (at once: nothing is drawn or written first).
    """
    records.validate(record)  # whole, first: a bad move late in it is found before any frame
    rounds = record["rounds"]
    if round_index is not None and not 0 <= round_index < len(rounds):
        raise ValueError(f"round {round_index} is not in the record: it has rounds "
                         f"0..{len(rounds) - 1}")
    return _frames(record, rounds, round_index, spectator, scale)


def _frames(record, rounds, round_index, spectator, scale):
    """The generator behind :func:`record_frames`."""
    framing = None
    for match, move, r in records.replay(record):
        if round_index is not None and r != round_index:
            if r > round_index:
                return
            continue
        if move is None:  # a round starts: frame it by its final layout
            framing = frame_layout(build_layout(rounds[r]["moves"]), board_box(SIZE))
            continue
        image, _ = draw_picture(match, spectator=spectator, framing=framing)
        if scale != 1.0:
            size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
            image = image.resize(size, Image.Resampling.LANCZOS)
        yield image, move, r


#: Pillow holds every frame of a GIF until it writes the file: at most this many pixels of
#: frames (800 full-size frames: ~1.2 MB each as Pillow holds them, so about 1 GB; a match to
#: 250 has about 150-400 moves).
MAX_GIF_PIXELS = 800 * SIZE[0] * SIZE[1]


#: Frames one replay writes unless ``--max-frames`` says more: a folder's PNGs take ~40 KB and
#: ~40 ms each at full size, so 2000 are ~80 MB and over a minute (a match to 5000 can have
#: 10,000 moves or more; one round has at most 112).
MAX_FRAMES = 2000


def frame_count(record: dict, round_index: int | None = None) -> int:
    """Frames :func:`record_frames` yields for a validated ``record``: one per move."""
    rounds = record["rounds"] if round_index is None else record["rounds"][round_index:round_index + 1]
    return sum(len(rnd["moves"]) for rnd in rounds)


def _too_many_frames(record: dict, total: int, limit: int) -> str | None:
    if total <= limit:
        return None
    rounds = len(record["rounds"])
    return (f"{total} frames (one per move) are more than --max-frames {limit} (each takes "
            f"~40 ms to draw; a PNG frame is ~40 KB at full size): use --round N (rounds "
            f"0..{rounds - 1}) for one round, or --max-frames {total} to write them all")


def _gif_too_large(frames: int, width: int, height: int) -> str | None:
    if frames * width * height <= MAX_GIF_PIXELS:
        return None
    return (f"{frames} frames of {width}x{height} are too many for one GIF (it is built in "
            f"memory; at most {MAX_GIF_PIXELS // (width * height)} at this size): use --round N, "
            f"a smaller --scale, or a folder of PNG frames")


def write_gif(frames, path: Path, fps: float, hold_round_end: float = 3.0) -> int:
    """Animated GIF; each round's last frame stays ``hold_round_end`` times longer.  Returns
    frames.  ``ValueError`` once the frames pass :data:`MAX_GIF_PIXELS` (nothing is written).

    Frames reach Pillow one at a time (each one's duration in its ``info``, set once the next
    frame shows whether a round ended), so only Pillow's own copy of each frame is held."""
    base = max(20, round(1000 / fps))
    count, pixels = 0, 0

    def timed():
        nonlocal count, pixels
        held = None  # (quantized frame, its round): its duration waits for the next frame
        for image, _, r in frames:
            pixels += image.width * image.height
            if pixels > MAX_GIF_PIXELS:
                raise ValueError(_gif_too_large(count + 1, image.width, image.height)
                                 or f"GIF frames past {MAX_GIF_PIXELS} pixels")
            count += 1
            if held is not None:
                held[0].info["duration"] = base if r == held[1] else round(base * hold_round_end)
                yield held[0]
            held = (image.quantize(colors=128, method=Image.Quantize.FASTOCTREE), r)
        if held is not None:
            held[0].info["duration"] = round(base * hold_round_end)
            yield held[0]

    sequence = timed()
    first = next(sequence, None)
    if first is None:
        return 0
    path = Path(path)
    with atomic_path(path) as partial:  # an interrupted save leaves no partial GIF
        first.save(partial, format="GIF", save_all=True, append_images=sequence, loop=0,
                   optimize=False, disposal=1)
    return count


def write_pngs(frames, folder: Path, total: int) -> int:
    """The ``total`` frames as PNGs in ``folder``, ``frame_0000.png``, ... (more digits past
    10,000 frames, so the names sort in order).  Frames of an earlier replay in the folder are
    removed first, so the folder never mixes two records (a replay stopped part-way, by Ctrl-C
    or a full disk, leaves the frames it wrote: this record's start); no other file is touched:
    a frame's name that is a symbolic link is replaced by the frame, never written through (a
    folder from someone else could point one anywhere).  Returns the number of frames."""
    digits = max(4, len(str(total - 1)))
    folder.mkdir(parents=True, exist_ok=True)
    earlier = [old for old in folder.glob("frame_*.png") if frame_number(old.name) is not None]
    odd = next((old for old in earlier if old.is_dir() and not old.is_symlink()), None)
    if odd is not None:  # (checked before anything is removed)
        raise ValueError(f"{shown_path(odd)} is a folder, not a frame of a replay: move it "
                         "away (nothing was removed)")
    for old in earlier:
        old.unlink()  # an older replay's frame (a link: the link, not what it points at)
    count = 0
    for count, (image, _, _) in enumerate(frames, start=1):
        # a link of that name is replaced by the rename itself (what it points at stays)
        with atomic_path(folder / frame_name(count - 1, digits), follow_links=False) as partial:
            image.save(partial, format="PNG")
    return count


def frame_name(index: int, digits: int) -> str:
    """The file name of frame ``index`` among frames numbered with ``digits`` digits."""
    return f"frame_{index:0{digits}d}.png"


def frame_number(name: str) -> int | None:
    """The frame number of a name :func:`write_pngs` gives (``frame_``, at least four digits,
    ``.png``), or None: a file of such a name in the frames' folder is replaced or removed."""
    number = name[len("frame_"):-len(".png")] if name.startswith("frame_") else ""
    ours = name.endswith(".png") and number.isascii() and number.isdigit() and len(number) >= 4
    return int(number) if ours else None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sevenrocks replay",
        description="Turn a game record into an animated GIF or a folder of PNG frames "
                    "(one frame per placement or knock).",
        epilog="R1-R8 are the sections of the rules in docs/rules.md")
    parser.add_argument("record", help="game record JSON (sevenrocks-record/1)")
    parser.add_argument("--out", help="game.gif, or a folder for PNG frames")
    parser.add_argument("--check", action="store_true",
                        help="only check the record (replayed move by move, R1-R8) and print "
                             "what it holds; nothing is drawn or written")
    parser.add_argument("--round", type=int, default=None, dest="round_index",
                        help="only this round (0-based)")
    parser.add_argument("--fps", type=float, default=1.5, help="frames per second (GIF)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help=f"resize frames (1.0 = {SIZE[0]}x{SIZE[1]})")
    parser.add_argument("--max-frames", type=arguments.count, default=MAX_FRAMES,
                        help=f"refuse a replay of more frames than this (default {MAX_FRAMES}: a "
                             "long match has thousands; --round N keeps one round)")
    parser.add_argument("--force", action="store_true",
                        help="replace an existing GIF, or the frames (frame_NNNN.png) of an "
                             "earlier replay in the folder; without it they are refused")
    return parser


def _out_problem(out: Path, as_gif: bool, text: str, record: str,
                 force: bool = False) -> str | None:
    """Why ``--out`` cannot take the frames, or ``None`` (may raise ``OSError``); without
    ``force``, an existing GIF or a folder holding frames is one (never replaced silently)."""
    if as_gif and out.is_dir():
        return f"--out {text!r}: is a folder"
    if not as_gif and out.suffix and not text.endswith(("/", "\\")) and not out.is_dir():
        return (f"--out must end in .gif or name a folder, got {text!r} (a new folder whose "
                f"name has a dot: end it with /)")
    try:
        check_output_file(out, [record]) if as_gif else check_output_folder(out)
    except OutputError as error:
        return f"--out {text!r}: {error.reason}"
    source = Path(os.path.realpath(record))  # the file itself, through any link
    if not as_gif and frame_number(source.name) is not None and out.is_dir() \
            and source.parent == Path(os.path.realpath(out)):
        return (f"--out {text!r}: the record {record} is there under a frame's name; the "
                "frames would replace it")
    if as_gif and not Path(os.path.realpath(out)).parent.is_dir():  # (resolve: a link loop raised)
        target = Path(os.path.realpath(out))
        where = f"is a link to {target}, whose folder {target.parent}" \
            if out.is_symlink() else f"folder {out.parent}"
        return f"--out {text!r}: {where} does not exist"
    if force:
        return None
    if as_gif and os.path.lexists(out):
        return f"--out {text!r} exists; --force replaces it"
    held = sum(1 for old in out.glob("frame_*.png") if frame_number(old.name) is not None
               and not (old.is_dir() and not old.is_symlink())) \
        if not as_gif and out.is_dir() else 0
    if held:
        return (f"--out {text!r} holds {held} frame(s) already (frame_NNNN.png); --force "
                "replaces them (and removes those this replay does not write)")
    return None


def _check(path: str) -> int:
    """``--check``: 0 and one line saying what the record holds, or 2 and why it is refused."""
    try:
        record = records.load(path)
    except records.RecordError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    moves = frame_count(record)  # one frame a move
    scores = ":".join(str(score) for score in record["scores"])  # not "-": "5--40", "-15-5"
    print(f"{shown_path(path)}: a valid {records.FORMAT} record: target {record['target']}, "
          f"{len(record['rounds'])} round{'s' * (len(record['rounds']) != 1)}, {moves} moves, "
          f"scores {scores}, "
          f"{records.ending(record)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns 0 on success, 2 for bad arguments or a bad record (one line on
    stderr: the record is untrusted input, :func:`sevenrocks_env.record.load` bounds it)."""
    parser = _parser()
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    if args.check:
        drawing = [option for option, dest in (
            ("--out", "out"), ("--round", "round_index"), ("--fps", "fps"), ("--scale", "scale"),
            ("--max-frames", "max_frames"), ("--force", "force"))
            if getattr(args, dest) != parser.get_default(dest)]
        if drawing:  # silently ignored, "--check --round 99" said the record was fine
            print(f"error: --check only checks the record; {', '.join(drawing)} "
                  f"{'is' if len(drawing) == 1 else 'are'} for drawing it: leave --check out",
                  file=sys.stderr)
            return 2
        try:  # a pipe may keep it waiting up to a minute
            return _check(args.record)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130
    if args.out is None:
        print("error: --out is required (or --check to only check the record)", file=sys.stderr)
        return 2
    if not 0.1 <= args.fps <= 50:  # a GIF frame lasts 20 ms to 65.5 s (x3 at a round's end)
        print("error: --fps must be between 0.1 and 50", file=sys.stderr)
        return 2
    if not 0.1 <= args.scale <= 4:
        print("error: --scale must be between 0.1 and 4", file=sys.stderr)
        return 2
    if not args.out.strip():  # Path("") is the current folder
        print("error: --out is empty: give game.gif or a folder for PNG frames", file=sys.stderr)
        return 2
    out = Path(args.out)
    # ".gif" alone too (its suffix is empty); "NAME.gif/" names a folder
    as_gif = out.name.lower().endswith(".gif") and not args.out.endswith(("/", "\\"))
    try:
        problem = _out_problem(out, as_gif, args.out, args.record, args.force)
    except OSError as error:  # e.g. a name too long for the file system
        problem = f"cannot write {args.out[:80]!r}: {error.strerror or error}"
    if problem:  # before any drawing
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        record = records.load(args.record)
        last = len(record["rounds"]) - 1
        if args.round_index is not None and not 0 <= args.round_index <= last:
            raise ValueError(f"--round {args.round_index}: the record has rounds 0..{last}")
        frames = record_frames(record, args.round_index, scale=args.scale)
        total = frame_count(record, args.round_index)
        if total == 0:  # before anything is written: a used frame folder keeps its frames
            which = "the record has" if args.round_index is None else \
                f"round {args.round_index} has"
            raise ValueError(f"no moves to show: {which} none yet (it ends at its deal)")
        if as_gif:
            width, height = (max(1, round(side * args.scale)) for side in SIZE)  # as drawn
            problem = _gif_too_large(total, width, height)
            if problem:
                raise ValueError(problem)
        problem = _too_many_frames(record, total, args.max_frames)  # before any drawing
        if problem:
            raise ValueError(problem)
        count = write_gif(frames, out, args.fps) if as_gif else write_pngs(frames, out, total)
    except (records.RecordError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"error: cannot write {out}: {error.strerror or error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    print(f"wrote {count} frames to {shown_path(out)}")
    return 0


if __name__ == "__main__":  # as `sevenrocks replay`: stdout errors in one line
    from ..cli import run_as
    sys.exit(run_as("replay"))
