"""Where everything on the board picture goes, in pixels (no drawing here).

The layout (:mod:`.layout`) is placed in "tile units": a domino is 2 x 1 units, a double lies
crosswise (R3).  The straight line runs west -> east through the spinner; branch A (north) grows
up from the spinner and branch B (south) down (R4).  Every legal continuation point gets a
marker just beyond its end: a filled disc with the counted value when it counts (R5), a hollow
dot when it does not (an unopened branch).  :func:`board_geometry` then scales the units so the
whole layout -- the largest a round can produce included -- fits the board box, and returns a
:class:`BoardGeometry` that both the drawing code and the tests use.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..tiles import EAST, NORTH, SOUTH, WEST
from .layout import BoardDrawing, PlacedTile

GAP = 0.1           # space between neighbouring tiles, in tile units
MARKER_RADIUS = 0.42
MARKER_GAP = 0.18   # space between an end and its marker
MAX_UNIT = 40       # pixels per tile unit for small layouts
MIN_UNIT = 6
COMFORT_UNIT = 30   # a straight layout at least this large is not bent


@dataclass(frozen=True)
class TileBox:
    """A tile on the picture: pixel box and which half is drawn where."""

    placed: PlacedTile
    box: tuple[int, int, int, int]   # x0, y0, x1, y1
    vertical: bool                   # long side vertical
    first_half: int                  # number in the left (horizontal) / top (vertical) square
    second_half: int
    spinner: bool


@dataclass(frozen=True)
class Marker:
    """A legal continuation point: counted (filled disc showing ``value``) or not (hollow dot)."""

    slot: int
    center: tuple[int, int]
    radius: int
    counted: bool
    number: int     # the open number there
    value: int      # what it adds to the end sum (0 when not counted)


@dataclass
class BoardGeometry:
    """Pixel positions of the board: tiles, the spinner's box and the end markers."""

    unit: float
    board_box: tuple[int, int, int, int]
    tiles: list[TileBox] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)

    @property
    def spinner(self) -> TileBox | None:
        return next((t for t in self.tiles if t.spinner), None)

    def marker(self, slot: int) -> Marker | None:
        return next((m for m in self.markers if m.slot == slot), None)


def _unit_boxes(layout: BoardDrawing, bends: dict | None = None):
    """Tiles and markers in tile units (north is negative y).

    The opening tile's west edge is x = 0 and the line is centred on y = 0, so a tile keeps its
    place while the round grows.  ``bends[slot] = (n, direction)`` turns a branch after its
    first ``n`` tiles towards the east (+1) or west (-1), the way players turn a long arm at
    the table's edge.
    """
    tiles, markers = [], []
    if layout.empty:
        return tiles, markers
    bends = bends or {}
    widths = [1.0 if t.crosswise else 2.0 for t in layout.line]
    x = -sum(w + GAP for w in widths[:layout.opening_index])
    spinner_x = 0.0
    for index, placed in enumerate(layout.line):
        width, height = widths[index], (2.0 if placed.crosswise else 1.0)
        box = (x, -height / 2, x + width, height / 2)
        spinner = index == layout.spinner_index
        tiles.append((placed, box, placed.crosswise, placed.halves[0], placed.halves[1], spinner))
        if spinner:
            spinner_x = x + width / 2
        x += width + GAP
    line_left, line_right = tiles[0][1][0], x - GAP
    ends = {}
    for slot, sign in ((NORTH, -1.0), (SOUTH, 1.0)):
        arm = layout.branch(slot)
        turn_after, direction = bends.get(slot, (len(arm), 1))
        y = sign * (1.0 + GAP)  # the spinner is crosswise: 2 units tall
        ends[slot] = (spinner_x, y, 0.0, sign)
        for placed in arm[:turn_after]:
            width, height = (2.0, 1.0) if placed.crosswise else (1.0, 2.0)
            y0, y1 = (y - height, y) if sign < 0 else (y, y + height)
            inner, outer = placed.halves
            top, bottom = (outer, inner) if sign < 0 else (inner, outer)
            tiles.append((placed, (spinner_x - width / 2, y0, spinner_x + width / 2, y1),
                          not placed.crosswise, top, bottom, False))
            y = y0 - GAP if sign < 0 else y1 + GAP
            ends[slot] = (spinner_x, y, 0.0, sign)
        rest = arm[turn_after:]
        if not rest:
            continue
        half = 1.0 if rest[0].crosswise else 0.5
        row = y + sign * half  # centre of the turned run
        x = spinner_x - direction * 0.5
        for placed in rest:
            width, height = (1.0, 2.0) if placed.crosswise else (2.0, 1.0)
            x0, x1 = (x, x + width) if direction > 0 else (x - width, x)
            inner, outer = placed.halves
            left, right = (inner, outer) if direction > 0 else (outer, inner)
            tiles.append((placed, (x0, row - height / 2, x1, row + height / 2),
                          placed.crosswise, left, right, False))
            x = x1 + GAP if direction > 0 else x0 - GAP
        ends[slot] = (x, row, direction, 0.0)
    counted = layout.counted_ends()
    reach = MARKER_GAP + MARKER_RADIUS
    for slot, number in layout.continuation_points().items():
        if slot == WEST:
            center = (line_left - reach, 0.0)
        elif slot == EAST:
            center = (line_right + reach, 0.0)
        else:
            ex, ey, dx, dy = ends[slot]
            center = (ex + dx * (reach - GAP), ey + dy * (reach - GAP))
        markers.append((slot, center, slot in counted, number, counted.get(slot, 0)))
    return tiles, markers


def _extent(tiles, markers) -> tuple[float, float, float, float]:
    """Bounding box (left, top, right, bottom) of tiles and markers, in tile units."""
    r = MARKER_RADIUS
    left = min([b[0] for _, b, *_ in tiles] + [c[0] - r for _, c, *_ in markers])
    top = min([b[1] for _, b, *_ in tiles] + [c[1] - r for _, c, *_ in markers])
    right = max([b[2] for _, b, *_ in tiles] + [c[0] + r for _, c, *_ in markers])
    bottom = max([b[3] for _, b, *_ in tiles] + [c[1] + r for _, c, *_ in markers])
    return left, top, right, bottom


@dataclass(frozen=True)
class Framing:
    """How a layout is put on the board: pixels per unit, where unit (0, 0) lands, branch bends.

    :func:`frame_layout` picks it for one layout; a replay picks it once for a round's final
    layout and draws every earlier frame with it, so tiles stay put from frame to frame.
    """

    unit: float
    origin: tuple[float, float]
    bends: tuple[tuple[int, int, int], ...] = ()   # (slot, tiles before the turn, direction)


def frame_layout(layout: BoardDrawing, board_box: tuple[int, int, int, int], margin: int = 12) -> Framing:
    """The framing that shows ``layout`` largest inside ``board_box``.

    Tries the straight layout and every way of turning a long branch (after 2 or more tiles,
    east or west).  Keeps the straightest one (fewest and latest turns) whose tiles are at
    least ``COMFORT_UNIT`` pixels (or 95 % of the largest possible when that is smaller).
    """
    room_w = board_box[2] - board_box[0] - 2 * margin
    room_h = board_box[3] - board_box[1] - 2 * margin
    options = {}
    for slot in (NORTH, SOUTH):
        length = len(layout.branch(slot))
        options[slot] = [None] + [(n, d) for n in range(length - 1, 1, -1) for d in (1, -1)]
    candidates = []
    for north in options[NORTH]:
        for south in options[SOUTH]:
            bends = {s: b for s, b in ((NORTH, north), (SOUTH, south)) if b is not None}
            tiles, markers = _unit_boxes(layout, bends)
            if not tiles:
                return Framing(float(MAX_UNIT), ((board_box[0] + board_box[2]) / 2,
                                                  (board_box[1] + board_box[3]) / 2))
            left, top, right, bottom = _extent(tiles, markers)
            unit = max(float(MIN_UNIT), min(float(MAX_UNIT), room_w / (right - left),
                                            room_h / (bottom - top)))
            straightness = (len(bends), -sum(n for n, _ in bends.values()))
            candidates.append((straightness, unit, (left, top, right, bottom), bends))
    good_enough = min(COMFORT_UNIT, 0.95 * max(c[1] for c in candidates))
    best = min((c for c in candidates if c[1] >= good_enough), key=lambda c: (c[0], -c[1]))
    _, unit, (left, top, right, bottom), bends = best
    origin = ((board_box[0] + board_box[2]) / 2 - (left + right) / 2 * unit,
              (board_box[1] + board_box[3]) / 2 - (top + bottom) / 2 * unit)
    return Framing(unit, origin, tuple((s, n, d) for s, (n, d) in bends.items()))


def board_geometry(layout: BoardDrawing, board_box: tuple[int, int, int, int],
                   framing: Framing | None = None) -> BoardGeometry:
    """Pixel geometry of ``layout`` inside ``board_box`` (x0, y0, x1, y1).

    Without ``framing`` the layout is centred and scaled to fit (:func:`frame_layout`).
    """
    if framing is None:
        framing = frame_layout(layout, board_box)
    tiles, markers = _unit_boxes(layout, {s: (n, d) for s, n, d in framing.bends})
    unit, (off_x, off_y) = framing.unit, framing.origin
    geometry = BoardGeometry(unit=unit, board_box=board_box)

    def px(x: float, y: float) -> tuple[int, int]:
        return round(off_x + x * unit), round(off_y + y * unit)

    for placed, box, vertical, first, second, spinner in tiles:
        geometry.tiles.append(TileBox(placed, px(box[0], box[1]) + px(box[2], box[3]), vertical,
                                      first, second, spinner))
    radius = max(3, round(MARKER_RADIUS * unit))
    for slot, center, counted, number, value in markers:
        geometry.markers.append(Marker(slot, px(*center), radius, counted, number, value))
    return geometry


__all__ = ["BoardGeometry", "Framing", "Marker", "TileBox", "board_geometry", "frame_layout"]
