"""The line's arms turn at the board's edge (render/geometry.py): a long line (up to 28 tiles,
no spinner or a long arm) turns north or south instead of shrinking into a thin strip, with the
touching halves still meeting; no framing where tiles or markers overlap is chosen; layouts
that fit today are framed as before; a round's frames share its final layout's framing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from positions import round_played_out
from sevenrocks_env.render import geometry
from sevenrocks_env.render.geometry import (
    GAP, MARKER_GAP, MARKER_RADIUS, Framing, _collides, _unit_boxes, board_geometry, frame_layout)
from sevenrocks_env.render.layout import build_layout, layout_from_tiles
from sevenrocks_env.tiles import EAST, NORTH, SOUTH, WEST

WIDE, TALL = (0, 0, 1000, 560), (0, 0, 560, 1000)

# the 21 tiles that are not doubles, in one chain: no spinner ever (R4)
CHAIN = ["1|2", "2|3", "3|4", "4|5", "5|6", "6|0", "0|2", "2|4", "4|6", "6|1", "1|3", "3|5",
         "5|0", "0|3", "3|6", "6|2", "2|5", "5|1", "1|4", "4|0"]
ALL_EAST = [("0|1", WEST)] + [(t, EAST) for t in CHAIN]           # one arm of 20 tiles
BOTH_WAYS = [("0|1", WEST)] + [step for pair in zip(
    [(t, EAST) for t in CHAIN[:10]],
    [(t, WEST) for t in ["0|4", "4|1", "1|5", "5|2", "2|6", "6|3", "3|0", "0|5", "5|3", "3|1"]])
    for step in pair]                                               # 10 tiles each way


def _gap(a, b) -> float:
    """Distance between two pixel boxes (0 where they touch or overlap)."""
    dx = max(a[0] - b[2], b[0] - a[2], 0)
    dy = max(a[1] - b[3], b[1] - a[3], 0)
    return (dx * dx + dy * dy) ** 0.5


def _halves(tile):
    """The two half-squares of a drawn tile with their numbers: [(box, number), ...]."""
    x0, y0, x1, y1 = tile.box
    if tile.vertical:
        mid = (y0 + y1) / 2
        return [((x0, y0, x1, mid), tile.first_half), ((x0, mid, x1, y1), tile.second_half)]
    mid = (x0 + x1) / 2
    return [((x0, y0, mid, y1), tile.first_half), ((mid, y0, x1, y1), tile.second_half)]


def _arm(layout, drawn, slot):
    """The drawn tiles of line arm ``slot``, from the opening tile outward."""
    by_move = {t.placed.move: t for t in drawn.tiles}
    line = layout.line
    order = (line[layout.opening_index::-1] if slot == WEST else line[layout.opening_index:])
    return [by_move[p.move] for p in order]


def _meet(a, b, unit: float) -> bool:
    """Two half-squares face each other across a whole side, one gap apart."""
    across_x = min(a[3], b[3]) - max(a[1], b[1])  # shared height, for side by side
    across_y = min(a[2], b[2]) - max(a[0], b[0])  # shared width, for one above the other
    return _gap(a, b) <= GAP * unit + 2 and max(across_x, across_y) >= unit - 2


def _overlap(a, b) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > 0 and min(a[3], b[3]) - max(a[1], b[1]) > 0


@pytest.mark.parametrize("box", [TALL, WIDE], ids=["tall", "wide"])
@pytest.mark.parametrize("steps", [ALL_EAST, BOTH_WAYS], ids=["one-arm", "both-arms"])
def test_a_long_line_without_a_spinner_turns_and_stays_readable(steps, box):
    layout = layout_from_tiles(steps)
    assert layout.spinner_index is None and len(layout.line) == 21
    framing = frame_layout(layout, box)
    assert {slot for slot, _, _ in framing.bends} & {WEST, EAST}  # the line turned
    drawn = board_geometry(layout, box, framing)
    assert drawn.unit >= 18  # straight it was ~11 (tall) and ~21 (wide) pixels per unit
    boxes = [t.box for t in drawn.tiles]
    assert all(min(b[2] - b[0], b[3] - b[1]) >= 18 for b in boxes)
    assert not any(_overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    assert all(box[0] <= b[0] and b[2] <= box[2] and box[1] <= b[1] and b[3] <= box[3]
               for b in boxes)
    for slot in (WEST, EAST):
        arm = _arm(layout, drawn, slot)
        for inner, outer in zip(arm, arm[1:]):
            # the shared number: the touching halves meet, the other halves stay apart
            joint = set(inner.placed.halves) & set(outer.placed.halves)
            assert len(joint) == 1
            (a, _), = [h for h in _halves(inner) if h[1] in joint]
            (b, _), = [h for h in _halves(outer) if h[1] in joint]
            assert _meet(a, b, drawn.unit)
            (far, _), = [h for h in _halves(outer) if h[1] not in joint]
            assert not _meet(a, far, drawn.unit)  # at a turn it touches a corner at most
        if len(arm) < 2:
            continue
        # the open number faces outward: the marker is next to the last tile's outer half
        last, marker = arm[-1], drawn.marker(slot)
        (outer_half, number), = [h for h in _halves(last) if h[1] != (
            set(last.placed.halves) & set(arm[-2].placed.halves)).pop()]
        assert marker.number == number
        cx, cy = marker.center
        point = (cx, cy, cx, cy)
        reach = (MARKER_GAP + MARKER_RADIUS) * drawn.unit + 2
        assert _gap(point, outer_half) <= reach < _gap(point, [h for h in _halves(last)
                                                                if h[0] != outer_half][0][0])


def test_a_turned_line_arm_keeps_its_halves_inner_first():
    """South (+1) or north (-1): each turned east-arm tile stands, its inner half towards the
    opening tile (top when turning south, bottom when turning north)."""
    layout = layout_from_tiles(ALL_EAST)
    for direction in (1, -1):
        tiles, _ = _unit_boxes(layout, {EAST: (3, direction)})
        turned = [t for t in tiles if t[0] in layout.line[4:]]
        assert len(turned) == len(layout.line) - 4
        for placed, box, vertical, top, bottom, _ in turned:
            assert vertical and abs(box[3] - box[1] - 2.0) < 1e-9
            assert (top, bottom) == (placed.halves if direction > 0 else placed.halves[::-1])


def test_a_colliding_framing_is_never_chosen(monkeypatch):
    """Round 3's final layout in a square box: the straightest comfortable framing turns the
    east arm and branch B (south) both into the same corner.  The overlap check sees it and
    frame_layout takes the next framing instead."""
    layout, box = build_layout(round_played_out(3).history[-1].moves), (0, 0, 560, 560)
    colliding = {EAST: (4, 1), SOUTH: (5, 1)}
    assert _collides(*_unit_boxes(layout, colliding))
    monkeypatch.setattr(geometry, "_collides", lambda tiles, markers: False)
    blind = frame_layout(layout, box)
    assert {s: (n, d) for s, n, d in blind.bends} == colliding
    monkeypatch.undo()
    chosen = frame_layout(layout, box)
    assert chosen.bends != blind.bends
    assert not _collides(*_unit_boxes(layout, {s: (n, d) for s, n, d in chosen.bends}))


def test_a_marker_on_a_tile_is_a_collision():
    layout = layout_from_tiles(ALL_EAST[:3])
    tiles, markers = _unit_boxes(layout)
    assert not _collides(tiles, markers)
    slot, (cx, cy), *rest = markers[0]
    box = tiles[0][1]
    moved = [(slot, (box[0] + 0.2, cy), *rest)] + markers[1:]
    assert _collides(tiles, moved)


@pytest.mark.parametrize("seed, box, expected", [
    (0, WIDE, Framing(33.881163084702905, (306.87737041719345, 299.9898862199747),
                      ((NORTH, 4, 1),))),
    (2, WIDE, Framing(30.982658959537577, (487.60693641618496, 352.80924855491327),
                      ((NORTH, 4, 1), (SOUTH, 2, 1)))),
    (38, WIDE, Framing(30.214205186020294, (518.1285231116121, 169.71815107102594), ())),
    (45, WIDE, Framing(32.06307490144546, (721.2352168199737, 380.9986859395532), ())),
])
def test_a_layout_that_fits_comfortably_is_framed_as_before(seed, box, expected):
    """Framings from before the line could turn (tiles of at least COMFORT_UNIT pixels)."""
    layout = build_layout(round_played_out(seed).history[-1].moves)
    assert frame_layout(layout, box) == expected


def test_frames_of_a_round_keep_their_tiles_where_its_line_turns():
    """A replay frames each round by its final layout: the line's turns count from the opening
    tile, so a tile never moves, also in rounds whose spinner came later and elsewhere."""
    checked = 0
    for seed in range(60):
        moves = round_played_out(seed).history[-1].moves
        final = build_layout(moves)
        framing = frame_layout(final, TALL)
        if not {s for s, _, _ in framing.bends} & {WEST, EAST}:
            continue
        if final.spinner_index in (None, final.opening_index):
            continue
        checked += 1
        where = {t.placed.move: t.box for t in board_geometry(final, TALL, framing).tiles}
        for k in range(1, len(moves)):
            for tile in board_geometry(build_layout(moves[:k]), TALL, framing).tiles:
                assert tile.box == where[tile.placed.move]
        if checked == 3:
            break
    assert checked == 3


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), width=st.integers(300, 1400), height=st.integers(300, 1400))
def test_every_final_layout_is_framed_without_overlaps_inside_its_box(seed, width, height):
    """For random played rounds: frame_layout's framing has no overlapping tiles or markers,
    fits the box, and in the page's tall box (a phone) its tiles are at least 13 pixels a unit
    (straight, a long line got ~10)."""
    layout = build_layout(round_played_out(seed).history[-1].moves)
    for box in ((0, 0, width, height), TALL):
        framing = frame_layout(layout, box)
        assert not _collides(*_unit_boxes(layout, {s: (n, d) for s, n, d in framing.bends}))
        drawn = board_geometry(layout, box, framing)
        for b in [t.box for t in drawn.tiles] + [
                (m.center[0] - m.radius, m.center[1] - m.radius,
                 m.center[0] + m.radius, m.center[1] + m.radius) for m in drawn.markers]:
            assert box[0] <= b[0] and b[2] <= box[2] and box[1] <= b[1] and b[3] <= box[3]
    assert framing.unit >= 13


def _joins(layout):
    """``(tile, the tile it joined)`` for every placed tile but the opening one."""
    line, opening = layout.line, layout.opening_index
    for slot in (WEST, EAST):
        arm = line[opening::-1] if slot == WEST else line[opening:]
        yield from zip(arm[1:], arm)
    for slot in (NORTH, SOUTH):
        branch = layout.branch(slot)
        if branch:
            yield from zip(branch, [line[layout.spinner_index], *branch])


def _doubles_joined_on_their_long_side(layout, box) -> bool:
    """Every double lies crosswise to the tile it joined (R3): that tile touches a long side."""
    drawn = {t.placed.move: t.box for t in board_geometry(layout, box).tiles}
    for tile, joined in _joins(layout):
        if tile.crosswise:
            x0, y0, x1, y1 = drawn[tile.move]
            j = drawn[joined.move]
            beside = j[2] <= x0 + 1 or j[0] >= x1 - 1   # joined west or east of the double
            if beside != (y1 - y0 > x1 - x0):           # a standing double is joined beside
                return False
    return True


def test_an_arm_never_turns_at_a_double():
    """A turn whose first tile was a double laid it crosswise to the turned run, in line with
    the tile it joined: round 4's 6|6 at the east end of the web's wide board looked like any
    tile of the line, its counted-end disc under it (6.9% of played rounds there)."""
    layout = build_layout(round_played_out(4).history[-1].moves)
    assert _doubles_joined_on_their_long_side(layout, WIDE)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_every_double_lies_crosswise_to_the_tile_it_joined(seed):
    layout = build_layout(round_played_out(seed).history[-1].moves)
    assert all(_doubles_joined_on_their_long_side(layout, box) for box in (WIDE, TALL))
