"""``sevenrocks play``: the answers a player types (moves by number, tiles, ends and branches
named) and the words that tell moves, knocks, round summaries and the result.  The game's flow:
test_play.py; refused input and failures: test_play_failures.py."""

import io

import pytest

from sevenrocks_env.agents import make_agent
from sevenrocks_env.play import MAX_ANSWER, Session, move_words, parse_answer, round_summary
from sevenrocks_env.rules import Match, legal_actions, team_of
from sevenrocks_env.tiles import (EAST, KNOCK, WEST, encode_action, parse_tile, tile_name,
                                  tiles_of)

from positions import finished_round
from rules_examples import EXAMPLES, example_match


def test_parse_answer_reasons():
    match = example_match(EXAMPLES["A"], steps=4)  # ends: west 1 (spinner), east 3
    match.turn = 0
    legal = legal_actions(match)
    assert parse_answer("1", match, legal) == legal[0]
    assert parse_answer("00001", match, legal) == legal[0]  # was "00001 is not on the list"
    assert parse_answer("1-2 w", match, legal) == encode_action(parse_tile("1|2"), WEST)
    assert parse_answer("1|2", match, legal) == encode_action(parse_tile("1|2"), WEST)
    assert parse_answer("2-1 w", match, legal) == encode_action(parse_tile("1|2"), WEST)
    assert parse_tile("5|3") == parse_tile("3-5") == parse_tile("53") != parse_tile("5|5")
    with pytest.raises(ValueError, match=r"do not hold 1\|4"):
        parse_answer("1-4", match, legal)
    with pytest.raises(ValueError, match="does not fit the east end"):
        parse_answer("1-2 e", match, legal)
    with pytest.raises(ValueError, match=r"the north end is not open \(the spinner's branches "
                                         r"open only once both its straight continuations"):
        parse_answer("1-2 n", match, legal)
    with pytest.raises(ValueError, match=r"^'x' is not an end: name one as w, e, n or s "):
        parse_answer("1-2 x", match, legal)  # it was "not understood"
    with pytest.raises(ValueError, match="^not understood: 'x y'"):
        parse_answer("x y", match, legal)
    with pytest.raises(ValueError, match="must place one"):
        parse_answer("knock", match, legal)
    with pytest.raises(ValueError, match="not on the list"):
        parse_answer("0", match, legal)
    assert parse_answer("1", match, [KNOCK]) == KNOCK
    # two digits that also spell a held tile: '12' is 1|2 (held), and move 12 is not on the
    # list, so it is the tile; '01' is move 1 and the tile 0|1 (not held): the move
    assert len(legal) < 12 and parse_answer("12", match, legal) == encode_action(
        parse_tile("1|2"), WEST)
    assert not match.hands[0] >> parse_tile("0|1") & 1 and parse_answer("01", match, legal) == legal[0]
    # '04' played move 4 of the list where the human meant the tile 0|4: both readings valid
    # and different are refused, saying how to answer either
    hand = match.hands[0]
    match.hands[0] = hand | 1 << parse_tile("0|2")
    try:
        assert len(legal) >= 2 and legal[1] >> 2 != parse_tile("0|2")
        with pytest.raises(ValueError, match=r"02 is both move 2 on the list .* your tile 0\|2"):
            parse_answer("02", match, legal)
    finally:
        match.hands[0] = hand
    for odd in ("²", "١"):  # str.isdigit() says yes, int() says no
        with pytest.raises(ValueError) as info:
            parse_answer(odd, match, legal)
        assert "invalid literal" not in str(info.value)


@pytest.mark.parametrize("text", ["1|2|3", "1-2-3", "0|0|0", "106", "0005", "345", "1", "", "|"])
def test_parse_tile_refuses_what_is_not_one_tile(text):
    """``parse_tile``: ``"a|b"``, ``"a-b"`` or ``"ab"`` (two numbers); anything else is a
    ``ValueError`` -- three halves, or three or more digits with no separator."""
    with pytest.raises(ValueError):
        parse_tile(text)


def test_parse_tile_spellings_of_one_tile():
    assert parse_tile("1|6") == parse_tile("6-1") == parse_tile("16") == parse_tile(" 1 | 6 ")


def test_reaching_the_target_exactly_is_announced_as_a_win():
    """R8: the first side to reach *or pass* the target wins."""
    match = example_match(EXAMPLES["A"], steps=2)  # step 3: seat 2 lays 4|4 east, scores 10
    match.turn = 2
    action = encode_action(parse_tile("4|4"), EAST)
    match.scores[0] = match.target - 10
    assert move_words(match, action).endswith("scores 10 and WINS the match")
    match.scores[0] = match.target - 11
    assert "WINS" not in move_words(match, action)


def test_a_tile_fitting_two_ends_needs_the_end_named():
    match = example_match(EXAMPLES["A"], steps=4)  # ends: west 1 (spinner line B), east 3
    match.turn = 0                                  # seat 0 holds 1|3: fits both
    legal = legal_actions(match)
    with pytest.raises(ValueError, match="fits more than one end"):
        parse_answer("1-3", match, legal)
    assert parse_answer("1-3 e", match, legal) == encode_action(parse_tile("1|3"), EAST)
    assert parse_answer("1-3 w", match, legal) == encode_action(parse_tile("1|3"), WEST)


def test_an_end_showing_a_blank_can_be_named():
    """Example C after step 2: the west end shows 0 (a blank is an open end, R3)."""
    match = example_match(EXAMPLES["C"], steps=2)
    assert match.ends[WEST] == 0
    for seat in range(4):
        match.turn = seat
        legal = legal_actions(match)
        west = [a for a in legal if a < 112 and a & 3 == WEST]
        if west:
            tile = west[0] >> 2
            assert parse_answer(f"{tile_name(tile)} w", match, legal) == west[0]
            return
    pytest.fail("no seat holds a blank")


def test_the_opening_tile_may_name_any_end():
    match = Match.new(3)
    assert match.opening
    legal = legal_actions(match)
    tile = tiles_of(match.hands[match.turn])[0]
    assert parse_answer(f"{tile_name(tile)} east", match, legal) == encode_action(tile, WEST)


def test_round_summary_shows_each_hand_with_its_own_team_unless_won():
    log = finished_round().history[-1]
    lines = round_summary(log)
    seat_lines = [line for line in lines if line.lstrip().startswith("seat ")]
    assert len(seat_lines) == 4  # R7: every hand is counted
    for seat, line in enumerate(seat_lines):
        assert line.lstrip().startswith(f"seat {seat}:")
        assert f"team {team_of(seat)} " in line  # R1: seats 0, 2 team 0; 1, 3 team 1
    won = finished_round(won=True, target=5).history[-1]
    assert not any(line.lstrip().startswith("seat ") for line in round_summary(won))  # R8


@pytest.mark.parametrize("seat", [0, 1])
def test_the_final_line_says_whether_your_team_won(seat):
    out = io.StringIO()
    agents = {s: make_agent("random", seed=s) for s in range(4) if s != seat}
    session = Session(seat, agents, seed=3, target=60, stdin=io.StringIO("1\n" * 2000),
                      stdout=out, echo=False)
    assert session.run() is True
    winner = session.match.winner
    expected = "your team wins!" if team_of(seat) == winner else "your team loses."
    assert out.getvalue().rstrip().endswith(expected)


def test_an_answer_of_exactly_max_answer_characters_is_read():
    out = io.StringIO()
    line = " " * (MAX_ANSWER - 1) + "1"  # the last line of the input, no newline
    session = Session(0, {s: make_agent("random") for s in (1, 2, 3)}, seed=3, target=250,
                      stdin=io.StringIO(line), stdout=out, echo=False)
    assert session.ask("? ") == line
    assert "not accepted" not in out.getvalue()


def test_a_winning_move_is_told_by_the_score_of_the_mover_s_own_team():
    """"WINS the match" looks at the team of the seat on turn: for a seat of team 1, team 0's
    score near the target says nothing."""
    from sevenrocks_env.rules import apply_action
    from sevenrocks_env.play import outcome

    checked = set()
    match = Match.new(12, target=300)
    while len(checked) < 2:
        for action in legal_actions(match):
            points = outcome(match, action)[1] if action != KNOCK else 0
            if points:
                mine, theirs = team_of(match.turn), 1 - team_of(match.turn)
                scores = list(match.scores)
                match.scores[mine], match.scores[theirs] = match.target - points, 0
                assert move_words(match, action).endswith("and WINS the match")
                match.scores[mine], match.scores[theirs] = 0, match.target - points
                assert "WINS" not in move_words(match, action)
                match.scores[:] = scores
                checked.add(mine)
        apply_action(match, legal_actions(match)[0])


def test_a_move_that_ends_the_round_is_worded_with_its_own_end_sum():
    """The end sum a round's last tile leaves (not the next deal's empty table)."""
    from sevenrocks_env.rules import apply_action

    ends_seen = 0
    for seed in range(6):
        match = Match.new(seed, target=300)
        while not match.over:
            action = legal_actions(match)[0]
            words = move_words(match, action)
            rounds = len(match.history)
            apply_action(match, action)
            log = match.history[rounds - 1]
            if action != KNOCK and log.result is not None:
                total = log.moves[-1][2]
                assert f"end sum {total}," in words, (words, total)
                ends_seen += total > 0
    assert ends_seen


def test_a_and_b_name_branch_a_north_and_branch_b_south():
    """The board calls the spinner's branches A (north) and B (south): ``3-5 a`` is north."""
    from sevenrocks_env.rules import apply_action, is_legal

    named = set()
    for seed in range(40):
        match = Match.new(seed, target=5000)
        while len(match.history) == 1:
            legal = legal_actions(match)
            for slot, word in ((2, "a"), (3, "b")):
                for action in legal:
                    if action != KNOCK and action & 3 == slot and \
                            not is_legal(match, (action & ~3) | (5 - slot)):
                        answer = f"{tile_name(action >> 2).replace('|', '-')} {word}"
                        assert parse_answer(answer, match, legal) == action
                        named.add(word)
            apply_action(match, legal[0])
        if named == {"a", "b"}:
            return
    raise AssertionError(f"only {named} was named")


def test_a_knock_is_told_in_the_player_s_grammar():
    """"you knock", "seat 2 (random) knocks": one line for each knock of the match, yours and
    the bots' (a knock is forced, R6: it plays itself, and is still told)."""
    out = io.StringIO()
    agents = {s: make_agent("random", seed=s) for s in (1, 2, 3)}
    session = Session(0, agents, seed=3, target=120, stdin=io.StringIO("1\n" * 4000),
                      stdout=out, echo=False)
    assert session.run() is True
    knocks = [seat for rnd in session.match.history for seat, action, *_ in rnd.moves
              if action == KNOCK]
    text = out.getvalue()
    assert 0 in knocks and set(knocks) != {0}
    assert text.count(">> you knock: no tile fits") == knocks.count(0)
    assert text.count(") knocks: no tile fits") == len(knocks) - knocks.count(0)
    assert "you knocks" not in text


def test_a_branch_named_before_any_spinner_says_there_is_none_yet():
    """"the north end is not open (branches open once the spinner is internal)" was said when
    no double had been played, so there was no spinner to speak of (R4)."""
    from sevenrocks_env.rules import apply_action
    from sevenrocks_env.tiles import TILE_IS_DOUBLE

    for seed in range(50):
        match = Match.new(seed)
        opening = [a for a in legal_actions(match) if not TILE_IS_DOUBLE[a >> 2]]
        if not opening:
            continue
        apply_action(match, opening[0])
        legal = legal_actions(match)
        if legal != [KNOCK]:
            break
    assert match.spinner < 0 and legal != [KNOCK]
    with pytest.raises(ValueError, match=r"^the north end is not open \(there is no spinner yet, "
                                         r"so no branch: the first double played becomes it"):
        parse_answer(f"{tile_name(legal[0] >> 2)} n", match, legal)


def test_a_move_number_is_not_read_as_a_tile_written_high_half_first():
    """'10' was refused as both move 10 and the tile 0|1 (89% of the refused numbers of 10 or
    more in 2,000 random matches): a tile is written low half first (R1), '01' spells it."""
    match = example_match(EXAMPLES["A"], steps=4)
    match.hands[match.turn] |= 1 << parse_tile("0|1")
    moves = [encode_action(parse_tile("3|5"), EAST)] * 9 + [encode_action(parse_tile("2|3"),
                                                                            EAST)]
    assert parse_answer("10", match, moves) == moves[9]
    with pytest.raises(ValueError, match=r"01 is both move 1 on the list .* your tile 0\|1"):
        parse_answer("01", match, moves)


def test_two_ends_named_are_refused_as_two_ends():
    """'3|5 east west' said "'east' is not an end"."""
    match = example_match(EXAMPLES["A"], steps=4)
    with pytest.raises(ValueError, match=r"^name only one end \(w, e, n or s\)$"):
        parse_answer("3|5 east west", match, legal_actions(match))


def test_the_final_line_names_each_team_s_score_and_echoes_no_carriage_return():
    """'team 0 wins 120 - -5' read as a subtraction; an answer line ending in CRLF (a pipe
    from Windows) was echoed with a visible \\r."""
    out = io.StringIO()
    session = Session(0, {s: make_agent("random", seed=s) for s in (1, 2, 3)}, seed=3,
                      target=60, stdin=io.StringIO("1\r\n" * 2000), stdout=out, echo=True)
    assert session.run() is True
    text = out.getvalue()
    assert "\\r" not in text
    scores = session.match.scores
    assert f"team {session.match.winner} wins: team 0 {scores[0]}, team 1 {scores[1]} - " in text
