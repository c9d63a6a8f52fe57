"""Every worked example of RULES.md, step by step (R3-R8)."""

import pytest

from sevenrocks_env.rules import (
    apply_action, deduction, end_sum, legal_actions, placement_points, round_to_five,
)
from sevenrocks_env.tiles import EAST, NORTH, SOUTH, WEST, encode_action, mask_of, parse_tile

from rules_examples import EXAMPLES, example_match  # shared RULES.md example data


def layout_match(sequence):
    """A match dealt so that seat ``i % 4`` holds step ``i``'s tile, nothing played yet."""
    return example_match(sequence, steps=0)


def continuation_points(match):
    """(slot, open number) of every legal continuation point."""
    return {(slot, n) for slot, n in enumerate(match.ends) if n >= 0}


def counted(match):
    return match.end_sum()


def play(match, tile, slot):
    action = encode_action(parse_tile(tile), slot)
    assert action in legal_actions(match), (tile, slot, legal_actions(match))
    return apply_action(match, action)


EXAMPLE_A = EXAMPLES["A"]


def test_example_a_doubles_at_an_end_and_inside():
    match = layout_match([(t, s) for t, s, _, _ in EXAMPLE_A])
    for step, (tile, slot, total, points) in enumerate(EXAMPLE_A, start=1):
        match.turn = (step - 1) % 4
        assert play(match, tile, slot) == points, f"step {step}"
        assert match.end_sum() == total, f"step {step}"
        if step == 2:
            assert match.spinner == 1
        if step == 5:
            # spinner branch A (1), branch B (1), the 2 of 1|2, the 3 of 3|4; only the last two count
            assert continuation_points(match) == {(WEST, 2), (EAST, 3), (NORTH, 1), (SOUTH, 1)}
            assert match.branch_started[NORTH] is False and match.branch_started[SOUTH] is False
    assert continuation_points(match) == {(NORTH, 0), (WEST, 2), (SOUTH, 3), (EAST, 3)}
    assert all(match.branch_started[s] for s in (NORTH, SOUTH))


def test_example_a_score_accumulates_per_team():
    match = layout_match([(t, s) for t, s, _, _ in EXAMPLE_A])
    for step, (tile, slot, _, _) in enumerate(EXAMPLE_A, start=1):
        match.turn = (step - 1) % 4
        play(match, tile, slot)
    # team 0 placed steps 1,3,5,7,9; team 1 steps 2,4,6,8
    assert match.scores == [5 + 10 + 5 + 15 + 0, 0 + 5 + 10 + 5]


def test_example_b_opening_double():
    for tile, total in (("2|2", 4), ("0|0", 0)):
        match = layout_match([(tile, WEST)])
        assert play(match, tile, WEST) == 0
        assert match.end_sum() == total
        assert match.spinner == int(tile[0])
        assert continuation_points(match) == {(WEST, int(tile[0])), (EAST, int(tile[0]))}


EXAMPLE_C, EXAMPLE_D = EXAMPLES["C"], EXAMPLES["D"]


@pytest.mark.parametrize("example", [EXAMPLE_C, EXAMPLE_D], ids=["C", "D"])
def test_examples_c_d(example):
    match = layout_match([(t, s) for t, s, _, _ in example])
    for step, (tile, slot, total, points) in enumerate(example, start=1):
        match.turn = (step - 1) % 4
        assert play(match, tile, slot) == points, f"step {step}"
        assert match.end_sum() == total, f"step {step}"


def test_example_c_branches_open_only_after_both_straight_sides():
    match = layout_match([("5|5", WEST), ("0|5", WEST), ("2|5", EAST)])
    play(match, "5|5", WEST)
    assert match.ends[NORTH] == match.ends[SOUTH] == -1
    match.turn = 1
    play(match, "0|5", WEST)
    assert match.ends[NORTH] == -1  # line B still open
    match.turn = 2
    play(match, "2|5", EAST)
    assert match.ends[NORTH] == match.ends[SOUTH] == 5


def test_example_e_partners_rounded_separately():
    assert round_to_five(3) + round_to_five(3) == 10
    assert round_to_five(6) == 5
    assert deduction(mask_of([parse_tile("0|2")])) == 0
    assert deduction(mask_of([parse_tile("0|3")])) == 5
    assert deduction(mask_of([parse_tile("0|6"), parse_tile("4|4")])) == 15  # 14 pips


@pytest.mark.parametrize("pips,rounded", [(0, 0), (1, 0), (2, 0), (3, 5), (4, 5), (5, 5),
                                          (12, 10), (13, 15), (14, 15), (15, 15)])
def test_rounding_r7(pips, rounded):
    assert round_to_five(pips) == rounded


def test_points_r5():
    assert placement_points(0) == 0
    assert placement_points(5) == 5
    assert placement_points(35) == 35
    assert placement_points(36) == 0
    assert placement_points(8) == 0


def test_largest_end_sum_is_36():
    # spinner internal; west ends in 6|6, east in 5|5, north in 4|4, south shows a 6
    assert end_sum([6, 5, 4, 6], [True, True, True, False], [False, False, True, True]) == 36
