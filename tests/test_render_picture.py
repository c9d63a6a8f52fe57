"""The board picture: size, not blank, spinner and end markers drawn where the geometry says (issue 5).

Colours are checked at positions computed by :mod:`sevenrocks_env.render.geometry`, not against
golden images, so a font change does not break them.
"""

import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from sevenrocks_env.render.geometry import board_geometry, frame_layout
from sevenrocks_env.render.layout import build_layout
from sevenrocks_env.render.picture import (
    COUNTED, FELT, HOLLOW, SIZE, SPINNER, board_box, draw_picture, hollow_width, render_picture,
    spinner_outline,
)
from sevenrocks_env.rules import Match, apply_action, deal, legal_actions
from sevenrocks_env.tiles import NORTH, SOUTH

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


def test_empty_table_and_finished_match_render():
    match = Match.new(3)
    assert render_picture(match).shape == (SIZE[1], SIZE[0], 3)
    rng = random.Random(0)
    match = Match.new(5, target=60)
    while not match.over:
        apply_action(match, rng.choice(legal_actions(match)))
    assert render_picture(match, spectator=True).shape == (SIZE[1], SIZE[0], 3)


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


@pytest.mark.parametrize("target, most_holes", [(250, 50), (500, 100), (10 ** 6, 100)])
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
