"""The layout rebuilt from a round's moves matches the engine at every step (R3, R4, R5)."""

import random

import pytest
from hypothesis import given, settings, strategies as st

from sevenrocks_env.render.layout import build_layout, layout_from_tiles
from sevenrocks_env.rules import Match, apply_action, legal_actions
from sevenrocks_env.tiles import EAST, NORTH, SOUTH, WEST, encode_action, parse_tile

from rules_examples import EXAMPLES  # noqa: E402  (shared test data)


def engine_points(match):
    return {slot: n for slot, n in enumerate(match.ends) if n >= 0}


def test_example_a_layout():
    layout = layout_from_tiles([(t, s) for t, s, *_ in EXAMPLES["A"]])
    assert [p.name for p in layout.line] == ["1|2", "1|1", "1|4", "4|4", "3|4"]
    assert [p.halves for p in layout.line] == [(2, 1), (1, 1), (1, 4), (4, 4), (4, 3)]
    assert layout.spinner_index == 1 and layout.spinner == 1 and layout.spinner_internal
    assert layout.spinner_line_b == WEST  # played on the west end: line A joins 1|4
    assert [p.halves for p in layout.north] == [(1, 5), (5, 5), (5, 0)]
    assert [p.halves for p in layout.south] == [(1, 3)]
    assert [p.crosswise for p in layout.line] == [False, True, False, True, False]
    assert layout.counted_ends() == {WEST: 2, EAST: 3, NORTH: 0, SOUTH: 3}


def test_example_a_after_step_5_continuation_points():
    """docs/rules.md example A: after step 5 the points are both branches (1) and the 2 and 3 ends; two counted."""
    layout = layout_from_tiles([(t, s) for t, s, *_ in EXAMPLES["A"][:5]])
    assert layout.continuation_points() == {WEST: 2, EAST: 3, NORTH: 1, SOUTH: 1}
    assert layout.counted_ends() == {WEST: 2, EAST: 3}


def test_opening_spinner_counts_once():
    layout = layout_from_tiles([("2|2", WEST)])
    assert layout.spinner_index == 0 and layout.spinner_line_b == EAST
    assert layout.end_sum() == 4 and layout.continuation_points() == {WEST: 2, EAST: 2}


def test_every_example_step_matches_rules_md():
    for name, sequence in EXAMPLES.items():
        for step in range(1, len(sequence) + 1):
            layout = layout_from_tiles([(t, s) for t, s, *_ in sequence[:step]])
            assert layout.end_sum() == sequence[step - 1][2], (name, step)


def test_bad_moves_are_refused_with_the_move_named():
    with pytest.raises(ValueError, match="move 1"):
        layout_from_tiles([("1|4", WEST), ("2|3", EAST)])
    with pytest.raises(ValueError, match="move 1"):
        layout_from_tiles([("1|4", WEST), ("4|5", NORTH)])


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_layout_agrees_with_engine_through_random_rounds(seed):
    """Ends, doubles at ends, branches, spinner and end sum equal the engine's after every move."""
    match = Match.new(seed)
    rng = random.Random(seed)
    while len(match.history) < 3 and not match.over:
        log = match.history[-1]
        apply_action(match, rng.choice(legal_actions(match)))
        if log is not match.history[-1] or log.result is not None:
            continue  # the round ended; the engine already shows the next deal
        layout = build_layout(log.moves)
        assert layout.continuation_points() == engine_points(match)
        assert layout.end_sum() == match.end_sum() == log.moves[-1][2]
        assert layout.spinner == match.spinner
        for slot in (NORTH, SOUTH):
            assert bool(layout.branch(slot)) == match.branch_started[slot]
        for slot in engine_points(match):
            if slot < NORTH or match.branch_started[slot]:
                assert layout.outer_tile(slot).crosswise == match.end_double[slot]
        assert len(layout.tiles()) == match.placements


def test_the_last_tile_laid_stays_outlined_after_knocks():
    """docs/web.md and docs/render.md: the last tile laid is outlined -- also when knocks
    followed it (the outline used to vanish on a knock)."""
    from sevenrocks_env.render.layout import last_placement
    from sevenrocks_env.tiles import KNOCK, WEST, encode_action, parse_tile
    from sevenrocks_env.web.views import board_view

    opening = (2, encode_action(parse_tile("5|5"), WEST), 10, 10)
    moves = [opening, (3, KNOCK, 10, 0), (0, KNOCK, 10, 0)]
    assert last_placement([]) is None and last_placement(moves[:1]) == (0, 2)
    assert last_placement(moves) == (0, 2)
    tiles = board_view(moves)["tiles"]
    assert [tile["last"] for tile in tiles] == [True]


def test_the_opening_tile_must_use_the_west_slot():
    """docs/rules.md: the opening tile uses slot 0 (west)."""
    with pytest.raises(ValueError, match="slot 0"):
        build_layout([(0, encode_action(parse_tile("1|4"), EAST))])


def test_example_d_spinner_on_the_east_end():
    """Example D: 6|6 laid on the east end is the spinner; line A touches 3|6, line B faces east."""
    layout = layout_from_tiles([("3|6", WEST), ("6|6", EAST)])
    assert layout.line[layout.spinner_index].name == "6|6"
    assert layout.spinner_line_b == EAST
    layout = layout_from_tiles([("3|6", WEST), ("6|6", EAST), ("2|6", EAST)])
    assert layout.line[layout.spinner_index].name == "6|6" and layout.spinner_internal
