"""Seven Rocks in OpenSpiel: what each player may know -- ``resample_from_infostate`` keeps
everything the player has seen and is uniform over the consistent deals, and the observation
and information state show each seat only its own view (R1)."""

import itertools
import re

import numpy as np
import pytest

pyspiel = pytest.importorskip(
    "pyspiel", reason="open-spiel is not installed (pip install open-spiel, or the [openspiel] extra)")

from openspiel_states import first_state_where, load, random_state  # noqa: E402

from sevenrocks_env import rules  # noqa: E402
from sevenrocks_env.agents.belief import excluded_tiles  # noqa: E402
from sevenrocks_env.observation import OBS_SIZE, OFFSETS, decode, encode  # noqa: E402
from sevenrocks_env.openspiel import state_from_view  # noqa: E402
from sevenrocks_env.openspiel.observer import MAX_ROUND_MOVES  # noqa: E402
from sevenrocks_env.tiles import KNOCK, NUM_ACTIONS, NUM_TILES, tile_name  # noqa: E402


# -- resample_from_infostate ----------------------------------------------------------------

def _hidden_hands_respect_knocks(state, player):
    match = state._match
    for seat in range(4):
        if seat != player:
            assert not match.hands[seat] & excluded_tiles(match.voids[seat]), (seat, match.voids)


def test_resampling_keeps_what_the_player_knows():
    game = load(target=60)
    rng = np.random.default_rng(7)
    checked = knocks = 0
    for _ in range(5):
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes, _ = zip(*state.chance_outcomes())
                state.apply_action(int(rng.choice(outcomes)))
            else:
                for player in range(4):
                    other = state.resample_from_infostate(player, rng)
                    assert other.information_state_string(player) == state.information_state_string(player)
                    assert other.information_state_tensor(player) == state.information_state_tensor(player)
                    assert other.observation_tensor(player) == state.observation_tensor(player)
                    assert other.legal_actions() == state.legal_actions() or player != state.current_player()
                    _hidden_hands_respect_knocks(other, player)
                    if checked % 5 == 0:  # the copy's history is its own deal
                        replayed = game.new_initial_state()
                        for action in other.history():
                            replayed.apply_action(action)
                        assert str(replayed) == str(other)
                    checked += 1
                knocks += any(state._match.voids)
                state.apply_action(int(rng.choice(state.legal_actions())))
    assert checked > 200 and knocks > 0


def test_resampling_during_the_deal_keeps_own_tiles():
    state = load().new_initial_state()
    for tile in range(17):
        state.apply_action(tile)
    other = state.resample_from_infostate(1, pyspiel.UniformProbabilitySampler(0.0, 1.0))
    assert other._dealt[7:14] == state._dealt[7:14]
    assert len(set(other._dealt)) == 17
    assert other.information_state_string(1) == state.information_state_string(1)


class _Draws:
    """A sampler that always draws ``value`` (``random()`` in [0, 1))."""

    def __init__(self, value):
        self.value = value

    def random(self):
        return self.value


def test_redealing_during_the_deal_can_pick_every_tile_left():
    """A draw near 1 picks the last tile of the pool, near 0 the first: no tile is out of reach
    (a pick scaled to one tile fewer never dealt the last one)."""
    state = load().new_initial_state()
    for tile in range(17):
        state.apply_action(tile)
    high = state.resample_from_infostate(1, _Draws(1 - 1e-12))._dealt
    low = state.resample_from_infostate(1, _Draws(0.0))._dealt
    others = list(range(7)) + list(range(14, 17))
    assert [high[k] for k in others] == [27, 26, 25, 24, 23, 22, 21, 20, 19, 18]
    assert [low[k] for k in others] == [0, 1, 2, 3, 4, 5, 6, 14, 15, 16]
    assert high[7:14] == low[7:14] == list(range(7, 14))


def _consistent_deals(state, player):
    """Every assignment of the unseen tiles to the other seats with the right counts and
    respecting the knocks (brute force)."""
    match = state._match
    others = [(player + k) & 3 for k in (1, 2, 3)]
    unseen = [t for t in range(NUM_TILES) if any((match.hands[s] >> t) & 1 for s in others)]
    deals = []
    for owners in itertools.product(others, repeat=len(unseen)):
        hands = {s: 0 for s in others}
        for tile, seat in zip(unseen, owners):
            hands[seat] |= 1 << tile
        if all(hands[s].bit_count() == match.hands[s].bit_count()
               and not hands[s] & excluded_tiles(match.voids[s]) for s in others):
            deals.append(tuple(hands[s] for s in others))
    return others, deals


def test_resampling_is_uniform_on_a_small_case():
    """A late position with a knock: every consistent deal comes up equally often (chi-square)."""
    scipy_stats = pytest.importorskip("scipy.stats", reason="scipy is needed for the chi-square test")
    game = load(rounds=1)
    rng = np.random.default_rng(11)

    def small(state):
        match = state._match
        player = state.current_player()
        hidden = sum(match.hands[s].bit_count() for s in range(4) if s != player)
        return hidden <= 5 and any(match.voids[s] for s in range(4) if s != player)

    for _ in range(200):
        state = random_state(game, rng, stop=small)
        if not state.is_terminal():
            break
    player = state.current_player()
    others, deals = _consistent_deals(state, player)
    assert 3 <= len(deals) <= 60, len(deals)
    index = {deal: i for i, deal in enumerate(deals)}
    counts = np.zeros(len(deals))
    samples = 100 * len(deals)
    for _ in range(samples):
        other = state.resample_from_infostate(player, rng)
        counts[index[tuple(other._match.hands[s] for s in others)]] += 1
    assert counts.min() > 0
    assert scipy_stats.chisquare(counts).pvalue > 1e-3


# -- what each seat is shown ----------------------------------------------------------------

def test_scores_are_seat_relative_while_a_later_round_is_dealt():
    """Between rounds the observation is built from the match, not by ``encode``: the scores
    are still ours, theirs and the target / 1000, as in every other observation."""
    state = first_state_where(
        load(), lambda s: s._match is not None and s._dealing and len(s._dealt) == 3
        and s._match.scores[0] != s._match.scores[1], at_chance=True, seeds=range(50))
    scores = state._match.scores
    piece = OFFSETS["scores"]
    for player in range(4):
        got = np.asarray(state.observation_tensor(player))[piece]
        ours, theirs = scores[player & 1], scores[(player & 1) ^ 1]
        np.testing.assert_allclose(got, [ours / 250, theirs / 250, 250 / 1000], rtol=1e-6)


def test_the_information_state_names_the_first_mover_relative_to_the_player():
    state = random_state(load(), np.random.default_rng(4), stop=lambda s: s.move_number() > 35)
    opener = state._match.history[-1].opener
    for player in range(4):
        tensor = np.asarray(state.information_state_tensor(player))
        first = tensor[OBS_SIZE + NUM_TILES:OBS_SIZE + NUM_TILES + 4]
        assert first.tolist() == [float(k == ((opener - player) & 3)) for k in range(4)]


def test_hands_are_shown_after_a_blocked_round():
    """R7: at a round's count the remaining hands are shown, after a block as after a domino."""
    state = first_state_where(load(), lambda s: s._match is not None and s._match.history
                              and s._match.history[-1].result == rules.BLOCKED, at_chance=True)
    assert f"{rules.BLOCKED} shown[" in state.information_state_string(0)


def test_one_round_from_a_view_returns_the_margin_over_the_rest_of_the_round():
    whole = first_state_where(load(), lambda s: 0 not in s._match.scores
                              and s._match.scores[0] != s._match.scores[1])
    seat = whole.current_player()
    view = decode(encode(whole._match, seat))
    hidden = tuple(whole._match.hands[(seat + k) & 3] for k in (1, 2, 3))
    state = state_from_view(load(rounds=1), view, hidden)
    start = list(state._match.scores)
    assert 0 not in start and start[0] != start[1]
    rng = np.random.default_rng(0)
    while not state.is_terminal():
        state.apply_action(int(rng.choice(state.legal_actions())))
    end = state._match.scores
    margin = (end[0] - start[0]) - (end[1] - start[1])
    assert state.returns() == [margin, -margin, margin, -margin]


def test_deal_nodes_name_the_seat_dealt_to():
    state = load().new_initial_state()
    for tile in range(8):
        text = state.action_to_string(pyspiel.PlayerId.CHANCE, tile)
        assert text.endswith(f"to seat {tile // 7}"), (tile, text)
        state.apply_action(tile)


# -- what resample_from_infostate and state_from_view accept --------------------------------

def _mid_round():
    return random_state(load(), np.random.default_rng(2), stop=lambda s: s.move_number() > 35)


def _mid_deal():
    state = load().new_initial_state()
    for tile in range(17):
        state.apply_action(tile)
    return state


@pytest.mark.parametrize("player, error, message", [
    (4, ValueError, r"must be in \[0, 3\], got 4"),
    (-1, ValueError, r"must be in \[0, 3\], got -1"),
    (True, TypeError, "must be an int, got bool True"),  # was resampled as player 1
    (np.True_, TypeError, "must be an int, got bool True"),
    (1.0, TypeError, "must be an int, got float 1.0"),
    (None, TypeError, "must be an int, got NoneType None")])
def test_resampling_for_a_player_that_is_not_a_seat_is_refused(player, error, message):
    """A seat 0-3; an int of another kind than a seat: a ``TypeError`` naming it (was a bool
    taken as a seat, the rest a Python error from deep inside, ``&`` on a float)."""
    with pytest.raises(error, match=f"^resample_from_infostate: player {message}$"):
        _mid_round().resample_from_infostate(player, np.random.default_rng(0))


@pytest.mark.parametrize("sampler", [None, 5, "uniform"])
def test_a_probability_sampler_that_cannot_draw_is_refused(sampler):
    with pytest.raises(TypeError, match="^resample_from_infostate: probability_sampler must be "
                                        f"a callable .*, got {type(sampler).__name__} "):
        _mid_round().resample_from_infostate(1, sampler)


@pytest.mark.parametrize("at", [_mid_round, _mid_deal])
@pytest.mark.parametrize("draw, error, named", [
    (1.5, ValueError, "float 1.5"), (1.0, ValueError, "float 1.0"),
    (-0.25, ValueError, "float -0.25"), (float("nan"), ValueError, "float nan"),
    ("0.5", TypeError, "str '0.5'"), (True, TypeError, "bool True")])
def test_draws_outside_0_1_are_refused_not_dealt(at, draw, error, named):
    """OpenSpiel's ``SampleAction`` asks ``0 <= z < 1`` of a draw too.  Was: 1.5 or NaN
    silently gave a seat all the unseen tiles, or NaN an ``int()`` error during a deal."""
    state = at()
    for sampler in (lambda: draw, _Draws(draw)):  # a callable, or an object with random()
        with pytest.raises(error, match=re.escape(
                f"the probability sampler must return a float in [0, 1), got {named}")):
            state.resample_from_infostate(1, sampler)


@pytest.mark.parametrize("make_sampler", [
    lambda: pyspiel.UniformProbabilitySampler(0.0, 1.0), lambda: np.random.RandomState(0).rand,
    lambda: np.random.default_rng(0), lambda: (lambda: np.float32(0.5))])
def test_openspiels_samplers_and_numpy_generators_are_accepted(make_sampler):
    for state in (_mid_round(), _mid_deal()):
        for player in (1, np.int64(1)):  # a NumPy int is a seat, as pybind11 takes it
            other = state.resample_from_infostate(player, make_sampler())
            assert other.information_state_string(1) == state.information_state_string(1)


def test_state_from_view_refuses_what_is_not_a_view_and_three_hands():
    whole = _mid_round()
    seat = whole.current_player()
    view = decode(encode(whole._match, seat))
    hidden = tuple(whole._match.hands[(seat + k) & 3] for k in (1, 2, 3))
    game = load(rounds=1)
    with pytest.raises(ValueError, match="one-round game"):  # was an AttributeError
        state_from_view(pyspiel.load_game("tic_tac_toe"), view, hidden)
    with pytest.raises(TypeError, match="view must be a SeatView, got ndarray"):
        state_from_view(game, encode(whole._match, seat), hidden)
    for bad in (hidden[:2], hidden + (0,), None, (1.5, 0, 0)):  # were IndexError, ...
        with pytest.raises(TypeError, match="^state_from_view: hidden must be 3 hands"):
            state_from_view(game, view, bad)
    searched = state_from_view(game, view, tuple(np.int64(hand) for hand in hidden))
    assert searched.legal_actions() == whole.legal_actions()


def _bits(mask):
    return [float((mask >> t) & 1) for t in range(NUM_TILES)]


def test_the_information_state_tensor_is_the_rounds_deal_and_every_move():
    """Against the round's own log: the hand as dealt (not as held now) and every move in
    order, knocks included (R6: a knock tells which numbers a seat lacks)."""
    def knocked_and_played(s):
        log = s._match.history[-1]
        return KNOCK in [m[1] for m in log.moves] and all(
            log.hands[p] != s._match.hands[p] for p in range(4))

    state = first_state_where(load(), knocked_and_played)
    log = state._match.history[-1]
    moves = np.zeros((MAX_ROUND_MOVES, NUM_ACTIONS))
    for i, (_, action, _, _) in enumerate(log.moves):
        moves[i, action] = 1.0
    for player in range(4):
        tensor = np.asarray(state.information_state_tensor(player))
        assert tensor[OBS_SIZE:OBS_SIZE + NUM_TILES].tolist() == _bits(log.hands[player])
        assert np.array_equal(tensor[OBS_SIZE + NUM_TILES + 4:].reshape(moves.shape), moves)


@pytest.mark.parametrize("later_round", [False, True])
def test_while_dealing_a_player_is_shown_its_own_tiles_only(later_round):
    def dealing(s):
        return s._dealing and len(s._dealt) == 17 and (s._match is not None) == later_round

    state = first_state_where(load(), dealing, at_chance=True)
    for player, own in ((1, state._dealt[7:14]), (2, state._dealt[14:17]), (3, [])):
        mine = sorted(own)
        hand = sum(1 << t for t in mine)
        info = np.asarray(state.information_state_tensor(player))
        observation = np.asarray(state.observation_tensor(player))
        assert info[OBS_SIZE:OBS_SIZE + NUM_TILES].tolist() == _bits(hand)
        assert observation[OFFSETS["hand"]].tolist() == _bits(hand)
        assert state.information_state_string(player).endswith(
            f"deal 17 mine[{' '.join(map(tile_name, mine))}]")


def test_hands_are_shown_after_a_domino_round():
    """R7: at the count after a domino the other hands are shown, as after a block."""
    state = first_state_where(load(), lambda s: s._match is not None and s._match.history
                              and s._match.history[-1].result == rules.DOMINO, at_chance=True)
    log = state._match.history[-1]
    shown = "/".join(" ".join(tile_name(t) for t in range(NUM_TILES) if (hand >> t) & 1)
                     for hand in log.remaining_hands())
    assert any(log.remaining_hands())
    for player in range(4):
        assert f"{rules.DOMINO} shown[{shown}]" in state.information_state_string(player)


def test_a_hand_sampler_of_another_view_is_refused_not_sampled():
    """``resample_hidden``'s optional ``HandSampler`` must be the one of this player's view:
    another seat's (its unseen tiles differ) dealt hands the player knows to be wrong; a
    non-sampler failed deep inside with an ``AttributeError``."""
    from sevenrocks_env.agents.belief import HandSampler
    from sevenrocks_env.agents.layout import view_of

    state = _mid_round()
    rng = np.random.default_rng(0)
    own = HandSampler(view_of(state._match, 1))
    other = state.resample_hidden(1, rng, own)  # the player's own sampler is used
    assert other.information_state_string(1) == state.information_state_string(1)
    for seat in (0, 2, 3):
        with pytest.raises(ValueError, match="sampler was built for another view than seat 1"):
            state.resample_hidden(1, rng, HandSampler(view_of(state._match, seat)))
    for bad in ("uniform", 3, object()):
        with pytest.raises(TypeError, match="sampler must be a HandSampler or None, got "):
            state.resample_hidden(1, rng, bad)
    with pytest.raises(TypeError, match="sampler must be a HandSampler"):
        _mid_deal().resample_hidden(1, rng, "uniform")  # refused while dealing too


def test_make_py_observer_refuses_what_is_not_an_observation_type():
    """``None`` or a ``pyspiel.IIGObservationType``; anything else was an ``AttributeError``."""
    game = load()
    for bad in ("public", {"public_info": True}, 1):
        with pytest.raises(TypeError, match="iig_obs_type must be a pyspiel.IIGObservationType "
                                            f"or None, got {type(bad).__name__}$"):
            game.make_py_observer(bad)
