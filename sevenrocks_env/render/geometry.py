"""Where everything on the board picture goes, in pixels (no drawing here).

The layout (:mod:`.layout`) is placed in "tile units": a domino is 2 x 1 units, a double lies
crosswise (R3).  The straight line runs west -> east through the spinner; branch A (north) grows
up from the spinner and branch B (south) down (R4).  Every legal continuation point gets a
marker just beyond its end: a filled disc with the counted value when it counts (R5), a hollow
dot when it does not (an unopened branch).  A long arm turns at the board's edge, as players
turn it at the table's: a branch east or west, an arm of the line north or south
(:func:`frame_layout` picks the turns).  :func:`board_geometry` then scales the units so the
whole layout -- the largest a round can produce included -- fits the board box, and returns a
:class:`BoardGeometry` that both the drawing code and the tests use.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..tiles import EAST, NORTH, SOUTH, WEST
from .layout import BoardDrawing, PlacedTile

GAP = 0.1           # space between neighbouring tiles, in tile units
MARKER_RADIUS = 0.42
MARKER_GAP = 0.18   # space between an end and its marker
MAX_UNIT = 40       # pixels per tile unit for small layouts
MIN_UNIT = 6
COMFORT_UNIT = 30   # a straight layout at least this large is not bent
EPSILON = 1e-6      # overlaps thinner than this (rounding) are no overlaps
MAX_TRIES = 64      # colliding framings frame_layout passes over before it gives up
SLOTS = (WEST, EAST, NORTH, SOUTH)
INF = float("inf")


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


def _line_boxes(layout: BoardDrawing):
    """Every line tile's box laid straight, the x just past the east end, the spinner's x."""
    widths = [1.0 if t.crosswise else 2.0 for t in layout.line]
    x = -sum(w + GAP for w in widths[:layout.opening_index])
    boxes, spinner_x = [], 0.0
    for index, placed in enumerate(layout.line):
        width, height = widths[index], (2.0 if placed.crosswise else 1.0)
        boxes.append((x, -height / 2, x + width, height / 2))
        if index == layout.spinner_index:
            spinner_x = x + width / 2
        x += width + GAP
    return boxes, x, spinner_x


def _line_arm(layout: BoardDrawing, straight, slot: int, bend):
    """The tiles of the line's ``slot`` arm (outward from the opening tile) and its marker's
    centre.  ``bend = (n, direction)`` turns it after ``n`` tiles towards the south (+1) or the
    north (-1): each turned tile keeps its inner half towards the opening tile."""
    boxes, x_end, _ = straight
    opening = layout.opening_index
    sign = -1.0 if slot == WEST else 1.0
    indices = _outward(layout, slot)
    turn_after, direction = bend or (len(indices), 1)
    tiles = []
    for index in indices[:turn_after]:
        placed = layout.line[index]
        tiles.append((placed, boxes[index], placed.crosswise, placed.halves[0],
                      placed.halves[1], index == layout.spinner_index))
    rest = indices[turn_after:]
    if not rest:  # straight: the marker just beyond the line's end
        reach = MARKER_GAP + MARKER_RADIUS
        center = (boxes[0][0] - reach, 0.0) if slot == WEST else (x_end - GAP + reach, 0.0)
        return tiles, center
    last = boxes[indices[turn_after - 1]] if turn_after else boxes[opening]
    x = last[0] - GAP if sign < 0 else last[2] + GAP
    column = x + sign * (1.0 if layout.line[rest[0]].crosswise else 0.5)
    y = -direction * 0.5  # the first turned tile's inner half lies level with the line
    for index in rest:
        placed = layout.line[index]
        width, height = (2.0, 1.0) if placed.crosswise else (1.0, 2.0)
        y0, y1 = (y, y + height) if direction > 0 else (y - height, y)
        west, east = placed.halves
        inner, outer = (east, west) if sign < 0 else (west, east)
        top, bottom = (inner, outer) if direction > 0 else (outer, inner)
        tiles.append((placed, (column - width / 2, y0, column + width / 2, y1),
                      not placed.crosswise, top, bottom, index == layout.spinner_index))
        y = y1 + GAP if direction > 0 else y0 - GAP
    return tiles, (column, y + direction * (MARKER_GAP + MARKER_RADIUS - GAP))


def _branch_arm(layout: BoardDrawing, spinner_x: float, slot: int, bend):
    """The tiles of branch ``slot`` (north or south of the spinner) and its marker's centre;
    ``bend = (n, direction)`` turns it after ``n`` tiles east (+1) or west (-1)."""
    sign = -1.0 if slot == NORTH else 1.0
    arm = layout.branch(slot)
    turn_after, direction = bend or (len(arm), 1)
    tiles = []
    y = sign * (1.0 + GAP)  # the spinner is crosswise: 2 units tall
    end = (spinner_x, y, 0.0, sign)
    for placed in arm[:turn_after]:
        width, height = (2.0, 1.0) if placed.crosswise else (1.0, 2.0)
        y0, y1 = (y - height, y) if sign < 0 else (y, y + height)
        inner, outer = placed.halves
        top, bottom = (outer, inner) if sign < 0 else (inner, outer)
        tiles.append((placed, (spinner_x - width / 2, y0, spinner_x + width / 2, y1),
                      not placed.crosswise, top, bottom, False))
        y = y0 - GAP if sign < 0 else y1 + GAP
        end = (spinner_x, y, 0.0, sign)
    rest = arm[turn_after:]
    if rest:
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
        end = (x, row, direction, 0.0)
    ex, ey, dx, dy = end
    reach = MARKER_GAP + MARKER_RADIUS
    return tiles, (ex + dx * (reach - GAP), ey + dy * (reach - GAP))


def _outward(layout: BoardDrawing, slot: int) -> list[int]:
    """The line indices of line arm ``slot`` (WEST or EAST), outward from the opening tile."""
    opening = layout.opening_index
    return list(range(opening - 1, -1, -1) if slot == WEST
                else range(opening + 1, len(layout.line)))


def _arm(layout: BoardDrawing, straight, slot: int, bend):
    if slot in (WEST, EAST):
        return _line_arm(layout, straight, slot, bend)
    return _branch_arm(layout, straight[2], slot, bend)


def _opening_tile(layout: BoardDrawing, straight):
    index = layout.opening_index
    placed = layout.line[index]
    return (placed, straight[0][index], placed.crosswise, placed.halves[0], placed.halves[1],
            index == layout.spinner_index)


def _marker(points: dict, counted: dict, slot: int, center):
    """The marker tuple at continuation point ``slot`` (``points``: slot -> open number)."""
    return (slot, center, slot in counted, points[slot], counted.get(slot, 0))


def _unit_boxes(layout: BoardDrawing, bends: dict | None = None):
    """Tiles and markers in tile units (north is negative y).

    The opening tile's west edge is x = 0 and the line is centred on y = 0, so a tile keeps its
    place while the round grows.  ``bends[slot] = (n, direction)`` turns a branch after its
    first ``n`` tiles towards the east (+1) or west (-1), and a line arm after its first ``n``
    tiles counted outward from the opening tile towards the south (+1) or north (-1), the way
    players turn a long arm at the table's edge.
    """
    if layout.empty:
        return [], []
    bends = bends or {}
    straight = _line_boxes(layout)
    arms = {slot: _arm(layout, straight, slot, bends.get(slot)) for slot in SLOTS}
    tiles = (arms[WEST][0][::-1] + [_opening_tile(layout, straight)] + arms[EAST][0]
             + arms[NORTH][0] + arms[SOUTH][0])
    points, counted = layout.continuation_points(), layout.counted_ends()
    return tiles, [_marker(points, counted, slot, arms[slot][1]) for slot in points]


def _extent(tiles, markers) -> tuple[float, float, float, float]:
    """Bounding box (left, top, right, bottom) of tiles and markers, in tile units."""
    r = MARKER_RADIUS
    left = min([b[0] for _, b, *_ in tiles] + [c[0] - r for _, c, *_ in markers])
    top = min([b[1] for _, b, *_ in tiles] + [c[1] - r for _, c, *_ in markers])
    right = max([b[2] for _, b, *_ in tiles] + [c[0] + r for _, c, *_ in markers])
    bottom = max([b[3] for _, b, *_ in tiles] + [c[1] + r for _, c, *_ in markers])
    return left, top, right, bottom


def _collides(tiles, markers) -> bool:
    """Whether two tiles overlap, a marker overlaps a tile, or two markers overlap."""
    boxes = sorted(b for _, b, *_ in tiles)
    for i, (x0, y0, x1, y1) in enumerate(boxes):
        for a0, b0, a1, b1 in boxes[i + 1:]:
            if a0 >= x1 - EPSILON:
                break  # sorted by their west edge: none further on reaches this one
            if min(y1, b1) - max(y0, b0) > EPSILON:
                return True
    centers = [c for _, c, *_ in markers]
    for i, (cx, cy) in enumerate(centers):
        for x0, y0, x1, y1 in boxes:
            dx, dy = max(x0 - cx, 0.0, cx - x1), max(y0 - cy, 0.0, cy - y1)
            if dx * dx + dy * dy < (MARKER_RADIUS - EPSILON) ** 2:
                return True
        for ox, oy in centers[i + 1:]:
            if (ox - cx) ** 2 + (oy - cy) ** 2 < (2 * MARKER_RADIUS - EPSILON) ** 2:
                return True
    return False


@dataclass(frozen=True)
class Framing:
    """How a layout is put on the board: pixels per unit, where unit (0, 0) lands, branch bends.

    :func:`frame_layout` picks it for one layout; a replay picks it once for a round's final
    layout and draws every earlier frame with it, so tiles stay put from frame to frame.
    """

    unit: float
    origin: tuple[float, float]
    #: ``(slot, tiles before the turn, direction)``: a branch (NORTH, SOUTH) turns east (+1)
    #: or west (-1) after its first tiles; a line arm (WEST, EAST) turns south (+1) or north
    #: (-1) after its first tiles counted outward from the opening tile.
    bends: tuple[tuple[int, int, int], ...] = ()


def _options(layout: BoardDrawing, slot: int) -> list:
    """Ways to lay arm ``slot``: straight (None), or turned after ``n`` tiles either way.

    A branch turns after 2 or more of its tiles.  A line arm counts its tiles outward from the
    opening tile (which never moves, so a round's frames can share one framing) and turns only
    past 2 or more tiles beyond both the opening tile and the spinner.  No arm turns at a
    double: laid crosswise to the turned run it would lie in line with the tile it joins (R3).
    """
    if slot in (NORTH, SOUTH):
        arm, first = layout.branch(slot), 2
    else:
        opening, spinner = layout.opening_index, layout.spinner_index
        arm = [layout.line[index] for index in _outward(layout, slot)]
        ahead = 0 if spinner is None else (opening - spinner if slot == WEST
                                           else spinner - opening)
        first = max(ahead, 0) + 2
    return [None] + [(n, d) for n in range(len(arm) - 1, first - 1, -1)
                     if not arm[n].crosswise for d in (1, -1)]


def _arm_options(layout: BoardDrawing, straight, slot: int, points, counted):
    """``[(bend, tiles, markers, extent)]`` for every option of arm ``slot``."""
    out = []
    for bend in _options(layout, slot):
        tiles, center = _arm(layout, straight, slot, bend)
        markers = [_marker(points, counted, slot, center)] if slot in points else []
        extent = _extent(tiles, markers) if tiles or markers else (INF, INF, -INF, -INF)
        out.append((bend, tiles, markers, extent))
    return out


def frame_layout(layout: BoardDrawing, board_box: tuple[int, int, int, int],
                 margin: int = 12) -> Framing:
    """The framing that shows ``layout`` largest inside ``board_box``.

    Tries the straight layout and every way of turning the long arms (:func:`_options`): the
    branches east or west, the line's arms north or south.  Keeps the straightest one (fewest
    turns of the line, then of the branches, then the latest turns) whose tiles are at least
    ``COMFORT_UNIT`` pixels (or 95 % of the largest possible when that is smaller) and where no
    two tiles, no tile and marker, and no two markers overlap.  Each arm's options are laid out
    once; their combinations are sized together as arrays, so a long round stays fast.
    """
    room_w = board_box[2] - board_box[0] - 2 * margin
    room_h = board_box[3] - board_box[1] - 2 * margin
    if layout.empty:
        return Framing(float(MAX_UNIT), ((board_box[0] + board_box[2]) / 2,
                                         (board_box[1] + board_box[3]) / 2))
    straight = _line_boxes(layout)
    opening = _opening_tile(layout, straight)
    points, counted = layout.continuation_points(), layout.counted_ends()
    arms = [_arm_options(layout, straight, slot, points, counted) for slot in SLOTS]
    edges = [np.array(opening[1][i]) for i in range(4)]  # left, top, right, bottom
    line_turns = branch_turns = tiles_before = np.zeros(())
    for axis, options in enumerate(arms):
        shape = [1] * len(SLOTS)
        shape[axis] = len(options)
        for i, pick in enumerate((np.minimum, np.minimum, np.maximum, np.maximum)):
            edges[i] = pick(edges[i], np.array([o[3][i] for o in options]).reshape(shape))
        turned = np.array([o[0] is not None for o in options]).reshape(shape)
        if SLOTS[axis] in (WEST, EAST):
            line_turns = line_turns + turned
        else:
            branch_turns = branch_turns + turned
        tiles_before = tiles_before + np.array([o[0][0] if o[0] else 0
                                                for o in options]).reshape(shape)
    left, top, right, bottom = edges
    unit = np.maximum(float(MIN_UNIT), np.minimum(np.minimum(float(MAX_UNIT),
                                                             room_w / (right - left)),
                                                  room_h / (bottom - top)))
    straightness = (line_turns * 3 + branch_turns) * 1000 + (999 - tiles_before)
    good_enough = min(COMFORT_UNIT, 0.95 * float(unit.max()))
    alive = np.ones(unit.shape, dtype=bool)
    for _ in range(MAX_TRIES):
        passing = alive & (unit >= good_enough)
        if passing.any():
            rank = np.where(passing, straightness, np.inf)
            index = np.argmax(np.where(rank == rank.min(), unit, -np.inf))
        elif alive.any():  # every good enough framing collides: the largest that does not
            index = np.argmax(np.where(alive, unit, -np.inf))
        else:
            break
        choice = np.unravel_index(index, unit.shape)
        picked = [arm[k] for arm, k in zip(arms, choice)]
        tiles = [opening] + [t for option in picked for t in option[1]]
        if not _collides(tiles, [m for option in picked for m in option[2]]):
            bounds = [float(edge[choice]) for edge in edges]
            bends = tuple((slot, *option[0]) for slot, option in zip(SLOTS, picked)
                          if option[0] is not None)
            return _framing(float(unit[choice]), bounds, board_box, bends)
        alive[choice] = False
    tiles, markers = _unit_boxes(layout)  # never reached in practice: the straight layout
    return _framing(float(unit.flat[0]), _extent(tiles, markers), board_box, ())


def _framing(unit: float, bounds, board_box, bends) -> Framing:
    left, top, right, bottom = bounds
    origin = ((board_box[0] + board_box[2]) / 2 - (left + right) / 2 * unit,
              (board_box[1] + board_box[3]) / 2 - (top + bottom) / 2 * unit)
    return Framing(unit, origin, bends)


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
