"""The text board and the one-line move descriptions (issue 2, Rendering)."""

import random
import re

import pytest

from sevenrocks_env.render.text import describe_move, just_ended_round, render_text
from sevenrocks_env.rules import Match, apply_action, deal, legal_actions
from sevenrocks_env.tiles import KNOCK, tile_name, tiles_of

from positions import won_at_exactly_the_target
from rules_examples import EXAMPLES, example_match


def test_text_board_shows_scores_end_sum_spinner_and_branches():
    match = example_match(EXAMPLES["A"])
    text = render_text(match, observer=1)
    assert f"team 0 (seats 0 & 2): {match.scores[0]:>4} / 250" in text
    assert f"team 1 (seats 1 & 3): {match.scores[1]:>4} / 250" in text
    assert "W (2) 2|1 <1:1> 1|4 [4:4] 4|3 (3) E" in text  # spinner <1:1>, crosswise [4:4]
    assert "branch A (north) from <1:1>: 1|5 [5:5] 5|0 (0)" in text
    assert "branch B (south) from <1:1>: 1|3 (3)" in text
    assert "end sum 8" in text
    assert "to move: seat 1" in text


def test_unopened_branches_are_marked_as_not_counted():
    text = render_text(example_match(EXAMPLES["A"], steps=5))
    assert "(1?) not started" in text
    assert "counted ends: west 2 + east 3 = end sum 5 -> 5 points" in text


def test_a_lone_opening_spinner_counts_once_at_its_west_side():
    """Example B, step 1: the east side of a lone opening spinner adds nothing (R5), as the
    picture's ring and the web board's hollow marker show it."""
    text = render_text(example_match(EXAMPLES["B"], steps=1))
    assert "W (2) <2:2> (2?) E" in text and "west 4 = end sum 4" in text, text


def test_observer_sees_only_own_hand_spectator_sees_all():
    match = example_match(EXAMPLES["A"], steps=3)
    hands = [" ".join(tile_name(t) for t in tiles_of(match.hands[s])) for s in range(4)]
    text = render_text(match, observer=2)
    assert f"seat 2 hand: {hands[2]}" in text
    assert all(f"seat {s} hand" not in text for s in (0, 1, 3))
    spectator = render_text(match)
    assert all(f"seat {s} hand: {hands[s]}" in spectator for s in range(4))


@pytest.mark.parametrize("observer", [4, -1, "1", 1.0, True])
def test_an_observer_that_is_not_a_seat_is_refused(observer):
    """render_text(match, observer=4) (or "1") showed a board with no hand at all, where the
    picture refused seat 4: the caller's mistake went unnoticed."""
    with pytest.raises(ValueError, match=r"observer must be a seat 0\.\.3 or None, got"):
        render_text(Match.new(0), observer=observer)


def test_a_numpy_seat_is_an_observer():
    import numpy as np
    match = example_match(EXAMPLES["A"], steps=3)
    assert render_text(match, observer=np.int64(2)) == render_text(match, observer=2)


@pytest.mark.parametrize("step, expected", [
    (0, "seat 0: 1|4 opens the round: continuation points west 1, east 4; counted 1 + 4 = 5 -> 5 points"),
    (1, "1|1 on the west end, joining the 1 of 1|4: first double: the spinner, attached by line A"),
    (2, "4|4 on the east end, joining the 4 of 1|4: ordinary double, crosswise"),
    (4, "seat 0: 1|2 on the spinner's line B (west): spinner now internal; continuation points "
        "west 2, east 3, north 1, south 1; counted 2 + 3 = 5 -> 5 points"),
    (5, "1|5 on branch A (north), opening it from the spinner"),
    (6, "counted 2 + 3 + 10 = 15 -> 15 points"),
    (8, "continuation points west 2, east 3, north 0, south 3; counted 2 + 3 + 0 + 3 = 8 -> 0 points"),
])
def test_describe_move_example_a(step, expected):
    match = example_match(EXAMPLES["A"])
    assert expected in describe_move(match.history[-1], step)


def test_describe_opening_spinner_and_knock():
    match = example_match(EXAMPLES["C"])
    log = match.history[-1]
    assert "the spinner: line A (west) and line B (east) open" in describe_move(log, 0)
    assert "counted 10 = 10 -> 10 points" in describe_move(log, 0)
    assert describe_move(log, 1).startswith("seat 1: 0|5 on the spinner's line A (west)")
    assert "spinner now internal" in describe_move(log, 2)
    moves = log.moves + [(0, KNOCK, 5, 0)]
    assert describe_move(moves, len(moves) - 1) == "seat 0 knocks"
    with pytest.raises(IndexError):
        describe_move(log, 99)


def test_describe_move_reads_record_rounds():
    from sevenrocks_env.record import game_record
    match = example_match(EXAMPLES["D"])
    record_round = game_record(match)["rounds"][0]
    assert describe_move(record_round, 1) == describe_move(match.history[-1], 1)
    assert "first double: the spinner" in describe_move(record_round, 1)


def test_round_end_is_shown():
    match = Match.new(11, target=250)
    match.seed = None  # stop at the round end so the finished round is the last one
    while not match.awaiting_deal:
        apply_action(match, legal_actions(match)[0])
    text = render_text(match)
    log = match.history[-1]
    assert "round over" in text and "Deductions: seat 0 -" in text
    # the seat that went out loses nothing: "0", not "-0"
    assert 0 in log.deductions and not re.search(r"-0\b", text), text
    assert f"Scores: team 0 {log.scores[0]}, team 1 {log.scores[1]}" in text


def test_the_board_in_docs_render_md_is_what_render_text_prints():
    from pathlib import Path
    import re

    doc = (Path(__file__).resolve().parents[1] / "docs" / "render.md").read_text()
    block = re.search(r"```\n(Seven Rocks - round.*?)\n```", doc, re.S).group(1)
    assert render_text(example_match(EXAMPLES["A"]), observer=1) == block


def test_only_the_winning_team_is_marked_winner():
    marked = [line for line in render_text(won_at_exactly_the_target()).splitlines()
              if "WINNER" in line]
    assert len(marked) == 1 and marked[0].lstrip().startswith("team 1")


def test_a_won_round_shows_no_deductions_and_keeps_its_number():
    """R8: the round that wins the match is not counted; it is still the round it was (a won
    round does not move ``round_index`` on: R7's count moves it)."""
    match = won_at_exactly_the_target()
    text = render_text(match)
    assert "match won: the round is not counted" in text and "Deductions" not in text
    assert text.startswith(f"Seven Rocks - round {len(match.history)} - ")
    assert "match over: team 1 wins" in text


def test_describe_move_takes_negative_indices():
    log = example_match(EXAMPLES["A"]).history[-1]
    assert describe_move(log, -1) == describe_move(log, len(log.moves) - 1)


def test_the_spinner_becoming_internal_is_said_once():
    """Example A: the spinner becomes internal at step 5 (index 4), and is not said again."""
    log = example_match(EXAMPLES["A"]).history[-1]
    said = [i for i in range(len(log.moves)) if "spinner now internal" in describe_move(log, i)]
    assert said == [4]


def test_the_round_number_is_the_round_shown_at_a_round_limit():
    """A match cut off by max_rounds (or a seedless one waiting for its next deal) showed the
    next round's number: "round 2" with one round played, "round 101" by default."""
    match = Match.new(3, max_rounds=1)
    rng = random.Random(0)
    while not match.over:
        apply_action(match, rng.choice(legal_actions(match)))
    assert match.truncated and render_text(match).startswith("Seven Rocks - round 1 - ")


def test_a_match_without_history_says_its_layout_is_not_known():
    """It drew "the table is empty" with tiles down (Match.clone(), from_state, which the
    single-agent env's options["match"] accepts)."""
    from sevenrocks_env.render.picture import render_picture
    full = example_match(EXAMPLES["A"], steps=5)
    match = full.clone()  # history dropped
    text = render_text(match)
    assert "layout not known" in text and "table is empty" not in text
    assert f"end sum {full.history[-1].moves[-1][2]}" in text
    assert "layout not known" not in render_text(Match.new(0).clone())  # nothing down yet
    assert render_picture(match).shape == render_picture(full).shape


def test_just_ended_round_is_the_round_at_its_end_until_the_next_move():
    match = Match.new(3)
    rng = random.Random(1)
    assert just_ended_round(match) is None
    while len(match.history) == 1:
        apply_action(match, rng.choice(legal_actions(match)))
    ended = match.history[0]
    view = just_ended_round(match)
    assert view.history[-1].moves == ended.moves and view.scores == ended.scores
    assert view.hands == ended.remaining_hands() and view.turn == -1
    text = render_text(view)
    assert text.startswith("Seven Rocks - round 1 - ") and "round over" in text
    # a match that began at other scores (from_deal(scores=...)): the round's own start
    begun = Match.from_deal(*deal(5, 0), scores=(100, 50), seed=5)
    while len(begun.history) == 1:
        apply_action(begun, rng.choice(legal_actions(begun)))
    assert just_ended_round(begun).scores == begun.history[0].scores
    apply_action(match, rng.choice(legal_actions(match)))
    assert just_ended_round(match) is None
