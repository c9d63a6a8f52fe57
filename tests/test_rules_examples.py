"""Every worked example of docs/rules.md, step by step, against the engine (R3-R8).

The examples are read from ``sevenrocks_env/data/worked_examples.json`` (see rules_examples.py);
test_docs_rules.py checks that docs/rules.md's tables show the same data.
"""

import pytest

from sevenrocks_env.rules import (
    apply_action, deduction, end_sum, legal_actions, placement_points, round_to_five,
)
from sevenrocks_env.tiles import (
    NORTH, SLOT_NAMES, TILE_LOW, encode_action, mask_of, parse_tile, pips_of,
)

# the package's example data
from rules_examples import EXAMPLES, WORKED, example_e_position, example_match, slot_index

NAMES = sorted(WORKED["examples"])


def counted_by_slot(match) -> dict:
    """What each counted end adds to the end sum, slot by slot (R5), from ``scoring.end_sum``
    applied to that end alone.

    An unopened branch is open but not counted; an opening double alone is one tile, counted
    once, and (like the renderer) reported at the west end.
    """
    out = {}
    for slot, number in enumerate(match.ends):
        if number < 0 or (slot >= NORTH and not match.branch_started[slot]):
            continue
        only = [s == slot for s in range(4)]
        out[SLOT_NAMES[slot]] = end_sum([n if keep else -1 for n, keep in zip(match.ends, only)],
                                        [d and keep for d, keep in zip(match.end_double, only)],
                                        [b and keep for b, keep in zip(match.branch_started, only)])
    if match.placements == 1 and match.spinner >= 0:
        del out["east"]
    return out


def continuation_points(match) -> set:
    """(slot name, open number) of every legal continuation point (R3, R4)."""
    return {(SLOT_NAMES[slot], n) for slot, n in enumerate(match.ends) if n >= 0}


def play(match, tile, slot):
    action = encode_action(parse_tile(tile), slot_index(slot))
    assert action in legal_actions(match), (tile, slot, legal_actions(match))
    return apply_action(match, action)


@pytest.mark.parametrize("name", NAMES)
def test_example_step_by_step(name):
    example = WORKED["examples"][name]
    match = example_match(EXAMPLES[name], steps=0)
    for step, data in enumerate(example["steps"], start=1):
        assert match.turn == (step - 1) % 4
        assert play(match, data["tile"], data["slot"]) == data["points"], f"step {step}: points"
        assert match.end_sum() == data["end_sum"] == sum(data["counted"].values()), f"step {step}"
        assert counted_by_slot(match) == data["counted"], f"step {step}: counted ends"
        assert placement_points(data["end_sum"]) == data["points"], f"step {step}"
        if str(step) in example.get("spinner_after_step", {}):
            assert match.spinner == example["spinner_after_step"][str(step)], f"step {step}: spinner"
        points = example.get("continuation_points", {}).get(str(step))
        if points is not None:
            assert continuation_points(match) == {(p["slot"], p["number"]) for p in points}, f"step {step}"
            for p in points:
                assert p["counted"] == (p["slot"] in data["counted"]), f"step {step}: {p}"
    # seats 0 and 2 (team 0) placed the odd steps, seats 1 and 3 (team 1) the even ones
    assert match.scores == example["team_scores"]


def test_every_example_is_checked_step_by_step():
    """A-D are in the data with steps, and the spinner and continuation points are checked somewhere."""
    assert NAMES == ["A", "B", "C", "D"]
    assert all(WORKED["examples"][n]["steps"] for n in NAMES)
    assert set(WORKED["examples"]["A"]["continuation_points"]) == {"5", "9"}
    assert all(WORKED["examples"][n]["spinner_after_step"] for n in NAMES)


def test_example_b_opening_doubles_open_both_sides():
    """Step 1 (``2|2``) and its alternative (``0|0``): the spinner, line A and line B open."""
    example = WORKED["examples"]["B"]
    for data in example["steps"][:1] + example["alternatives"]:
        match = example_match([(data["tile"], slot_index(data["slot"]))], steps=0)
        assert play(match, data["tile"], data["slot"]) == data["points"]
        assert match.end_sum() == data["end_sum"]
        assert counted_by_slot(match) == data["counted"]
        number = TILE_LOW[parse_tile(data["tile"])]
        assert match.spinner == number  # an opening double is the spinner, both sides open (R4)
        assert continuation_points(match) == {("west", number), ("east", number)}


def test_example_c_branches_open_only_after_both_straight_sides():
    steps = WORKED["examples"]["C"]["steps"]
    match = example_match(EXAMPLES["C"], steps=0)
    for step, data in enumerate(steps[:3], start=1):
        play(match, data["tile"], data["slot"])
        branches_open = match.ends[NORTH] >= 0
        assert branches_open == (step == 3), f"step {step}"  # line A then line B, then the branches


def test_example_e_partners_rounded_separately():
    """Example E: each hand's deduction, and the team's loss when a round really ends (R7)."""
    data = WORKED["deductions"]
    for hand in data["hands"] + data["single_hands"]:
        mask = mask_of(parse_tile(t) for t in hand["tiles"])
        assert pips_of(mask) == hand["pips"]
        assert deduction(mask) == round_to_five(hand["pips"]) == hand["deduction"]
    assert sum(h["deduction"] for h in data["hands"]) == data["team_loss"]
    assert {h["seat"] % 2 for h in data["hands"]} == {data["team"]}
    wrong = data["not_this"]  # rounding the partners' sum instead: what the rules do NOT do
    assert round_to_five(wrong["pips"]) == wrong["deduction"] != data["team_loss"]
    for pips, rounded in data["rounding"]:
        assert round_to_five(pips) == rounded


def test_example_e_in_a_round_that_ends():
    """Seat 0 dominoes while seats 1 and 3 hold example E's hands: team 1 loses ``team_loss``."""
    match, last, scores = example_e_position()
    apply_action(match, last)
    assert match.scores == scores and match.awaiting_deal


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


def test_tile_order_pips_and_deductions_from_the_rules_alone():
    """The pip table was never checked against the rules: every deduction test took its pips
    from ``TILE_PIPS`` itself (5|6 counted as 10 passed the whole suite).  Here the tiles are
    enumerated as the rules order them (0|0 = 0 ... 6|6 = 27, low half first) and each tile's
    pips written as its two halves; both engines' hand pips and R7's rounding follow."""
    import random

    import torch

    from sevenrocks_env.batched.layout import pips as batched_pips
    from sevenrocks_env.scoring import deduction
    from sevenrocks_env.tiles import TILES, pips_of

    spelled = [(low, high) for low in range(7) for high in range(low, 7)]
    assert [tuple(tile) for tile in TILES] == spelled
    rng = random.Random(5)
    hands = [sum(1 << t for t in rng.sample(range(28), rng.randint(0, 7))) for _ in range(300)]
    hands += [1 << 27 | 1 << 26, (1 << 28) - 1]      # 6|6 + 5|6 = 23; all 28 tiles = 168
    by_hand = [sum(low + high for t, (low, high) in enumerate(spelled) if hand >> t & 1)
               for hand in hands]
    assert by_hand[-2:] == [23, 168]
    assert [pips_of(hand) for hand in hands] == by_hand
    assert batched_pips(torch.tensor(hands)).tolist() == by_hand
    # R7: a hand's pips rounded to the nearest five, 2.5 up (23 -> 25, 22 -> 20, 168 -> 170)
    assert [deduction(hand) for hand in hands] == [(p + 2) // 5 * 5 for p in by_hand]
    assert deduction(hands[-2]) == 25 and deduction(hands[-1]) == 170
