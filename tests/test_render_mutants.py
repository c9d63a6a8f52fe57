"""The text board and the layout rebuilt for drawing: what a mutation audit of
``sevenrocks_env/render`` found untested (the round a board shows, the opener's line, how a
round ended, move indices, a 0|0 spinner, the layout's refusals and bookkeeping)."""

import random

import pytest

from sevenrocks_env.render.layout import build_layout, layout_from_tiles, moves_of
from sevenrocks_env.render.text import (
    describe_move, layout_lines, render_text, round_end_text, round_result,
)
from sevenrocks_env.rules import Match, Round, apply_action, legal_actions
from sevenrocks_env.tiles import EAST, KNOCK, NORTH, SOUTH, WEST, encode_action, parse_tile

from rules_examples import EXAMPLES


def _second_round_with_moves(seed=3):
    match = Match.new(seed)
    rng = random.Random(seed)
    while len(match.history) < 2 or len(match.history[-1].moves) < 3:
        apply_action(match, rng.choice(legal_actions(match)))
    return match


# -- the text board -------------------------------------------------------------------------

def test_a_later_round_board_shows_that_rounds_layout_and_last_move():
    match = _second_round_with_moves()
    log = match.history[-1]
    text = render_text(match)
    assert f"  last: {describe_move(log, -1)}" in text.splitlines()
    for line in layout_lines(build_layout(log.moves)):
        assert "  " + line in text.splitlines()


def test_the_opener_is_said_to_open_the_round():
    match = Match.new(0)
    assert match.opening
    seat = match.turn
    assert f"  to move: seat {seat} (team {seat % 2}) - opens the round" \
        in render_text(match).splitlines()
    apply_action(match, legal_actions(match)[0])
    assert "opens the round" not in render_text(match).split("  last:")[0]
    assert "- opens the round" not in render_text(match)


def test_a_match_cut_off_by_its_round_limit_says_so():
    match = Match.new(3, max_rounds=1)
    rng = random.Random(0)
    while not match.over:
        apply_action(match, rng.choice(legal_actions(match)))
    assert match.truncated and match.winner is None
    assert "  match over (round limit reached)" in render_text(match).splitlines()


@pytest.mark.parametrize("index", [3, 4, -4, -5])
def test_describe_move_refuses_an_index_past_either_end(index):
    moves = [(0, encode_action(parse_tile("1|4"), WEST)), (1, KNOCK), (2, KNOCK)]
    with pytest.raises(IndexError, match="out of range: the round has 3 moves"):
        describe_move(moves, index)


def test_how_a_round_ended_names_domino_and_block_apart():
    log = Round(1, [0, 0, 0, 0])
    log.result, log.finisher = "domino", 2
    assert round_result(log) == "round over: seat 2 dominoed"
    log.result, log.finisher = "blocked", None
    assert round_result(log) == "round over: blocked, nobody can place a tile (R6)"


def test_the_round_end_writes_each_teams_score_under_its_name():
    log = Round(0, [0, 0, 0, 0])
    log.result, log.finisher = "domino", 0
    log.deductions, log.scores = [0, 10, 5, 15], [140, 35]
    assert round_end_text(log) == ("round over: seat 0 dominoed. Deductions: seat 0 0, "
                                   "seat 1 -10, seat 2 -5, seat 3 -15. "
                                   "Scores: team 0 140, team 1 35")


# -- the layout -----------------------------------------------------------------------------

def test_the_opening_tile_is_tracked_as_tiles_go_west():
    layout = layout_from_tiles([(t, s) for t, s, *_ in EXAMPLES["A"]])
    assert layout.line[layout.opening_index].move == 0
    assert layout.opening_index == 2  # 1|1 and 1|2 went west of it


def test_a_blank_spinner_becomes_internal_with_branches_at_zero():
    layout = layout_from_tiles([("0|0", WEST), ("0|1", WEST), ("0|2", EAST)])
    assert layout.spinner == 0 and layout.spinner_internal
    assert layout.continuation_points() == {WEST: 1, EAST: 2, NORTH: 0, SOUTH: 0}
    assert layout.outer_tile(NORTH) is layout.line[layout.spinner_index]
    assert any(line.lstrip().startswith("branch A (north) from <0:0>")
               for line in layout_lines(layout))


def test_an_unstarted_branch_joins_nothing_until_the_spinner_is_internal():
    assert layout_from_tiles([("1|4", WEST)]).outer_tile(NORTH) is None  # no spinner
    one_side = layout_from_tiles([("2|2", WEST), ("2|5", WEST)])          # east still open
    assert one_side.spinner_index is not None and not one_side.spinner_internal
    assert one_side.outer_tile(NORTH) is None and one_side.outer_tile(SOUTH) is None


def test_a_placement_on_a_slot_not_open_is_refused():
    moves = [(0, encode_action(parse_tile("1|4"), WEST)), (1, encode_action(parse_tile("1|1"),
                                                                          NORTH))]
    with pytest.raises(ValueError, match=r"move 1: slot north is not open for 1\|1"):
        build_layout(moves)


@pytest.mark.parametrize("action", [113, 200, -1])
def test_an_action_out_of_range_is_refused(action):
    with pytest.raises(ValueError, match=f"move 0: action {action} is out of range 0..112"):
        build_layout([(0, action)])


def test_layout_from_tiles_plays_in_turn_and_tiles_are_in_placement_order():
    layout = layout_from_tiles([(t, s) for t, s, *_ in EXAMPLES["A"]])
    placed = layout.tiles()
    assert [p.move for p in placed] == list(range(len(EXAMPLES["A"])))
    assert [p.seat for p in placed] == [i % 4 for i in range(len(EXAMPLES["A"]))]
    assert [p.name for p in placed] == [t for t, *_ in EXAMPLES["A"]]


def test_a_record_round_without_moves_has_none():
    assert moves_of({}) == [] and build_layout({"result": None}).empty


# -- the picture's geometry and drawing -----------------------------------------------------

def _texts(monkeypatch):
    from PIL import ImageDraw
    seen, real = [], ImageDraw.ImageDraw.text

    def text(self, xy, string, *args, **kwargs):
        seen.append(string)
        return real(self, xy, string, *args, **kwargs)

    monkeypatch.setattr(ImageDraw.ImageDraw, "text", text)
    return seen


def test_line_tiles_are_drawn_with_their_west_half_first_and_doubles_crosswise():
    from sevenrocks_env.render.geometry import board_geometry
    from sevenrocks_env.render.picture import board_box
    layout = layout_from_tiles([(t, s) for t, s, *_ in EXAMPLES["A"]])
    geometry = board_geometry(layout, board_box())
    in_line = {p.move for p in layout.line}
    for box in geometry.tiles:
        x0, y0, x1, y1 = box.box
        if box.placed.move in in_line:
            assert (box.first_half, box.second_half) == box.placed.halves
            assert (y1 - y0 > x1 - x0) == box.placed.crosswise  # a double stands across
        else:  # a straight branch: ordinary tiles stand, doubles lie across
            assert (y1 - y0 > x1 - x0) == (not box.placed.crosswise)


def test_with_a_fixed_framing_the_opening_tile_stays_put_as_tiles_go_west():
    from sevenrocks_env.render.geometry import board_geometry, frame_layout
    from sevenrocks_env.render.picture import board_box
    steps = [(t, s) for t, s, *_ in EXAMPLES["A"]]
    framing = frame_layout(layout_from_tiles(steps), board_box())
    first = board_geometry(layout_from_tiles(steps[:1]), board_box(), framing)
    last = board_geometry(layout_from_tiles(steps), board_box(), framing)
    assert [t.box for t in last.tiles if t.placed.move == 0] == [first.tiles[0].box]


def test_a_full_round_is_drawn_between_the_score_panel_and_the_seats():
    from positions import round_played_out
    from sevenrocks_env.render.picture import FOOTER_H, HEADER_H, SIZE, draw_picture
    for seed in range(4):
        _, geometry = draw_picture(round_played_out(seed), spectator=True)
        for box in geometry.tiles:
            x0, y0, x1, y1 = box.box
            assert 0 <= x0 and x1 <= SIZE[0] and HEADER_H <= y0 and y1 <= SIZE[1] - FOOTER_H


@pytest.mark.parametrize("vertical", [False, True])
def test_a_domino_draws_its_first_number_in_the_left_or_top_square(vertical):
    import numpy as np
    from PIL import Image, ImageDraw
    from sevenrocks_env.render.picture import IVORY, draw_domino
    image = Image.new("RGB", (80, 80), IVORY)
    box = (0, 0, 40, 80) if vertical else (0, 0, 80, 40)
    draw_domino(ImageDraw.Draw(image), box, 0, 6, vertical)
    pixels = np.asarray(image).astype(int)
    dark = np.abs(pixels - np.asarray(IVORY)).max(axis=2) > 100
    if vertical:  # inside each square, away from the border and the middle line
        first, second = dark[6:34, 6:34], dark[46:74, 6:34]
    else:
        first, second = dark[6:34, 6:34], dark[6:34, 46:74]
    assert not first.any() and second.sum() > 20  # 0: no pips; 6: six pips


def test_the_status_says_the_first_tile_opened_the_round(monkeypatch):
    from rules_examples import example_match
    from sevenrocks_env.render.picture import draw_picture
    texts = _texts(monkeypatch)
    match = example_match(EXAMPLES["A"], steps=1)
    seat, action, _, points = match.history[-1].moves[0]
    draw_picture(match, observer=0)
    assert f"last: seat {seat} opened with {EXAMPLES['A'][0][0]}  ->  {points} points" in texts
    texts.clear()
    draw_picture(example_match(EXAMPLES["A"], steps=2), observer=0)
    assert not any("opened with" in t for t in texts)
    assert any(t.startswith("last: seat 1 played ") for t in texts)


def test_describe_move_names_the_tile_a_branch_placement_joins_and_the_spinner_once():
    log = [(i % 4, encode_action(parse_tile(t), s)) for i, (t, s, *_) in enumerate(EXAMPLES["A"])]
    assert EXAMPLES["A"][7][:2] == ("0|5", NORTH)
    assert "0|5 on branch A (north), joining the 5 of 5|5" in describe_move(log, 7)
    spinner = describe_move(log, 1)  # 1|1: the first double becomes the spinner
    assert "first double: the spinner" in spinner and "ordinary double" not in spinner


def test_layout_lines_of_an_empty_table_and_of_a_line_without_a_double():
    assert layout_lines(build_layout([])) == ["line: (empty: the opener may play any tile)"]
    lines = layout_lines(layout_from_tiles([("1|4", WEST), ("4|6", EAST)]))
    assert lines == ["line (west -> east):  W (1) 1|4 4|6 (6) E",
                     "spinner: none yet (the first double played becomes the spinner)"]


def test_the_east_marker_is_as_far_beyond_the_line_as_the_west_one():
    from sevenrocks_env.render.geometry import board_geometry
    from sevenrocks_env.render.picture import board_box
    layout = layout_from_tiles([(t, s) for t, s, *_ in EXAMPLES["A"][:4]])
    geometry = board_geometry(layout, board_box())
    line = [t.box for t in geometry.tiles if t.placed.move in {p.move for p in layout.line}]
    west_gap = min(b[0] for b in line) - geometry.marker(WEST).center[0]
    east_gap = geometry.marker(EAST).center[0] - max(b[2] for b in line)
    assert west_gap > 0 and abs(east_gap - west_gap) <= 1
    assert geometry.marker(WEST).center[1] == geometry.marker(EAST).center[1]


def test_the_seat_rows_and_status_name_counts_and_teams(monkeypatch):
    from sevenrocks_env.render.picture import draw_picture
    texts = _texts(monkeypatch)
    match = Match.new(5)
    rng = random.Random(2)
    while not (match.turn in (2, 3) and any(h.bit_count() == 1 for h in match.hands)):
        apply_action(match, rng.choice(legal_actions(match)))
        assert not match.over and len(match.history) == 1, "no such position in this round"
    draw_picture(match, spectator=True)
    assert f"to move: seat {match.turn} (team {match.turn % 2})" in texts
    assert "1 tile" in texts or "1 tile  <- to move" in texts


def test_a_long_branch_that_fits_comfortably_straight_is_not_turned():
    """Straight, five tiles up the north branch still get tiles over ``COMFORT_UNIT`` pixels:
    kept straight, though turning the branch would draw them larger."""
    from sevenrocks_env.render.geometry import COMFORT_UNIT, MAX_UNIT, frame_layout
    from sevenrocks_env.render.picture import board_box
    layout = layout_from_tiles([("1|1", WEST), ("1|2", WEST), ("1|3", EAST), ("1|4", NORTH),
                                ("4|5", NORTH), ("5|6", NORTH), ("6|0", NORTH), ("0|2", NORTH)])
    framing = frame_layout(layout, board_box())
    assert framing.bends == ()
    assert COMFORT_UNIT <= framing.unit < 0.95 * MAX_UNIT  # a turn would have reached MAX_UNIT
