"""Session 53 mutation audit: tests for what the existing tests let through in today's changes
(the line's turns and framing search in render/geometry.py, the Sevenrocks-Board header, the
batched arena's cut-match records, shown_kind and the record messages, replay --check, arena
display names, agent answers, the low-score round index and observation bounds)."""

from __future__ import annotations

import pytest

from positions import round_played_out
from sevenrocks_env.render import geometry
from sevenrocks_env.render.geometry import (
    GAP, MARKER_RADIUS, MAX_UNIT, MIN_UNIT, _collides, _extent, _options, _unit_boxes,
    board_geometry, frame_layout)
from sevenrocks_env.render.layout import build_layout, layout_from_tiles
from sevenrocks_env.tiles import EAST, NORTH, SOUTH, WEST

WIDE, TALL, SQUARE = (0, 0, 1000, 560), (0, 0, 560, 1000), (0, 0, 560, 560)
CHAIN = ["1|2", "2|3", "3|4", "4|5", "5|6", "6|0", "0|2", "2|4", "4|6", "6|1", "1|3", "3|5"]
WEST_CHAIN = ["0|4", "4|1", "1|5", "5|2", "2|6", "6|3", "3|0", "0|5", "5|3", "3|1"]
BOTH_WAYS = [("0|1", WEST)] + [step for pair in zip(
    [(t, EAST) for t in CHAIN[:8]], [(t, WEST) for t in WEST_CHAIN[:8]]) for step in pair]


def _box_gap(a, b) -> float:
    dx = max(a[0] - b[2], b[0] - a[2], 0.0)
    dy = max(a[1] - b[3], b[1] - a[3], 0.0)
    return (dx * dx + dy * dy) ** 0.5


# ---- render/geometry.py -------------------------------------------------------------------

@pytest.mark.parametrize("slot", [WEST, EAST])
@pytest.mark.parametrize("direction", [1, -1])
def test_a_turned_line_arm_keeps_one_gap_between_neighbours(slot, direction):
    """Every tile of a turned line arm is exactly GAP from the one before it, at the turn too
    (the turned column starts one gap past the last straight tile, on either side)."""
    layout = layout_from_tiles(BOTH_WAYS)
    tiles, _ = _unit_boxes(layout, {slot: (3, direction)})
    by_tile = {placed.move: box for placed, box, *_ in tiles}
    line = layout.line
    arm = line[layout.opening_index::-1] if slot == WEST else line[layout.opening_index:]
    assert len(arm) == 9
    for inner, outer in zip(arm, arm[1:]):
        assert _box_gap(by_tile[inner.move], by_tile[outer.move]) == pytest.approx(GAP)


@pytest.mark.parametrize("seed, box, unit, origin, bends", [
    (11, SQUARE, 30.078563411896752, (256.2379349046016, 373.54433221099885),
     ((EAST, 3, -1), (NORTH, 5, 1), (SOUTH, 2, 1))),
    (24, TALL, 30.078563411896745, (169.010101010101, 724.0852974186308), ((EAST, 5, 1),)),
    (3, SQUARE, 29.385964912280706, (233.2763157894737, 165.39473684210526),
     ((EAST, 4, 1), (SOUTH, 5, -1))),
    (1, WIDE, 28.60492379835873, (644.7409144196953, 76.90504103165304), ((EAST, 4, 1),)),
    (4, TALL, 32.883435582822095, (291.50920245398777, 508.22085889570553),
     ((WEST, 4, 1), (EAST, 2, 1))),
    (5, WIDE, 30.480949406620866, (542.3685196752031, 400.3997501561524), ((WEST, 8, -1),)),
])
def test_turned_framings_are_the_straightest_that_fit(seed, box, unit, origin, bends):
    """Pinned framings of played rounds: a line turn weighs three branch turns, turns count
    before how late they come, north/west turns are tried too, a line arm turns only past its
    spinner, and round 3's square box (whose straightest framing collides) takes the next one
    that does not (not the straight fallback)."""
    framing = frame_layout(build_layout(round_played_out(seed).history[-1].moves), box)
    assert framing.bends == bends
    assert framing.unit == pytest.approx(unit)
    assert framing.origin == pytest.approx(origin)


def test_a_line_arm_turns_only_past_its_spinner():
    """The spinner west of the opening tile: the west arm's turns come 2 or more tiles past
    it, the east arm (no spinner ahead) may turn after 2."""
    layout = layout_from_tiles([("0|1", WEST), ("0|2", WEST), ("2|2", WEST), ("2|3", WEST),
                                ("3|4", WEST), ("4|5", WEST), ("5|6", WEST), ("6|0", WEST),
                                ("1|3", EAST), ("3|5", EAST), ("5|4", EAST), ("4|6", EAST)])
    ahead = layout.opening_index - layout.spinner_index
    assert ahead == 2
    west = [option for option in _options(layout, WEST) if option]
    assert west and min(n for n, _ in west) == ahead + 2
    assert {d for _, d in west} == {1, -1}
    assert min(n for n, _ in filter(None, _options(layout, EAST))) == 2


def test_an_empty_board_is_framed_at_the_largest_unit_in_the_box_centre():
    assert frame_layout(build_layout([]), (10, 20, 110, 220)) == \
        geometry.Framing(float(MAX_UNIT), (60.0, 120.0))


def test_a_huge_layout_in_a_tiny_box_keeps_the_smallest_unit():
    framing = frame_layout(layout_from_tiles(BOTH_WAYS), (0, 0, 90, 90))
    assert framing.unit == MIN_UNIT


def test_the_opening_double_fits_a_flat_box():
    """The opening tile is part of the extent: a double standing 2 units tall fits the box."""
    layout = layout_from_tiles([("3|3", WEST), ("3|4", EAST)])
    box = (0, 0, 200, 60)
    drawn = board_geometry(layout, box)
    assert drawn.unit == pytest.approx(18.0)  # (60 - 2 * 12) / 2
    for tile in drawn.tiles:
        x0, y0, x1, y1 = tile.box
        assert 0 <= x0 and x1 <= 200 and 0 <= y0 and y1 <= 60


def test_when_every_framing_collides_the_straight_layout_is_kept(monkeypatch):
    layout = build_layout(round_played_out(3).history[-1].moves)
    tiles, markers = _unit_boxes(layout)
    left, top, right, bottom = _extent(tiles, markers)
    room_w, room_h = SQUARE[2] - 24, SQUARE[3] - 24
    monkeypatch.setattr(geometry, "_collides", lambda tiles, markers: True)
    framing = frame_layout(layout, SQUARE)
    assert framing.bends == ()
    assert framing.unit == pytest.approx(max(MIN_UNIT, min(MAX_UNIT, room_w / (right - left),
                                                           room_h / (bottom - top))))


def _tile(box):
    return (None, box, False, 1, 2, False)


def _marker(center):
    return (EAST, center, True, 5, 5)


@pytest.mark.parametrize("a, b, overlap", [
    ((0, 0, 2, 1), (1, 0.5, 3, 1.5), True),       # half a unit of height shared
    ((0, 0, 2, 1), (0.5, -3, 1.5, -0.2), False),  # above it
    ((5, 0, 7, 1), (0, 0, 2, 1), False),          # given east first: side by side
    ((5, 0, 7, 1), (0, 0, 5.5, 1), True),         # given east first: overlapping
])
def test_collides_sees_two_overlapping_tiles_and_only_those(a, b, overlap):
    assert _collides([_tile(a), _tile(b)], []) is overlap


def test_collides_sees_a_marker_touching_a_tile_s_edge_and_two_close_markers():
    tile = _tile((0, 0, 2, 1))
    assert _collides([tile], [_marker((2 + MARKER_RADIUS * 0.7, 0.5))])
    assert not _collides([tile], [_marker((2 + MARKER_RADIUS * 1.1, 0.5))])
    near, far = 1.4 * MARKER_RADIUS, 2.1 * MARKER_RADIUS
    assert _collides([], [_marker((10, 10)), _marker((10 + near, 10))])
    assert not _collides([], [_marker((10, 10)), _marker((10 + far, 10))])


# ---- web: the Sevenrocks-Board header --------------------------------------------------------

BOTS = {"partner": "greedy", "left": "greedy", "right": "greedy"}
TALL_HEADER = {"sevenrocks-board": "tall"}


def test_a_new_game_and_a_rematch_answer_in_the_tall_box(app, client):
    from sevenrocks_env.rules import Match, apply_action, legal_actions

    view = client.post("/api/games", json={**BOTS, "seat": 1, "seed": 4},
                       headers=TALL_HEADER).json()
    assert (view["board"]["width"], view["board"]["height"]) == (560, 1000)
    game = app.state.store.get(view["id"])
    over = Match.new(5, target=10)
    while not over.over:
        apply_action(over, legal_actions(over)[0])
    game.match = over
    again = client.post(f"/api/games/{view['id']}/rematch", headers=TALL_HEADER)
    assert again.status_code == 201
    assert (again.json()["board"]["width"], again.json()["board"]["height"]) == (560, 1000)
    wide = client.post(f"/api/games/{view['id']}/rematch").json()
    assert (wide["board"]["width"], wide["board"]["height"]) == (1000, 560)


def test_a_game_s_own_view_is_the_wide_one(app, client):
    from sevenrocks_env.web.views import BOARD_BOXES

    view = client.post("/api/games", json={**BOTS, "seat": 1, "seed": 4},
                       headers=TALL_HEADER).json()
    game = app.state.store.get(view["id"])
    assert game.view is game.view_for(BOARD_BOXES["wide"])
    assert (game.view["board"]["width"], game.view["board"]["height"]) == (1000, 560)
    assert game.view_for(BOARD_BOXES["tall"]) == view


def test_a_board_header_given_twice_is_quoted_whole(client):
    view = client.post("/api/games", json={**BOTS, "seat": 1, "seed": 4}).json()
    refused = client.get(f"/api/games/{view['id']}",
                         headers=[("sevenrocks-board", "tall"), ("sevenrocks-board", "wide")])
    assert refused.status_code == 400
    assert refused.json()["error"].endswith("got ['tall', 'wide']")


# ---- checks.kinds_of / shown, record messages ---------------------------------------------

def test_kinds_of_is_silent_for_plain_lists_and_names_an_empty_tuple():
    from sevenrocks_env.checks import kinds_of

    assert kinds_of([]) == ""
    assert kinds_of([[1, 2], [3]]) == ""  # a list of lists: hands, JSON's own kind
    assert kinds_of(()) == " (a tuple of nothing)"


def test_a_non_int_enum_in_a_list_is_shown_by_its_class():
    import enum

    from sevenrocks_env.checks import shown

    class Colour(enum.Enum):
        RED = "red"

    assert shown([Colour.RED, 3]) == "[<Colour>, 3]"


def test_a_numpy_max_rounds_is_named_by_its_kind():
    import numpy as np

    from sevenrocks_env.record import RecordError, game_record, validate
    from sevenrocks_env.rules import Match, apply_action, legal_actions

    match = Match.new(5, target=10, max_rounds=3)
    while not match.over:
        apply_action(match, legal_actions(match)[0])
    record = game_record(match)
    assert record["max_rounds"] == 3
    record["max_rounds"] = np.int64(3)
    with pytest.raises(RecordError, match=r"max_rounds .* got 3 \(a NumPy int64\)$"):
        validate(record)


# ---- arena_log headers, driver answers, inference at low scores ----------------------------

@pytest.mark.parametrize("header", ["[1, 2]", '{"format": ["sevenrocks-arena-pairs/1"]}'])
def test_a_header_of_another_shape_is_no_arena_pair_log(tmp_path, header):
    from sevenrocks_env import arena
    from sevenrocks_env.arena_log import PairLogError

    log = tmp_path / "l.jsonl"
    log.write_text(header + "\n")
    with pytest.raises(PairLogError, match="not an arena pair log"):
        arena.evaluate("random", "greedy", 1, seed=4, log=log)
    assert log.read_text() == header + "\n"


def test_a_numpy_answer_comes_back_as_a_python_int():
    import numpy as np

    from sevenrocks_env import rules
    from sevenrocks_env.driver import agent_action

    class NumpyFirst:
        def act(self, observation, action_mask):
            return np.int64(np.flatnonzero(action_mask)[0])

        def seed(self, seed):
            pass

    match = rules.Match.new(3)
    answer = agent_action(NumpyFirst(), match, match.turn)
    assert type(answer) is int and answer == rules.legal_actions(match)[0]


def test_inference_rebuilds_a_round_below_minus_120():
    import numpy as np

    from sevenrocks_env import rules
    from sevenrocks_env.agents.inference import replayed_round
    from sevenrocks_env.dealing import deal
    from sevenrocks_env.observation import encode
    from sevenrocks_env.public_round import public_round

    hands, opener = deal(3, 5)
    match = rules.Match.from_deal(hands, opener, scores=(-130, -65), seed=3,
                                  round_index=5)
    rng = np.random.default_rng(0)
    for _ in range(5):
        rules.apply_action(match, int(rng.choice(rules.legal_actions(match))))
    env, _ = replayed_round(public_round(match), encode(match, match.turn), "cpu")
    assert env.state.round_index.tolist() == [1]
    assert env.state.scores.tolist() == [[-130, -65]]
