"""The board picture (``render_mode="rgb_array"``), drawn with Pillow in the rule book's style.

Top: both partnerships' scores as pegs on a cribbage-like track to the target.  Middle: the
layout -- dominoes with pips, doubles crosswise (R3), the spinner outlined in orange with its
north/south branches (R4), every counted end marked by a filled disc showing its counted value
and every legal continuation point that is not counted by a hollow dot (R5); the last tile
placed is outlined in its team's colour.  Bottom: the four seats (seat to move highlighted,
tile counts, hands face up for a spectator or for the observer only) and the end sum with the
last placement's points, or the round's end with its deductions (R7).

Where things go is computed in :mod:`.geometry`; :func:`draw_picture` returns it alongside the
image so tests can check colours at the spinner and the end markers.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from ..checks import counted
from ..rules import Match, checked_match, team_of
from ..scoring import end_sum
from ..tiles import (KNOCK, NUM_SEATS, SLOT_NAMES, TILES, decode_action, pips_words, tile_name,
                     tiles_of)
from .geometry import BoardGeometry, Framing, TileBox, board_geometry
from .layout import BoardDrawing, build_layout, last_placement
from .text import (
    LAYOUT_NOT_KNOWN, checked_observer, deduction_text, layout_known, round_result, shown_round,
)

SIZE = (1280, 860)            # width, height
HEADER_H, FOOTER_H = 96, 210

FELT = (24, 96, 62)
PANEL = (16, 44, 33)
IVORY = (247, 242, 226)
INK = (25, 25, 25)
SPINNER = (255, 140, 0)       # orange outline of the spinner
COUNTED = (255, 212, 50)      # filled disc of a counted end
HOLLOW = (240, 240, 240)      # ring of a non-counted continuation point
TEAM = ((70, 140, 235), (225, 75, 75))
TRACK = (139, 94, 52)
HOLE = (70, 45, 25)
BACK = (60, 60, 70)
TEXT = (235, 235, 235)
MUTED = (170, 185, 175)

#: pip positions in a unit square for each number
PIPS = {
    0: (), 1: ((.5, .5),), 2: ((.25, .25), (.75, .75)), 3: ((.25, .25), (.5, .5), (.75, .75)),
    4: ((.25, .25), (.75, .25), (.25, .75), (.75, .75)),
    5: ((.25, .25), (.75, .25), (.5, .5), (.25, .75), (.75, .75)),
    6: ((.25, .22), (.25, .5), (.25, .78), (.75, .22), (.75, .5), (.75, .78)),
}


@lru_cache(maxsize=None)
def font(size: int) -> ImageFont.ImageFont:
    """Pillow's bundled scalable font (no system font needed)."""
    return ImageFont.load_default(size=max(8, int(size)))


def board_box(size: tuple[int, int] = SIZE) -> tuple[int, int, int, int]:
    """The part of the picture that holds the layout."""
    return (0, HEADER_H, size[0], size[1] - FOOTER_H)


def draw_domino(draw: ImageDraw.ImageDraw, box, first: int, second: int, vertical: bool,
                face_up: bool = True) -> None:
    """A domino in ``box``: ``first`` in the left/top square, ``second`` in the right/bottom."""
    x0, y0, x1, y1 = box
    short = min(x1 - x0, y1 - y0)
    radius = max(2, short // 7)
    if not face_up:
        draw.rounded_rectangle(box, radius=radius, fill=BACK, outline=INK, width=1)
        return
    draw.rounded_rectangle(box, radius=radius, fill=IVORY, outline=INK, width=max(1, short // 18))
    pip = max(1.2, short * 0.085)
    if vertical:
        mid = (y0 + y1) / 2
        halves = (((x0, y0, x1, mid), first), ((x0, mid, x1, y1), second))
        draw.line((x0 + short * .15, mid, x1 - short * .15, mid), fill=INK, width=max(1, short // 20))
    else:
        mid = (x0 + x1) / 2
        halves = (((x0, y0, mid, y1), first), ((mid, y0, x1, y1), second))
        draw.line((mid, y0 + short * .15, mid, y1 - short * .15), fill=INK, width=max(1, short // 20))
    for (hx0, hy0, hx1, hy1), number in halves:
        for fx, fy in PIPS[number]:
            cx, cy = hx0 + fx * (hx1 - hx0), hy0 + fy * (hy1 - hy0)
            draw.ellipse((cx - pip, cy - pip, cx + pip, cy + pip), fill=INK)


def draw_board(draw: ImageDraw.ImageDraw, geometry: BoardGeometry, last_move: int | None,
               last_seat: int | None) -> None:
    """Tiles, the spinner's outline, the last tile's underline and the end markers."""
    unit = geometry.unit
    for tile in geometry.tiles:
        draw_domino(draw, tile.box, tile.first_half, tile.second_half, tile.vertical)
        if tile.placed.move == last_move and last_seat is not None:  # the last tile placed
            draw.rounded_rectangle(tile.box, radius=max(2, round(unit * 0.14)),
                                   outline=TEAM[team_of(last_seat)], width=max(2, round(unit * 0.1)))
    spinner = geometry.spinner
    if spinner is not None:
        width = max(3, round(unit * 0.16))
        x0, y0, x1, y1 = spinner_outline(spinner, unit)
        draw.rounded_rectangle((x0, y0, x1, y1), radius=width + 2, outline=SPINNER, width=width)
    for marker in geometry.markers:
        cx, cy = marker.center
        r = marker.radius
        if marker.counted:
            draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=COUNTED, outline=INK, width=1)
            draw.text((cx, cy), str(marker.value), fill=INK, font=font(r * 1.15), anchor="mm")
        else:
            draw.ellipse((cx - r, cy - r, cx + r, cy + r), outline=HOLLOW, width=hollow_width(r))


def hollow_width(radius: int) -> int:
    """Ring width of a hollow dot."""
    return max(2, radius // 4)


def spinner_outline(tile: TileBox, unit: float) -> tuple[int, int, int, int]:
    """Box of the spinner's orange outline (just outside the tile)."""
    pad = max(2, round(unit * 0.1))
    x0, y0, x1, y1 = tile.box
    return x0 - pad, y0 - pad, x1 + pad, y1 + pad


def draw_scores(draw: ImageDraw.ImageDraw, match: Match, width: int) -> None:
    """Both partnerships' scores as pegs on a track with a hole every 5 points (R1, R8)."""
    draw.rectangle((0, 0, width, HEADER_H), fill=PANEL)
    target = match.target
    step = 5 * -(-target // 500)  # a hole every 5 points up to 500, then at most 100 holes
    holes = max(1, target // step)
    track_x0, track_x1 = 330, width - 150
    for team in (0, 1):
        y = 14 + team * 40
        seats = " & ".join(str(s) for s in range(NUM_SEATS) if team_of(s) == team)
        draw.rectangle((12, y + 4, 26, y + 18), fill=TEAM[team])
        label = f"team {team} (seats {seats})"
        if match.winner == team:
            label += "  WINS"
        draw.text((34, y + 11), label, fill=TEXT, font=font(18), anchor="lm")
        draw.rounded_rectangle((track_x0 - 8, y, track_x1 + 8, y + 22), radius=8, fill=TRACK)
        score = match.scores[team]
        pitch = (track_x1 - track_x0) / max(1, holes - 1)
        for hole in range(holes):
            hx = track_x0 + hole * pitch
            filled = score >= (hole + 1) * step
            r = 4 if filled else 2.5
            draw.ellipse((hx - r, y + 11 - r, hx + r, y + 11 + r), fill=TEAM[team] if filled else HOLE)
        text = f"{score} / {target}"
        draw.text((width - 14, y + 11), text, fill=TEXT, font=font(20), anchor="rm")


def draw_seats(draw: ImageDraw.ImageDraw, match: Match, size, observer: int | None,
               spectator: bool) -> None:
    """Seat rows: name, team, tile count, to-move highlight, hand face up or face down."""
    width, height = size
    top = height - FOOTER_H
    draw.rectangle((0, top, width, height), fill=PANEL)
    row_h = (FOOTER_H - 10) // NUM_SEATS
    log = shown_round(match)
    # hands are shown for the end-of-round count (R1, R7); a won round is not counted (R8)
    revealed = log is not None and log.result not in (None, "won")
    tile_w, tile_h = 40, 20
    for seat in range(NUM_SEATS):
        y = top + 5 + seat * row_h
        to_move = seat == match.turn and not match.over
        if to_move:
            draw.rounded_rectangle((4, y, 760, y + row_h - 4), radius=6, outline=TEXT, width=2)
        draw.rectangle((12, y + 10, 24, y + 22), fill=TEAM[team_of(seat)])
        hand = tiles_of(match.hands[seat])
        label = f"seat {seat}" + (" (you)" if seat == observer and not spectator else "")
        draw.text((32, y + 16), label, fill=TEXT, font=font(18), anchor="lm")
        count = counted(len(hand), "tile")
        draw.text((150, y + 16), count + ("  <- to move" if to_move else ""),
                  fill=TEXT if to_move else MUTED, font=font(15), anchor="lm")
        face_up = spectator or seat == observer or revealed
        if revealed:
            pips = sum(TILES[t][0] + TILES[t][1] for t in hand)
            draw.text((672, y + 16),
                      f"{pips_words(pips)} -> {deduction_text(log.deductions[seat])}",
                      fill=TEXT, font=font(15), anchor="lm")
        for i, tile in enumerate(hand):
            x = 330 + i * (tile_w + 8)
            low, high = TILES[tile]
            draw_domino(draw, (x, y + 6, x + tile_w, y + 6 + tile_h), low, high, False, face_up)


def draw_status(draw: ImageDraw.ImageDraw, match: Match, size, last_points) -> None:
    """End sum, last placement with its points, or the round's end (R5, R7)."""
    width, height = size
    x = 805
    y = height - FOOTER_H + 12
    log = shown_round(match)
    total = end_sum(match.ends, match.end_double, match.branch_started)  # also without a layout
    draw.text((x, y), f"end sum {total}", fill=COUNTED, font=font(30), anchor="la")
    y += 44
    if log is not None and log.moves:
        seat, action, _, points = log.moves[-1]
        if last_points is not None:
            points = last_points
        if action == KNOCK:
            text = f"last: seat {seat} knocked"
        else:
            tile, slot = decode_action(action)
            where = "opened with" if len(log.moves) == 1 else f"played {SLOT_NAMES[slot]}:"
            text = f"last: seat {seat} {where} {tile_name(tile)}  ->  {points} points"
        draw.text((x, y), text, fill=TEAM[team_of(seat)] if action != KNOCK else TEXT,
                  font=font(20), anchor="la")
    elif match.opening and match.turn >= 0 and not match.over:
        # (not for a match without history that has tiles down or is over: no log, no layout)
        draw.text((x, y), f"seat {match.turn} opens (any tile)", fill=TEXT, font=font(20))
    y += 34
    if log is not None and log.result is not None:
        for line in round_end_lines(log):
            size = 17
            while size > 11 and draw.textlength(line, font=font(size)) > width - x - 12:
                size -= 1  # shrink a long line to the panel rather than cut it
            draw.text((x, y), line, fill=TEXT, font=font(size), anchor="la")
            y += 24
    elif match.turn >= 0 and not match.over:
        draw.text((x, y), f"to move: seat {match.turn} (team {team_of(match.turn)})",
                  fill=TEXT, font=font(18), anchor="la")
    if match.truncated:  # also for a match that keeps no history
        draw.text((x, y), "match over: round limit reached, no winner",
                  fill=TEXT, font=font(17), anchor="la")
    legend = "orange = spinner   gold disc = counted end   ring = open, counts 0"
    draw.text((x, height - 14), legend, fill=MUTED, font=font(13), anchor="ls")


def round_end_lines(log) -> list[str]:
    """The round's end for the status panel (deductions are shown in the seat rows, R7)."""
    lines = [round_result(log)]
    if log.result != "won":
        lost = [log.deductions[s] + log.deductions[s + 2] for s in (0, 1)]
        lines.append(f"deductions: team 0 {deduction_text(lost[0])}, "
                     f"team 1 {deduction_text(lost[1])}")
    if log.scores is not None:
        lines.append(f"scores: team 0 {log.scores[0]}, team 1 {log.scores[1]}")
    return lines


def draw_picture(match: Match, observer: int | None = None, spectator: bool = False,
                 last_points=None, framing: Framing | None = None
                 ) -> tuple[Image.Image, BoardGeometry]:
    """The board picture (:data:`SIZE`; resize the image for others) and its geometry.
    ``framing`` fixes scale and position (replays); ``TypeError`` for a match that is no
    :class:`~sevenrocks_env.rules.Match`."""
    checked_match(match)
    observer = checked_observer(observer)
    size = SIZE
    image = Image.new("RGB", size, FELT)
    draw = ImageDraw.Draw(image)
    log = shown_round(match)
    layout = build_layout(log.moves) if log is not None else BoardDrawing()
    geometry = board_geometry(layout, board_box(size), framing)
    last_move, last_seat = (last_placement(log.moves) if log is not None else None) or (None, None)
    draw_scores(draw, match, size[0])
    if layout.empty:
        bx0, by0, bx1, by1 = board_box(size)
        empty = "the table is empty" if layout_known(match) else LAYOUT_NOT_KNOWN
        draw.text(((bx0 + bx1) / 2, (by0 + by1) / 2), empty, fill=MUTED, font=font(26),
                  anchor="mm")
    draw_board(draw, geometry, last_move, last_seat)
    draw_seats(draw, match, size, observer, spectator)
    draw_status(draw, match, size, last_points)
    return image, geometry


def render_picture(match: Match, observer: int | None = None, spectator: bool = False,
                   last_points=None, framing: Framing | None = None) -> np.ndarray:
    """H x W x 3 uint8 board picture.

    ``spectator=True`` shows every hand face up; otherwise only ``observer``'s hand (none when
    ``observer`` is None).  ``last_points`` overrides the points shown for the last placement.
    """
    image, _ = draw_picture(match, observer, spectator, last_points, framing)
    return np.asarray(image, dtype=np.uint8)


__all__ = ["SIZE", "board_box", "draw_picture", "hollow_width", "render_picture",
           "spinner_outline", "COUNTED", "HOLLOW", "SPINNER", "FELT"]
