"""Seven Rocks in OpenSpiel: a second mutation audit of ``sevenrocks_env/openspiel``.

Each test pins a behaviour a small change to ``game.py``, ``observer.py`` or ``hidden.py`` left
unnoticed: the parameters' upper bounds, the declared utility bound, what a player sees while a
later round's opener is drawn (tensors and information state), the layout's text (an empty
layout, a blank end), the end of the game in the observation string, chance labels at the
opener draw, the draws' type, and ``state_from_view``'s checks and first mover."""

import re
from fractions import Fraction

import numpy as np
import pytest

pyspiel = pytest.importorskip(
    "pyspiel",
    reason="open-spiel is not installed (pip install open-spiel, or the [openspiel] extra)")

from openspiel_states import deal_chance, first_state_where, load, random_state  # noqa: E402

from sevenrocks_env.observation import OBS_SIZE, OFFSETS, decode, encode  # noqa: E402
from sevenrocks_env.openspiel import state_from_view  # noqa: E402
from sevenrocks_env.openspiel.game import MAX_ROUND_MARGIN  # noqa: E402
from sevenrocks_env.openspiel.hidden import checked_draws  # noqa: E402
from sevenrocks_env.openspiel.observer import layout_text  # noqa: E402
from sevenrocks_env.record import MAX_ROUNDS, MAX_TARGET  # noqa: E402
from sevenrocks_env.scoring import MAX_PLACEMENT_POINTS, MAX_TEAM_DEDUCTION  # noqa: E402
from sevenrocks_env.tiles import SLOT_NAMES, tile_name  # noqa: E402


# -- parameters and the game's declared bounds ----------------------------------------------

@pytest.mark.parametrize("params", [{"target": MAX_TARGET}, {"target": 1},
                                    {"max_rounds": MAX_ROUNDS}, {"max_rounds": 1}])
def test_the_parameters_bounds_are_accepted(params):
    """The documented ranges are inclusive: the largest target and round limit load."""
    game = load(**params)
    for name, value in params.items():
        assert getattr(game, name) == value
        assert game.get_parameters()[name] == value
    assert game.new_initial_state().is_chance_node()


def test_the_one_round_utility_bound_covers_every_round_margin():
    """``max_utility`` of the one-round game must bound any margin: a partnership places at
    most 13 tiles of at most 35 points (R5) and the other may lose its largest deduction (R7)."""
    assert MAX_ROUND_MARGIN >= 13 * MAX_PLACEMENT_POINTS + MAX_TEAM_DEDUCTION
    game = load(rounds=1)
    assert game.max_utility() == MAX_ROUND_MARGIN == -game.min_utility()


# -- a later round's opener draw (after a blocked round, R2) --------------------------------

def _later_opener_draw():
    return first_state_where(load(), lambda s: s._drawing_opener and s._match is not None,
                             at_chance=True, seeds=range(100))


def _own_dealt(state, player):
    return sorted(state._dealt[7 * player:7 * player + 7])


def test_a_later_opener_draw_observation_tensor_is_the_new_hand_and_the_scores():
    """Not the finished round's table: the hand piece is the new deal, nothing is on the
    layout, and the scores are seat-relative."""
    state = _later_opener_draw()
    match, target = state._match, state._target
    for player in range(4):
        expected = np.zeros(OBS_SIZE, np.float32)
        for tile in _own_dealt(state, player):
            expected[OFFSETS["hand"].start + tile] = 1.0
        ours, theirs = match.scores[player & 1], match.scores[(player & 1) ^ 1]
        expected[OFFSETS["scores"]] = (ours / target, theirs / target, target / 1000.0)
        assert np.array_equal(np.asarray(state.observation_tensor(player), np.float32), expected)
        info = np.asarray(state.information_state_tensor(player), np.float32)
        assert np.array_equal(info[:OBS_SIZE], expected)
        rest = info[OBS_SIZE:]
        dealt = np.zeros(28, np.float32)
        dealt[_own_dealt(state, player)] = 1.0
        assert np.array_equal(rest[:28], dealt)
        assert not rest[28:].any()  # no first mover, no move of the new round yet


def test_a_later_opener_draw_information_state_ends_with_the_new_deal():
    """Perfect recall: while the opener is drawn a player knows its new hand."""
    state = _later_opener_draw()
    for player in range(4):
        own = " ".join(map(tile_name, _own_dealt(state, player)))
        last = state.information_state_string(player).split("\n")[-1]
        assert last == f"deal 28 mine[{own}]"


def test_a_chance_label_at_the_opener_draw_is_a_seat_only():
    """While the opener is drawn the outcomes are seats 0-3: a tile number is not named a seat
    drawn to open, but labelled as what it can have been (a past deal: a tool labelling the
    history from a later state), and a past deal is so labelled at a deal node too."""
    state = load().new_initial_state()
    state.apply_action(20)
    assert state.action_to_string(pyspiel.PlayerId.CHANCE, 20) == "chance outcome 20: deal 3|5"
    assert state.action_to_string(pyspiel.PlayerId.CHANCE, 21) == "deal 3|6 to seat 0"
    for tile in range(28):
        if tile != 20:
            state.apply_action(tile)
    assert state._drawing_opener
    assert state.action_to_string(pyspiel.PlayerId.CHANCE, 3) == "seat 3 drawn to open"
    for outcome in (4, 10, 27):
        assert state.action_to_string(pyspiel.PlayerId.CHANCE, outcome) \
            == f"chance outcome {outcome}: deal {tile_name(outcome)}"
    with pytest.raises(ValueError, match="chance outcome 28: chance outcomes are tiles 0-27"):
        state.action_to_string(pyspiel.PlayerId.CHANCE, 28)


# -- the layout's text ----------------------------------------------------------------------

def test_an_empty_layout_is_written_as_such():
    state = load(rounds=1).new_initial_state()
    deal_chance(state, 0)
    assert state._match.placements == 0
    assert layout_text(state._match) == "layout empty"
    assert "| layout empty |" in state.observation_string(state.current_player())
    assert "\nlayout empty\n" in str(state)


def test_a_blank_end_is_an_open_zero_not_a_closed_slot():
    """An end showing 0 (a blank half) is open and written ``0``; ``-`` is a slot not open."""
    state = first_state_where(load(rounds=1), lambda s: 0 in s._match.ends)
    match = state._match
    text = layout_text(match)
    for slot, number in enumerate(match.ends):
        name = SLOT_NAMES[slot][0].upper()
        written = re.search(rf"\b{name}:(\S+)", text).group(1)
        if number < 0:
            assert written == "-"
        else:
            assert written.rstrip("+").rstrip("d") == str(number)


def test_a_finished_game_observation_string_says_over():
    state = random_state(load(rounds=1), np.random.default_rng(3))
    assert state.is_terminal()
    for player in range(4):
        assert state.observation_string(player).endswith(" | over")


# -- the draws and state_from_view ----------------------------------------------------------

@pytest.mark.parametrize("value", [np.float16(0.5), np.float32(0.25), Fraction(1, 4), 0])
def test_a_draw_of_another_number_type_is_given_as_a_plain_float(value):
    """A float16 draw times a large count of deals would overflow to inf (NumPy keeps the
    narrow type): the draw is handed on as a Python float."""
    draw = checked_draws(lambda: value).random()
    assert type(draw) is float and draw == float(value)


def _view_and_hidden(seat_offset=0):
    state = random_state(load(), np.random.default_rng(9), stop=lambda s: s.move_number() > 45)
    seat = (state.current_player() + seat_offset) & 3
    match = state._match
    view = decode(encode(match, seat))
    hidden = tuple(match.hands[(seat + k) & 3] for k in (1, 2, 3))
    return view, hidden


def test_state_from_view_checks_the_last_hidden_hands_count_too():
    view, hidden = _view_and_hidden()
    short = hidden[2] & (hidden[2] - 1)  # its lowest tile dropped
    with pytest.raises(ValueError, match="hidden hands"):
        state_from_view(load(rounds=1), view, (hidden[0], hidden[1], short))


def test_state_from_view_of_a_seat_not_to_move_names_the_seat_that_moves_first():
    """The position's round starts with the seat to move (relative to the observer): the
    information state names it first, as the moves that follow."""
    view, hidden = _view_and_hidden(seat_offset=1)  # the seat to move is 3 seen from here
    assert view.turn == 3
    state = state_from_view(load(rounds=1), view, hidden)
    assert state.current_player() == 3
    state.apply_action(state.legal_actions()[0])
    lines = state.information_state_string(0).split("\n")
    assert lines[-1].startswith("r0 first 3 ") and " moves 3:" in lines[-1]
    first_mover = np.asarray(state.information_state_tensor(0))[OBS_SIZE + 28:OBS_SIZE + 32]
    assert list(first_mover) == [0.0, 0.0, 0.0, 1.0]


def test_a_drawn_round_returns_plain_zeros_not_minus_zero():
    """A one-round game with margin 0 returned ``[0.0, -0.0, 0.0, -0.0]``: the negated zeros
    showed as ``-0.0`` in ``evaluate_bots`` and IS-MCTS output."""
    import math

    game = load(rounds=1)
    for seed in range(400):
        returns = random_state(game, np.random.default_rng(seed)).returns()
        if returns[0] == 0:
            assert [math.copysign(1.0, r) for r in returns] == [1.0] * 4, returns
            return
    raise AssertionError("no drawn round in 400 random rounds")
