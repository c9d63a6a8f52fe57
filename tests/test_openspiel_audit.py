"""Seven Rocks in OpenSpiel: what a mutation audit of ``sevenrocks_env/openspiel`` found untested.

The strings of a known position (observation, information state, ``str``) pinned and checked
against the rules engine; perfect recall (knocks, the opener, earlier rounds, a position's start);
the default observer; the deal's refusals and the chance labels; ``state_from_view``'s one round.
Resampling, the bots' and ``AgentBot``'s checks and seeding: test_openspiel_audit_bots.py."""

import re

import numpy as np
import pytest

pyspiel = pytest.importorskip(
    "pyspiel", reason="open-spiel is not installed (pip install open-spiel, or the [openspiel] extra)")

from openspiel_states import deal_chance, first_state_where, load, random_state  # noqa: E402

from sevenrocks_env import rules  # noqa: E402
from sevenrocks_env.observation import OBS_SIZE, OFFSETS, decode, encode  # noqa: E402
from sevenrocks_env.openspiel import state_from_view  # noqa: E402
from sevenrocks_env.tiles import KNOCK, NUM_TILES, tile_name, tiles_of  # noqa: E402

#: Seed 0's deal (``rules.deal(0, 0)``, seat 1 drawn to open), then these moves: a knock by
#: seat 2 (it lacks 3 and 5), a double (5|5) on the south end, both branches started, spinner 3.
MOVES = [84, 72, 56, 78, 25, 21, 39, 8, 12, 81, 90, 47, 94, KNOCK, 103]


def _known_position():
    """``(state of the one-round game, the same round in the rules engine)``."""
    state = load(rounds=1).new_initial_state()
    deal_chance(state, 0)
    match = rules.Match.new(0, max_rounds=1)
    for action in MOVES:
        state.apply_action(action)
        rules.apply_action(match, action)
    return state, match


def _names(mask):
    return " ".join(tile_name(t) for t in tiles_of(mask))


def test_the_known_position_is_what_the_rules_engine_says():
    """The facts the pinned strings below write, checked against the engine itself."""
    _, match = _known_position()
    assert rules.deal(0, 0)[1] == 1 and match.history[-1].opener == 1
    assert (match.scores, match.turn, match.spinner) == ([10, 15], 0, 3)
    assert match.voids == [0, 0, (1 << 3) | (1 << 5), 0]
    assert list(match.end_double) == [False, False, False, True]
    assert list(match.branch_started) == [False, False, True, True]
    assert [h.bit_count() for h in match.hands] == [4, 3, 4, 3]
    assert _names(match.hands[1]) == "0|0 1|2 2|5"
    assert _names(match.history[-1].hands[1]) == "0|0 0|3 0|6 1|2 2|5 3|6 4|5"
    assert [_names(match.played_by[s]) for s in range(4)] == [
        "0|2 1|5 3|4", "0|3 0|6 3|6 4|5", "0|5 3|3 3|5", "1|3 2|3 4|4 5|5"]


def test_the_observation_string_writes_the_whole_observation():
    """Hand, tiles played by each seat, tiles held, the numbers a knock showed lacking (R6),
    the layout (open numbers, the double, started branches, spinner, sum), scores, turn."""
    state, _ = _known_position()
    assert state.observation_string(1) == (
        "p1 hand[0|0 1|2 2|5] | played 0[0|2 1|5 3|4] 1[0|3 0|6 3|6 4|5] 2[0|5 3|3 3|5] "
        "3[1|3 2|3 4|4 5|5] | holding 4 3 4 3 | lacks 0{} 1{} 2{35} 3{} | "
        "layout W:3 E:3 N:5+ S:5d+ spinner 3 sum 21 | scores 10:15 | turn 0")


def test_the_observation_string_names_every_number_a_seat_lacks_six_included():
    """Each seat's ``lacks`` lists every number its knocks showed it lacks (R6), 0 to 6: a
    seat that knocked on a 6 shows it too."""
    state = first_state_where(load(rounds=1), lambda s: any(
        (s._match.voids[seat] >> 6) & 1 for seat in range(4)))
    match = state._match
    lacks = next(part for part in state.observation_string(0).split(" | ")
                 if part.startswith("lacks "))
    shown_lacks = dict(re.findall(r"(\d)\{(\d*)\}", lacks))
    assert shown_lacks == {
        str(seat): "".join(str(n) for n in range(7) if (match.voids[seat] >> n) & 1)
        for seat in range(4)}
    assert any("6" in numbers for numbers in shown_lacks.values())


def test_the_information_state_string_has_the_opener_the_deal_and_every_move():
    """Perfect recall: who moved first, the player's dealt hand, every move, the knock too."""
    state, _ = _known_position()
    assert state.information_state_string(1) == (
        "p1\nr0 first 1 mine[0|0 0|3 0|6 1|2 2|5 3|6 4|5] moves 1:84 2:72 3:56 0:78 1:25 2:21 "
        "3:39 0:8 1:12 2:81 3:90 0:47 1:94 2:k 3:103")


def test_str_shows_every_hand_the_layout_and_the_seat_to_play():
    state, match = _known_position()
    assert str(state) == "\n".join([
        "round 0, scores 10:15 (target 250)",
        *(f"seat {s}: {_names(match.hands[s])}" for s in range(4)),
        "layout W:3 E:3 N:5+ S:5d+ spinner 3 sum 21",
        "seat 0 to play"])
    while not state.is_terminal():
        state.apply_action(state.legal_actions()[0])
    assert "to play" not in str(state)
    # the one round ended by a domino or a block (not won at 250): still round 0, not the
    # next round the match counted to before max_rounds stopped it
    assert state._match.truncated and str(state).startswith("round 0, scores ")


def test_a_knock_changes_every_players_information_state():
    """Each move, a knock included, is seen by all (R6): perfect recall tells the positions
    before and after it apart."""
    knocked = first_state_where(load(rounds=1), lambda s: KNOCK in s.legal_actions())
    before = [knocked.information_state_string(p) for p in range(4)]
    knocked.apply_action(KNOCK)
    after = [knocked.information_state_string(p) for p in range(4)]
    assert all(b != a for b, a in zip(before, after))


def test_the_opener_draw_is_in_every_information_state():
    """Two states with the same deal and another seat drawn to open differ for every player."""
    states = []
    for opener in (0, 2):
        state = load(rounds=1).new_initial_state()
        for tile in range(NUM_TILES):
            state.apply_action(tile)
        state.apply_action(opener)
        states.append(state)
    for player in range(4):
        assert states[0].information_state_string(player) \
            != states[1].information_state_string(player)
        assert states[0].observation_string(player) != states[1].observation_string(player)


# -- observers, chance nodes, the deal ------------------------------------------------------

def test_the_default_observer_is_the_seats_observation():
    """``make_observation(game)`` (no observation type: ``make_py_observer(None)``) is the
    observation, 238 floats, not the information state."""
    from open_spiel.python.observation import make_observation

    state, _ = _known_position()
    observation = make_observation(state.get_game())
    for player in range(4):
        observation.set_from(state, player)
        assert observation.tensor.shape == (OBS_SIZE,)
        assert np.array_equal(observation.tensor, encode(state._match, player))
        assert observation.string_from(state, player) == state.observation_string(player)


def test_the_first_deal_shows_the_target_as_every_observation_does():
    """Scores while the first round is dealt: 0, 0 and the target / 1000 (as the engine's)."""
    state = load(target=100).new_initial_state()
    for tile in range(9):
        state.apply_action(tile)
    start = rules.Match.new(0, target=100)
    for player in range(4):
        got = np.asarray(state.observation_tensor(player))[OFFSETS["scores"]]
        np.testing.assert_allclose(got, encode(start, player)[OFFSETS["scores"]], rtol=1e-6)
        assert got[2] == pytest.approx(0.1)


@pytest.mark.parametrize("tile", [NUM_TILES, KNOCK])
def test_a_deal_node_refuses_what_is_not_a_tile(tile):
    state = load().new_initial_state()
    state.apply_action(3)
    with pytest.raises(ValueError, match=f"deal: {tile} is not a tile left to deal"):
        state.apply_action(tile)
    assert state._dealt == [3]


def test_str_shows_each_seats_whole_dealt_hand():
    state = load().new_initial_state()
    hands, _ = rules.deal(5, 0)
    for seat in range(4):
        for tile in tiles_of(hands[seat]):
            state.apply_action(tile)
    text = str(state)
    for seat in range(4):
        assert f"seat {seat} dealt: {_names(hands[seat])}\n" in text
    assert text.endswith("drawing the opener")


def test_chance_outcomes_are_labelled():
    state = load().new_initial_state()
    for tile in range(NUM_TILES):
        state.apply_action(tile)
    assert state.action_to_string(pyspiel.PlayerId.CHANCE, 2) == "seat 2 drawn to open"
    state.apply_action(2)
    # asked after the fact: only 0-3 can also have been an opener draw
    assert state.action_to_string(pyspiel.PlayerId.CHANCE, 4) == "chance outcome 4: deal 0|4"
    assert state.action_to_string(state.current_player(), KNOCK) == "knock"


def test_a_later_rounds_deal_shows_the_match_scores_in_the_observation_string():
    state = first_state_where(
        load(), lambda s: s._match is not None and s._dealing and len(s._dealt) == 3
        and s._match.scores[0] != s._match.scores[1], at_chance=True, seeds=range(50))
    scores = state._match.scores
    for player in range(4):
        assert state.observation_string(player).endswith(f"| scores {scores[0]}:{scores[1]}")


def test_a_state_from_a_view_writes_the_position_into_every_information_state():
    """``state_from_view``: "the public part of the position is written into every
    information state string", and stays there as the round goes on (perfect recall)."""
    _, match = _known_position()
    hidden = tuple(match.hands[(1 + k) & 3] for k in (1, 2, 3))
    state = state_from_view(load(rounds=1), decode(encode(match, 1)), hidden)
    public = state.observation_string(0).split(" | ", 1)[1]  # all but player 0's hand
    assert public.startswith("played ") and "lacks 0{} 1{35} 2{} 3{}" in public
    state.apply_action(state.legal_actions()[0])
    for player in range(4):
        assert f"from[{public}]" in state.information_state_string(player)


def test_str_of_a_state_from_a_view_starts_with_its_position():
    """``str`` of a ``state_from_view`` state names the public position it started from, and
    keeps naming it as the round goes on."""
    _, match = _known_position()
    hidden = tuple(match.hands[(1 + k) & 3] for k in (1, 2, 3))
    state = state_from_view(load(rounds=1), decode(encode(match, 1)), hidden)
    public = state.observation_string(0).split(" | ", 1)[1]
    state.apply_action(state.legal_actions()[0])
    assert str(state).splitlines()[0] == f"started from: {public}"


def test_a_round_ended_by_reaching_the_target_says_so_in_the_information_state():
    """A round cut short by a side reaching the target (R8) ends its information state line
    with its result, "won", as a domino or a block ends with theirs."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        state = random_state(load(target=10), rng)
        log = state._match.history[-1]
        if log.result == rules.WON:
            break
    else:
        raise AssertionError("no match to 10 ended mid-round")
    for player in range(4):
        assert state.information_state_string(player).endswith(" won")


def test_the_layout_names_a_spinner_of_zero():
    """The 0|0 double as the spinner is "spinner 0", not "none" (only no spinner is)."""
    state = first_state_where(load(rounds=1), lambda s: s._match.spinner == 0)
    assert " spinner 0 sum " in state.observation_string(state.current_player())


def test_a_clone_of_a_clone_still_copies_the_match_the_fast_way():
    """OpenSpiel clones by deep-copying; the copy's match stays a ``SearchMatch`` (cloned with
    ``Match.clone``), so the clones IS-MCTS makes of clones stay cheap and keep the history."""
    from sevenrocks_env.openspiel.game import SearchMatch

    state = first_state_where(load(), lambda s: s._match.placements >= 2)
    twice = state.clone().clone()
    assert type(twice._match) is SearchMatch
    assert twice.history() == state.history()
    assert twice.information_state_string(0) == state.information_state_string(0)


def test_a_later_opener_draw_is_shown_as_the_deal_not_the_last_table():
    """After a blocked round the next opener is drawn (R2): until it is, a player sees its new
    hand and the scores, not the finished round's layout."""
    state = first_state_where(load(), lambda s: s._drawing_opener and s._match is not None,
                              at_chance=True, seeds=range(100))
    scores = state._match.scores
    for player in range(4):
        own = " ".join(map(tile_name, sorted(state._dealt[7 * player:7 * player + 7])))
        assert state.observation_string(player) \
            == f"p{player} dealing: hand[{own}] | scores {scores[0]}:{scores[1]}"


def test_the_information_state_keeps_every_earlier_round():
    """Perfect recall across rounds: a later round's information state still holds the first
    round, its moves and the hands shown at its count (R7)."""
    state = first_state_where(load(), lambda s: s._match.round_index == 1
                              and s._match.history[-1].moves)
    first = state._match.history[0]
    for player in range(4):
        lines = state.information_state_string(player).split("\n")
        assert lines[1].startswith(f"r0 first {first.opener} mine[{_names(first.hands[player])}]")
        assert f" {first.result}" in lines[1] and lines[2].startswith("r1 first ")


# -- state_from_view ------------------------------------------------------------------------

def _view_of_known_position():
    _, match = _known_position()
    hidden = tuple(match.hands[(1 + k) & 3] for k in (1, 2, 3))
    return decode(encode(match, 1)), hidden


def test_state_from_view_needs_the_one_round_game():
    view, hidden = _view_of_known_position()
    with pytest.raises(ValueError, match="needs the one-round game"):
        state_from_view(load(), view, hidden)


def test_a_state_from_a_view_ends_with_its_round():
    """The one-round game: no deal of a next round after the round's count."""
    view, hidden = _view_of_known_position()
    state = state_from_view(load(rounds=1), view, hidden)
    while not state.is_terminal():
        assert not state.is_chance_node()
        state.apply_action(state.legal_actions()[-1])
    assert len(state._match.history) == 1 and state._match.history[0].result is not None


def test_a_state_from_a_view_keeps_the_observer_s_own_knocks_when_given():
    """An observation does not carry its seat's own knocks (R6), which the other seats saw:
    ``own_voids`` puts them back, so the other players' observations say them and their
    resamples never deal the observer a number it knocked on; a hand holding such a number,
    or a value that is no 7-bit set, is refused."""
    game = load(rounds=1)
    state = first_state_where(game, lambda s: s._match is not None and s._match.voids[s.current_player()] != 0
                              and len(s.legal_actions()) > 1, seeds=range(200))
    match, seat = state._match, state.current_player()
    view, own = decode(encode(match, seat)), match.voids[seat]
    assert view.voids[0] == 0  # what the observation lacks
    hidden = tuple(match.hands[(seat + k) & 3] for k in (1, 2, 3))
    knocked = {n for n in range(7) if own >> n & 1}
    for given, kept in ((own, True), (0, False)):
        built = state_from_view(game, view, hidden, own_voids=given)
        # the left opponent sees the observer (its relative seat 3) lack what it knocked on
        real = state.observation_string((seat + 1) & 3).split(" | ")[3]
        assert (built.observation_string(1).split(" | ")[3] == real) is kept
        dealt = set()
        for i in range(100):
            hand = built.resample_from_infostate(1, np.random.default_rng(i))._match.hands[0]
            dealt |= {int(x) for t in tiles_of(hand) for x in tile_name(t).split("|")}
        assert (not knocked & dealt) is kept
    with pytest.raises(ValueError, match="own_voids says the observer knocked on"):
        state_from_view(game, view, hidden, own_voids=127)
    with pytest.raises(ValueError, match="own_voids must be a 7-bit set"):
        state_from_view(game, view, hidden, own_voids=128)
    with pytest.raises(TypeError, match="own_voids must be a 7-bit set"):
        state_from_view(game, view, hidden, own_voids="3")
