"""The board picture: size, not blank, spinner and end markers drawn where the geometry says (issue 5).

Colours are checked at positions computed by :mod:`sevenrocks_env.render.geometry`, not against
golden images, so a font change does not break them.
"""

import itertools
import random
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from PIL import ImageDraw

from sevenrocks_env.render.geometry import MAX_UNIT, board_geometry, frame_layout
from sevenrocks_env.render.layout import build_layout
from sevenrocks_env.render.picture import (
    COUNTED, FELT, FOOTER_H, HOLE, HOLLOW, IVORY, SIZE, SPINNER, TEAM, board_box, draw_picture,
    hollow_width, render_picture, round_end_lines, spinner_outline,
)
from sevenrocks_env.rules import Match, apply_action, deal, legal_actions
from sevenrocks_env.tiles import NORTH, SOUTH, TILES, tiles_of

from positions import finished_round, round_played_out
from rules_examples import EXAMPLES, example_match

CASES = [(name, step) for name, seq in EXAMPLES.items() for step in range(1, len(seq) + 1)]


def close(pixel, colour, tolerance=40):
    return int(np.abs(np.asarray(pixel, int) - np.asarray(colour, int)).max()) <= tolerance


@pytest.mark.parametrize("name, step", CASES)
def test_example_pictures_mark_spinner_and_ends(name, step):
    match = example_match(EXAMPLES[name], steps=step)
    image, geometry = draw_picture(match, observer=0)
    pixels = np.asarray(image)
    assert pixels.shape == (SIZE[1], SIZE[0], 3) and pixels.dtype == np.uint8
    packed = (pixels[..., 0].astype(np.int32) << 16) | (pixels[..., 1].astype(np.int32) << 8) | pixels[..., 2]
    assert len(np.unique(packed)) > 20  # not blank
    assert np.array_equal(pixels, render_picture(match, observer=0))

    layout = build_layout(match.history[-1].moves)
    assert len(geometry.tiles) == step
    spinner = geometry.spinner
    assert (spinner is None) == (layout.spinner_index is None)
    if spinner is not None:
        x0, y0, x1, y1 = spinner_outline(spinner, geometry.unit)
        mid_y = (y0 + y1) // 2
        assert close(pixels[mid_y, x0 + 1], SPINNER) and close(pixels[mid_y, x1 - 1], SPINNER)

    counted = layout.counted_ends()
    assert {m.slot for m in geometry.markers} == set(layout.continuation_points())
    assert {m.slot: m.value for m in geometry.markers if m.counted} == counted
    assert sum(m.value for m in geometry.markers) == EXAMPLES[name][step - 1][2]  # the end sum
    for marker in geometry.markers:
        cx, cy = marker.center
        r = marker.radius
        if marker.counted:  # filled disc (below the number)
            assert close(pixels[cy + int(0.72 * r), cx], COUNTED), marker
        else:  # hollow dot: ring drawn, felt inside
            ring = r - hollow_width(r) // 2 - 1
            assert close(pixels[cy, cx + ring], HOLLOW), marker
            assert close(pixels[cy, cx], FELT), marker


def test_example_a_step_5_branches_are_hollow_ends_are_counted():
    """docs/rules.md example A: after step 5 both branches are legal but not counted; the 2 and 3 ends count."""
    _, geometry = draw_picture(example_match(EXAMPLES["A"], steps=5))
    assert not geometry.marker(NORTH).counted and not geometry.marker(SOUTH).counted
    spinner_x = (geometry.spinner.box[0] + geometry.spinner.box[2]) / 2
    assert abs(geometry.marker(NORTH).center[0] - spinner_x) <= 1
    assert geometry.marker(NORTH).center[1] < geometry.spinner.box[1]
    assert geometry.marker(SOUTH).center[1] > geometry.spinner.box[3]


def test_hands_face_up_only_for_spectator_or_observer():
    match = example_match(EXAMPLES["D"], steps=1)
    observer = render_picture(match, observer=0)
    spectator = render_picture(match, spectator=True)
    nobody = render_picture(match)
    assert not np.array_equal(observer, spectator) and not np.array_equal(observer, nobody)
    with pytest.raises(ValueError):
        render_picture(match, observer=7)
    # "only": a tile exchanged between two other hands (the observer's partner's included)
    # changes nothing in the observer's picture, while the spectator's shows it
    for seat in range(4):
        for a, b in itertools.combinations([s for s in range(4) if s != seat], 2):
            swapped = match.clone(keep_history=True)
            one, two = tiles_of(swapped.hands[a])[0], tiles_of(swapped.hands[b])[0]
            swapped.hands[a] ^= (1 << one) | (1 << two)
            swapped.hands[b] ^= (1 << one) | (1 << two)
            assert np.array_equal(render_picture(swapped, observer=seat),
                                  render_picture(match, observer=seat)), (seat, a, b)
            assert np.array_equal(render_picture(swapped), nobody), (a, b)
            assert not np.array_equal(render_picture(swapped, spectator=True), spectator), (a, b)


def test_empty_table_and_finished_match_render(texts):
    match = Match.new(3)
    assert render_picture(match).shape == (SIZE[1], SIZE[0], 3)
    assert f"seat {match.turn} opens (any tile)" in texts and "end sum 0" in texts
    rng = random.Random(0)
    match = Match.new(5, target=60)
    while not match.over:
        apply_action(match, rng.choice(legal_actions(match)))
    texts.clear()
    assert render_picture(match, spectator=True).shape == (SIZE[1], SIZE[0], 3)
    assert any(t.startswith(f"team {match.winner} (seats") and "WINS" in t for t in texts)


def _boxes_overlap(a, b):
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_full_round_layouts_fit_without_overlap(seed):
    """Any full round fits the board at a readable size, tiles and markers never overlap."""
    match = Match.from_deal(*deal(seed, 0))
    rng = random.Random(seed)
    while not match.awaiting_deal and not match.over:
        apply_action(match, rng.choice(legal_actions(match)))
    layout = build_layout(match.history[0].moves)
    box = board_box()
    geometry = board_geometry(layout, box, frame_layout(layout, box))
    assert geometry.unit >= 20  # a domino at least 40 x 20 pixels
    boxes = [t.box for t in geometry.tiles] + [
        (m.center[0] - m.radius, m.center[1] - m.radius, m.center[0] + m.radius, m.center[1] + m.radius)
        for m in geometry.markers]
    for x0, y0, x1, y1 in boxes:
        assert box[0] <= x0 and x1 <= box[2] and box[1] <= y0 and y1 <= box[3]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not _boxes_overlap(a, b), (a, b)


@pytest.mark.parametrize("target, most_holes", [(250, 50), (500, 100), (5000, 100)])
def test_score_track_has_a_bounded_number_of_holes(target, most_holes):
    """A record's target sizes no work: the score track has at most 100 holes per team, however
    large the target (a target of 10**6 used to mean 200,000 holes per frame)."""
    from PIL import Image, ImageDraw

    from sevenrocks_env.render.picture import draw_scores
    from sevenrocks_env.rules import Match

    calls = []

    class Counting(ImageDraw.ImageDraw):
        def ellipse(self, *args, **kwargs):
            calls.append(args)
            return super().ellipse(*args, **kwargs)

    image = Image.new("RGB", (900, 120))
    draw_scores(Counting(image), Match.new(0, target=target), 900)
    assert len(calls) == 2 * most_holes


# -- geometry ---------------------------------------------------------------------------------

def _geometry(name, steps):
    match = example_match(EXAMPLES[name], steps=steps)
    return board_geometry(build_layout(match.history[-1].moves), board_box())


def test_branch_tiles_point_their_inner_half_at_the_spinner():
    """Example A: 1|5 starts branch A (north, drawn upwards): its 1 touches the spinner, so it is
    the bottom half; 1|3 starts branch B (south, downwards): its 1 is the top half."""
    geometry = _geometry("A", 9)
    north = next(t for t in geometry.tiles if t.placed.name == "1|5")
    south = next(t for t in geometry.tiles if t.placed.name == "1|3")
    assert north.vertical and (north.first_half, north.second_half) == (5, 1)
    assert south.vertical and (south.first_half, south.second_half) == (1, 3)


def test_branch_tiles_do_not_touch_the_spinner():
    geometry = _geometry("A", 9)
    spinner = geometry.spinner
    north = next(t for t in geometry.tiles if t.placed.name == "1|5")
    south = next(t for t in geometry.tiles if t.placed.name == "1|3")
    assert north.box[3] < spinner.box[1] and south.box[1] > spinner.box[3]


def test_a_small_layout_is_not_drawn_larger_than_max_unit():
    geometry = _geometry("A", 1)
    assert geometry.unit <= MAX_UNIT
    box = geometry.tiles[0].box
    assert box[2] - box[0] <= 2 * MAX_UNIT + 1


# -- picture ----------------------------------------------------------------------------------

def test_the_last_tile_is_outlined_in_its_sides_colour():
    """docs/rules.md: the last tile laid is outlined in its side's colour (team 0 blue, team 1 red)."""
    for step, team in ((3, 0), (4, 1)):  # example A: seat 2 lays 4|4, seat 3 lays 3|4
        match = example_match(EXAMPLES["A"], steps=step)
        image, geometry = draw_picture(match, observer=0)
        tile = next(t for t in geometry.tiles if t.placed.move == step - 1)
        x0, y0, x1, y1 = tile.box
        assert close(image.getpixel(((x0 + x1) // 2, y0 + 1)), TEAM[team])


def test_a_score_of_exactly_five_fills_the_first_peg_hole():
    match = Match.new(0)
    match.scores = [5, 4]
    image, _ = draw_picture(match, observer=0)
    assert close(image.getpixel((330, 14 + 11)), TEAM[0], 10)       # team 0: 5 >= 5
    assert close(image.getpixel((330, 14 + 40 + 11)), HOLE, 10)     # team 1: 4 < 5


@pytest.mark.parametrize("won", [False, True], ids=["counted", "won"])
def test_other_hands_are_face_up_once_a_counted_round_is_over(won):
    """R1: hands are shown when the round is over, to count what is left (R7); a won round is
    not counted (R8), so its hands stay hidden (as on the web page: they were drawn face up to
    any observer)."""
    match = finished_round(won=won, target=30)
    image, _ = draw_picture(match, observer=0)
    row_h = (FOOTER_H - 10) // 4
    checked = 0
    for seat in (1, 2, 3):
        if match.hands[seat]:
            y = SIZE[1] - FOOTER_H + 5 + seat * row_h
            assert close(image.getpixel((332, y + 16)), IVORY, 10) != won
            checked += 1
    assert checked


@pytest.mark.parametrize("observer", [4, "1", 1.5, True])
def test_observer_must_be_a_seat(observer):
    """A string was a TypeError from a comparison, 1.5 drew a board with no hand face up, and
    True drew seat 1's hand labelled "(you)"."""
    with pytest.raises(ValueError, match="observer must be a seat 0..3 or None, got"):
        draw_picture(Match.new(0), observer=observer)


def test_round_end_lines_add_partners_deductions():
    """R1, R7: team 0 is seats 0 and 2, team 1 seats 1 and 3."""
    log = finished_round(accept=lambda log: log.deductions[1] != log.deductions[2]).history[-1]
    d = log.deductions
    assert f"deductions: team 0 -{d[0] + d[2]}, team 1 -{d[1] + d[3]}" in round_end_lines(log)
    won = finished_round(won=True, target=5).history[-1]
    assert not any(line.startswith("deductions") for line in round_end_lines(won))  # R8


@pytest.fixture
def texts(monkeypatch):
    seen = []
    real = ImageDraw.ImageDraw.text

    def text(self, xy, string, *args, **kwargs):
        seen.append(string)
        return real(self, xy, string, *args, **kwargs)

    monkeypatch.setattr(ImageDraw.ImageDraw, "text", text)
    return seen


def test_the_winner_label_and_no_seat_to_move_after_the_match(texts):
    match = finished_round(won=True, target=5)
    assert match.over and match.winner is not None
    draw_picture(match, spectator=True)
    labels = [t for t in texts if t.startswith("team ") and "(seats" in t]
    assert [("WINS" in t) for t in labels] == [match.winner == 0, match.winner == 1]
    assert not any("to move" in t for t in texts)


def test_a_counted_round_shows_each_hand_s_pips_and_deduction(texts):
    """R7: every seat row at a counted round's end: the pips left in hand (both halves of every
    tile) and the deduction they round to."""
    match = finished_round(accept=lambda log: sum(h != 0 for h in log.remaining_hands()) >= 2)
    log = match.history[-1]
    draw_picture(match, spectator=True)
    pips = [sum(TILES[t][0] + TILES[t][1] for t in tiles_of(hand))
            for hand in log.remaining_hands()]
    assert [t for t in texts if re.search(" pips? -> ", t)] == [
        f"{p} pip{'' if p == 1 else 's'} -> {'-' + str(d) if d else '0'}"
        for p, d in zip(pips, log.deductions)]
    assert sum(pips) > 0


def test_a_match_cut_off_by_its_round_limit_says_so(texts):
    match = Match.new(3, max_rounds=1)
    rng = random.Random(0)
    while not match.over:
        apply_action(match, rng.choice(legal_actions(match)))
    draw_picture(match, spectator=True)
    assert match.truncated and "match over: round limit reached, no winner" in texts
    assert not any("to move" in t for t in texts)


def test_last_points_overrides_the_points_shown(texts):
    match = example_match(EXAMPLES["A"], steps=3)
    draw_picture(match, observer=0, last_points=77)
    assert any(t.endswith("->  77 points") for t in texts)


def _random_round_layouts(seeds):
    for seed in seeds:
        yield build_layout(round_played_out(seed).history[-1].moves)


def test_branches_turn_only_after_two_or_more_tiles():
    """frame_layout: a long branch may turn after 2 or more tiles, never after one."""
    turned = 0
    for layout in _random_round_layouts(range(12)):
        bends = frame_layout(layout, board_box()).bends
        assert all(n >= 2 for _, n, _ in bends)
        turned += bool(bends)
    assert turned  # some of these layouts do turn


def test_among_equally_straight_framings_the_largest_is_kept():
    """frame_layout shows the layout largest: no framing with the same turns count and the same
    tiles before the turns gives larger tiles than the one chosen."""
    from sevenrocks_env.render.geometry import MIN_UNIT, _extent, _unit_boxes
    box, margin = board_box(), 12  # frame_layout's default margin
    room_w, room_h = box[2] - box[0] - 2 * margin, box[3] - box[1] - 2 * margin
    checked = 0
    for layout in _random_round_layouts(range(40)):
        chosen = frame_layout(layout, box)
        if not chosen.bends:
            continue
        checked += 1
        total = sum(n for _, n, _ in chosen.bends)
        options = {s: [None] + [(n, d) for n in range(len(layout.branch(s)) - 1, 1, -1)
                                for d in (1, -1)] for s in (NORTH, SOUTH)}
        for north in options[NORTH]:
            for south in options[SOUTH]:
                bends = {s: b for s, b in ((NORTH, north), (SOUTH, south)) if b is not None}
                if len(bends) != len(chosen.bends) or sum(n for n, _ in bends.values()) != total:
                    continue
                left, top, right, bottom = _extent(*_unit_boxes(layout, bends))
                unit = max(MIN_UNIT, min(MAX_UNIT, room_w / (right - left),
                                         room_h / (bottom - top)))
                assert unit <= chosen.unit + 1e-9
    assert checked


@pytest.mark.parametrize("direction", [1, -1])
def test_a_turned_branch_keeps_its_inner_half_towards_the_spinner(direction):
    """A branch turned east (+1) or west (-1): each turned tile's half nearer the spinner (west
    side when turning east, east side when turning west) is its inner half."""
    from sevenrocks_env.render.geometry import _unit_boxes
    layout = next(lay for lay in _random_round_layouts(range(200))
                  if len(lay.north) >= 3 and not any(t.crosswise for t in lay.north[1:]))
    tiles, _ = _unit_boxes(layout, {NORTH: (1, direction)})
    turned = [t for t in tiles if t[0] in layout.north[1:]]
    assert len(turned) == len(layout.north) - 1
    for placed, box, vertical, left, right, spinner in turned:
        assert not vertical
        near, far = (left, right) if direction > 0 else (right, left)
        assert (near, far) == placed.halves


@pytest.mark.parametrize("over", [False, True, "truncated"])
def test_a_match_without_history_is_not_said_to_await_its_opening_tile(texts, over):
    """A clone (no history, so no layout) with tiles down, or over, was captioned "seat N opens
    (any tile)": its last mover stays on ``turn`` after a win or the round limit."""
    match = Match.new(7, target=60, max_rounds=1 if over == "truncated" else None)
    rng = random.Random(7)
    while not (match.over if over else match.placements >= 3):
        apply_action(match, rng.choice(legal_actions(match)))
    assert match.turn >= 0 and not match.opening or match.over
    draw_picture(match.clone(), observer=0)
    assert not any("opens (any tile)" in t for t in texts), texts
    assert ("match over: round limit reached, no winner" in texts) == (over == "truncated")
    assert any(t.startswith("to move: seat") for t in texts) == (not over)
