"""The seat observation: layout, seat-relative pieces, and decode(encode(...)) round trips (the
`turn` piece all 0 once the match is over: it named the last mover)."""

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sevenrocks_env.observation import (OBS_SIZE, OFFSETS, PIECES, action_mask, checked_inputs,
                                        decode, encode, view)
from sevenrocks_env.rules import Match, apply_action, legal_actions
from sevenrocks_env.tiles import KNOCK, NUM_TILES, WITH_NUMBER
from positions import played_to_the_end, random_state, until_over


def test_pieces_tile_the_vector():
    assert sum(size for _, size in PIECES) == OBS_SIZE == 238
    assert OFFSETS["hand"].start == 0 and OFFSETS["opening"].stop == OBS_SIZE


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_decode_inverts_encode_for_every_seat(seed):
    match = Match.new(seed, max_rounds=3)
    rng = random.Random(seed)
    for _ in until_over(match):
        for seat in range(4):
            seat_view = decode(encode(match, seat))
            rel = [(seat + k) % 4 for k in range(4)]
            assert seat_view.hand == match.hands[seat]
            assert seat_view.played_by == tuple(match.played_by[s] for s in rel)
            assert seat_view.ends == tuple(match.ends)
            assert seat_view.end_double == tuple(match.end_double)
            assert seat_view.branch_started == tuple(match.branch_started)
            assert seat_view.spinner == match.spinner
            assert seat_view.tile_counts == tuple(match.hands[s].bit_count() for s in rel)
            assert seat_view.voids[1:] == tuple(match.voids[s] for s in rel[1:])
            assert seat_view.scores == (match.scores[seat % 2], match.scores[1 - seat % 2])
            assert seat_view.turn == (match.turn - seat) % 4
            assert seat_view.opening == (match.placements == 0)
            assert seat_view.end_sum == (match.end_sum() if match.placements else 0)
            unseen = view(encode(match, seat), "unseen") * 7
            expected = [(seat_view.unseen & WITH_NUMBER[n]).bit_count() for n in range(7)]
            assert np.allclose(unseen, expected)
        apply_action(match, rng.choice(legal_actions(match)))
    for seat in range(4):  # over (won or cut at max_rounds): no seat is on turn any more
        assert not view(encode(match, seat), "turn").any()
        assert decode(encode(match, seat)).turn == -1


def test_knock_marks_voids_for_the_other_seats():
    for seed in range(50):
        match = Match.new(seed, max_rounds=1)
        rng = random.Random(seed)
        for _ in until_over(match):
            seat = match.turn
            actions = legal_actions(match)
            if actions == [KNOCK]:
                open_numbers = {n for n in match.ends if n >= 0}
                apply_action(match, KNOCK)
                for k in (1, 2, 3):  # seat is relative seat 4-k of observer seat+k
                    observer = (seat + k) % 4
                    voids = view(encode(match, observer), "voids")
                    row = (4 - k) - 1
                    assert set(np.flatnonzero(voids[row])) == open_numbers
                return
            apply_action(match, rng.choice(actions))
    raise AssertionError("no knock in 50 rounds")


def test_hand_block_is_the_observers_tiles_only():
    match = Match.new(0)
    for seat in range(4):
        hand = view(encode(match, seat), "hand")
        assert hand.sum() == 7
        assert all(bool(hand[t]) == bool(match.hands[seat] >> t & 1) for t in range(NUM_TILES))


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_counted_ends_and_end_sum_pieces_follow_the_scoring_rules(seed):
    """``slot_counted``/``end_sum`` (cached per layout in encode) against scoring.end_sum (R5),
    and ``out=`` fills a buffer with the same vector as a fresh, writable float32 array."""
    match = Match.new(seed, max_rounds=2)
    rng = random.Random(seed)
    buffer = np.full(OBS_SIZE, 9.0, dtype=np.float32)
    for _ in until_over(match):
        seat = match.turn
        obs = encode(match, seat)
        assert obs.dtype == np.float32 and obs.flags.writeable
        assert encode(match, seat, buffer) is buffer and np.array_equal(buffer, obs)
        total = match.end_sum() if match.placements else 0
        assert np.isclose(view(obs, "slot_counted").sum() * 12, total)
        end_sum_piece = view(obs, "end_sum")
        assert np.isclose(end_sum_piece[0] * 36, total)
        assert np.flatnonzero(end_sum_piece[1:]).tolist() == [total % 5]
        apply_action(match, rng.choice(legal_actions(match)))


def test_an_unknown_piece_name_is_refused_with_the_names_of_the_pieces():
    import pytest

    with pytest.raises(KeyError, match="no observation piece 'void'; the pieces are .*voids"):
        view(np.zeros(OBS_SIZE, np.float32), "void")
    assert view(np.arange(float(OBS_SIZE)), "voids").shape == (3, 7)


def test_an_agent_given_the_env_s_dict_is_told_to_pass_the_vector():
    import pytest

    from sevenrocks_env.agents import make_agent
    from sevenrocks_env.sevenrocks_v0 import env as make_env

    env = make_env()
    env.reset(seed=0)
    obs = env.observe(env.agent_selection)
    with pytest.raises(ValueError, match=r"got the env's dict: pass obs\['observation'\]"):
        make_agent("greedy").act(obs, obs["action_mask"])


def test_no_seat_is_on_turn_in_a_won_match():
    match = played_to_the_end(Match.new(7, target=20), 7)
    assert match.winner is not None and match.turn >= 0  # the engine keeps the last mover
    for seat in range(4):
        assert not view(encode(match, seat), "turn").any() and decode(encode(match, seat)).turn == -1


def test_decode_recovers_every_target_and_negative_scores_exactly():
    """The scores piece is float32 (score / target, target / 1000): decoding must round, not
    truncate, or a target such as 251 and a score such as -251 come back one too low."""
    for target in (1, 7, 250, 251, 253, 502, 511, 5000):
        match = Match.new(0, target=target)
        for scores in ((-511, target - 1), (-251, -506), (0, -1)):
            match.scores = list(scores)
            for seat in range(4):
                seat_view = decode(encode(match, seat))
                assert seat_view.target == target
                assert seat_view.scores == (scores[seat % 2], scores[1 - seat % 2])


def test_checked_inputs_refuses_masks_and_observations_an_agent_would_misread():
    """A 0/1 mask with another value (-1 would count as legal), a mask with no legal action, and
    an observation finite as float64 but infinite as float32 are refused."""
    import pytest

    from sevenrocks_env.observation import checked_inputs

    match = Match.new(0)
    obs, mask = encode(match, match.turn), action_mask(match, match.turn)
    got_obs, got_mask = checked_inputs(obs.astype(np.float64), mask)
    assert got_obs.dtype == np.float32 and got_mask.dtype == bool
    assert got_mask.nonzero()[0].tolist() == legal_actions(match)
    for bad in (-1, 2):
        wrong = mask.copy()
        wrong[3] = bad
        with pytest.raises(ValueError, match="0/1 or booleans"):
            checked_inputs(obs, wrong)
    with pytest.raises(ValueError, match="no legal action"):
        checked_inputs(obs, np.zeros(113, bool))
    huge = obs.astype(np.float64)
    huge[0] = 1e300
    with pytest.raises(ValueError, match="NaN or infinite"), np.errstate(over="ignore"):
        checked_inputs(huge, mask)


def _positions(first_seed: int) -> list:
    """Positions of random play with a seat on turn, openings included (0 moves)."""
    return [m for m in (random_state(s, s % 40) for s in range(first_seed, first_seed + 240))
            if not m.over and m.turn >= 0]


def test_checked_inputs_refuses_the_mask_and_observation_of_two_seats():
    """An agent given one seat's mask with another seat's observation (``env.observe(other)``)
    failed deep inside the policy search (a torch IndexError) or played a tile its seat does not
    hold: the observation must be of the seat on turn, and the mask only legal moves of it."""
    import pytest

    for match in _positions(0):
        mask = action_mask(match, match.turn)
        got = checked_inputs(encode(match, match.turn), mask)[1]
        assert np.flatnonzero(got).tolist() == legal_actions(match)
        for seat in set(range(4)) - {match.turn}:
            with pytest.raises(ValueError, match="not of the seat on turn"):
                checked_inputs(encode(match, seat), mask)


def test_checked_inputs_refuses_a_mask_with_a_move_the_position_does_not_allow():
    """A tile the seat does not hold, a closed slot, a tile not showing the slot's number, knock
    while a tile can be placed, a slot other than 0 for the opening tile: each refused, naming
    the marked moves and the legal ones; a subset of the legal moves passes."""
    import pytest

    from sevenrocks_env.tiles import TILE_HIGH, TILE_LOW

    checked = 0
    for match in _positions(1000):
        obs, legal = encode(match, match.turn), legal_actions(match)
        hand = match.hands[match.turn]
        subset = np.zeros(113, bool)
        subset[legal[-1]] = True
        assert np.flatnonzero(checked_inputs(obs, subset)[1]).tolist() == [legal[-1]]
        for action in range(113):
            if action in legal or (action == KNOCK) != (legal == [KNOCK]):
                continue  # the knock-beside-placements check speaks first
            tile, slot = divmod(action, 4)
            fits = action == KNOCK or (hand >> tile & 1 and (
                slot == 0 if match.placements == 0 else
                match.ends[slot] in (TILE_LOW[tile], TILE_HIGH[tile])))
            assert not fits, (action, legal)
            mask = np.zeros(113, bool)
            mask[[action, *legal] if action != KNOCK and legal != [KNOCK] else [action]] = True
            with pytest.raises(ValueError, match=rf"marks \[{action}\] legal, but the "
                                                 "observation's seat can play only"):
                checked_inputs(obs, mask)
            checked += 1
    assert checked > 10_000


def test_checked_inputs_refuses_knock_marked_legal_beside_a_placement():
    """No position has knock (112) legal beside a placement (R6: a seat knocks exactly when it
    cannot place): such a mask is refused as not a mask of this game, whatever the position,
    before the observation is read (another seat's observation included)."""
    seen = set()
    for match in _positions(2000):
        legal = legal_actions(match)
        placement = legal[0] if legal != [KNOCK] else 0
        mask = np.zeros(113, bool)
        mask[[placement, KNOCK]] = True
        for seat in (match.turn, (match.turn + 1) % 4):
            with pytest.raises(ValueError, match=r"not a mask of this game: it marks knock \(112\) "
                                                 r"legal beside 1 placement\(s\)"):
                checked_inputs(encode(match, seat), mask)
        seen.add(legal == [KNOCK])
    assert seen == {True, False}


def test_tile_sets_encodes_hands_as_the_hand_piece_does():
    """``tile_sets`` (the oracle critic's hidden hands) is the ``hand`` piece's encoding: tile
    ``t`` at position ``t`` of each 28-entry block, low half then high half, for any mask."""
    from sevenrocks_env.observation import tile_sets

    match = Match.new(7)
    got = tile_sets(match.hands).reshape(4, NUM_TILES)
    for seat in range(4):
        assert np.array_equal(got[seat], view(encode(match, seat), "hand"))
    masks = (1, 1 << 13, 1 << 14, 1 << 27, (1 << NUM_TILES) - 1, 0)
    want = np.array([[(m >> t) & 1 for t in range(NUM_TILES)] for m in masks], np.float32)
    out = np.full(len(masks) * NUM_TILES, 9.0, np.float32)
    assert tile_sets(masks, out) is out
    assert np.array_equal(out.reshape(len(masks), NUM_TILES), want)
