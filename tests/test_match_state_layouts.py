"""Match.from_state refusing layouts no play reaches, field by field against the rules (R3-R7):
ends, doubles, branches and the spinner, voids, end sums, and a round that should have ended.
The round trip, types, bounds and the other fields: test_match_state.py."""

import pytest

from sevenrocks_env.record import MAX_TARGET
from sevenrocks_env.rules import Match, apply_action, legal_actions

from test_match_state import _a_state_where, good_state, play


def test_an_open_branch_with_no_tile_yet_is_not_a_double():
    """R4/R5: a branch that opened but has no tile shows the spinner's number, not a double
    (the spinner itself sits on the straight line); flagged as one, the observation would show a
    double there."""
    from sevenrocks_env.tiles import NORTH
    for seed in range(200):
        match = play(Match.new(seed, keep_history=False), list(range(seed % 7, 60)))
        state = match.to_state()
        if state["turn"] >= 0 and state["ends"][NORTH] >= 0 and not state["branch_started"][NORTH]:
            break
    else:
        raise AssertionError("no state with an open, empty branch")
    state["end_double"][NORTH] = True
    with pytest.raises(ValueError, match="match state: ends must be the spinner's number on an "
                                         "open branch with no tile yet"):
        Match.from_state(state)


@pytest.mark.parametrize("field, value, words", [
    ("ends", [-1, -1, -1, -1], ".*open at west and east"),  # no open end: nobody could ever play
    ("ends", [0, 3, 3, 3], ".*north/south exactly once"),   # branches open, spinner exposed (R4)
    ("ends", [4, 3, -1, -1], ".*numbers the played tiles leave open"),  # 1|4, 2|4 pair their 4s
    ("end_double", [True, True, False, False], ".*where that double was played"),  # no 0|0 down
    ("last_end_sum", 9, ".*end sum of the layout"),  # the layout sums to 0 + 2*3 = 6 (R5)
    ("voids", [0, 0, 0, 1], ".*holds no tile of"),   # seat 3 "lacks" 0 but holds 0|2 (R6)
    ("spinner", -1, ".*double played this round"),   # 3|3 was played: it is the spinner (R4)
    ("spinner", 6, ".*double played this round"),    # 6|6 is in seat 3's hand
    ("branch_started", [False, False, True, False], ".*a branch that is not open"),
    # a field out of its range: the first rule it breaks is the one named (a number 7, no seat
    # -1, no round limit 0, R3/R4), word for word
    ("ends", [0, 7, -1, -1], r"four ints in \[-1, 6\]"),
    ("spinner", 7, r"an int in \[-1, 6\]"),
    ("opener", -1, "a seat 0-3"),
    ("max_rounds", 0, r"None or an int in \[1,"),
    ("ends", [-1, 3, -1, -1], "open at west and east once a tile is down"),
    ("ends", [0, -1, -1, -1], "open at west and east once a tile is down"),  # east closed too
    ("branch_started", [True, False, False, False], "set only for north/south"),
])
def test_a_layout_the_played_tiles_cannot_make_is_named(field, value, words):
    """from_state takes untrusted states: a layout no play reaches (a round that can never end,
    an end sum the layout does not have), or a field out of its range, is refused, naming the
    field and its rule (good_state: ends [0, 3, -1, -1], the 3|3 spinner exposed at the east
    end, 8 tiles down)."""
    state = good_state()
    assert (state["ends"], state["spinner"], state["last_end_sum"]) == ([0, 3, -1, -1], 3, 6)
    state[field] = value
    with pytest.raises(ValueError, match=f"match state: {field} must be {words}"):
        Match.from_state(state)


@pytest.mark.parametrize("field, value, named", [
    ("spinner", 3, "ends"), ("end_double", [True, False, False, False], "ends"),
    ("branch_started", [False, False, True, False], "ends"), ("last_end_sum", 5, "last_end_sum"),
])
def test_a_state_before_the_first_tile_has_no_spinner_doubles_branches_or_end_sum(field, value,
                                                                                   named):
    """R3/R4: before the opening nothing is on the table.  A "spinner" there would keep the
    round's first double from becoming the spinner (R4), so it is refused like the rest."""
    state = Match.new(7, keep_history=False).to_state()
    assert state["placements"] == 0 and Match.from_state(state).to_state() == state
    state[field] = value
    with pytest.raises(ValueError, match=f"match state: {named} must be .*before the first tile"):
        Match.from_state(state)


def test_a_closed_branch_is_not_flagged_as_a_double():
    """R4/R5: north/south are closed while the spinner is exposed (good_state); a double flagged
    there would count once the branch opens with no tile on it."""
    from sevenrocks_env.tiles import NORTH, SOUTH
    for slot in (NORTH, SOUTH):
        state = good_state()
        assert state["ends"][slot] == -1
        state["end_double"][slot] = True
        with pytest.raises(ValueError, match="match state: branch_started must be False on a "
                                             "branch that is not open"):
            Match.from_state(state)


def test_a_void_of_any_number_the_seat_still_holds_is_refused():
    """R6: a knock shows the seat lacks the open numbers, so a seat's voids never name a number
    on a tile it holds; checked for every number 0 to 6 (a void of 6 went unchecked when
    ``tiles_showing`` stopped at 5, and no test noticed)."""
    from sevenrocks_env.tiles import TILE_HIGH, TILE_LOW, tiles_of
    for number in range(7):
        state = good_state()
        seat = next(s for s in range(4) if any(number in (TILE_LOW[t], TILE_HIGH[t])
                                                for t in tiles_of(state["hands"][s])))
        state["voids"][seat] = 1 << number
        with pytest.raises(ValueError, match="match state: voids must be numbers the seat holds "
                                             "no tile of"):
            Match.from_state(state)


def _just_after_the_round_ending_move(kind: str) -> Match:
    """A match right after a move that dominoes (``kind="domino"``) or blocks the round, but
    with the round still going (next seat on turn): the state a round never has (R6)."""
    from sevenrocks_env.rules import place_tile
    from sevenrocks_env.scoring import end_sum
    from sevenrocks_env.tiles import KNOCK

    for seed in range(500):
        match = Match.new(seed, target=MAX_TARGET, keep_history=False)  # none won in a round
        match.seed = None  # no next deal: the round's end shows as turn -1
        while match.turn >= 0:
            before, seat = match.clone(), match.turn
            action = legal_actions(match)[0]
            apply_action(match, action)
            if match.turn >= 0 or action == KNOCK or (kind == "domino") != (not match.hands[seat]):
                continue
            tile, slot = action >> 2, action & 3
            before.hands[seat] ^= 1 << tile
            before.played |= 1 << tile
            before.played_by[seat] |= 1 << tile
            place_tile(before, tile, slot)
            before.placements += 1
            before.last_end_sum = end_sum(before.ends, before.end_double, before.branch_started)
            before.turn = (seat + 1) & 3
            return before
    raise AssertionError(f"no {kind} found")


@pytest.mark.parametrize("seat_0_on_turn", [False, True], ids=["next_seat", "seat_0"])
@pytest.mark.parametrize("kind, words", [
    ("domino", r"non-empty for every seat while the round goes on \(playing the last tile "
               r"ends it, R7\)"),
    ("blocked", "open to some tile still held while the round goes on"),
])
def test_a_round_that_should_have_ended_is_refused(kind, words, seat_0_on_turn):
    """Loaded into an env, such a round would never end: every seat could only knock.  With
    the next seat on turn, and with seat 0 (a seat like the others)."""
    state = _just_after_the_round_ending_move(kind).to_state()
    if seat_0_on_turn:
        state["turn"] = 0
    with pytest.raises(ValueError, match=words):
        Match.from_state(state)


@pytest.mark.parametrize("last_end_sum", [5, 36])
def test_an_end_sum_before_the_first_tile_is_refused(last_end_sum):
    """No tile down, no ends to count (R5): an end sum there is no match's."""
    state = Match.new(7, keep_history=False).to_state()
    assert state["placements"] == 0
    Match.from_state(state)
    state["last_end_sum"] = last_end_sum
    with pytest.raises(ValueError, match="last_end_sum must be 0 before the first tile"):
        Match.from_state(state)


def test_the_branches_open_and_close_together():
    """R4: north and south open at once; a layout with north started and south closed is
    refused."""
    from sevenrocks_env.tiles import NORTH, SOUTH
    state = _a_state_where(lambda m: m.branch_started[NORTH] and not m.branch_started[SOUTH])
    Match.from_state(state)
    state["ends"][SOUTH] = -1
    with pytest.raises(ValueError, match="match state: branch_started must be set only for "
                                         "north/south, whose ends open together"):
        Match.from_state(state)


def test_a_covered_spinner_has_its_branches_open():
    """R4: once both straight sides of the spinner are covered its branches are open; closing
    both (no tile on either yet) makes a layout no play reaches."""
    from sevenrocks_env.tiles import NORTH, SOUTH
    state = _a_state_where(lambda m: m.ends[NORTH] >= 0 and not any(m.branch_started))
    Match.from_state(state)
    state["ends"][NORTH] = state["ends"][SOUTH] = -1
    with pytest.raises(ValueError, match="match state: ends must be open at north/south exactly "
                                         "once both straight sides of the spinner are covered"):
        Match.from_state(state)


def test_a_double_inside_the_line_has_a_tile_beyond_it():
    """R3: a double that is not the spinner joins a tile of its number; if no longer at an end,
    another tile of its number joins beyond it (4 halves of the number down).  A double at an
    end with nothing beyond it, marked as not at the end, is refused."""
    from sevenrocks_env.scoring import end_sum
    from sevenrocks_env.tiles import DOUBLE_OF, WITH_NUMBER

    def lone_double_at_an_end(m):  # a non-spinner double outermost, its number on 2 tiles only
        return any(m.end_double[slot] and m.ends[slot] not in (-1, m.spinner)
                   and (m.played & WITH_NUMBER[m.ends[slot]]).bit_count() == 2
                   for slot in range(4))
    state = _a_state_where(lone_double_at_an_end)
    Match.from_state(state)
    slot = next(s for s in range(4) if state["end_double"][s]
                and state["ends"][s] not in (-1, state["spinner"]))
    number = state["ends"][slot]
    assert state["played"] >> DOUBLE_OF[number] & 1
    state["end_double"][slot] = False  # "the end shows a plain tile": the double is inside
    state["last_end_sum"] = end_sum(state["ends"], state["end_double"], state["branch_started"])
    with pytest.raises(ValueError, match=f"match state: played must be tiles joined to the "
                                         f"{number}\\|{number}"):
        Match.from_state(state)
