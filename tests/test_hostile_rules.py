"""The rules engine's constructors (``Match.new``, ``Match.from_deal``, ``start_round``) refuse
what no match can be built from, with a ``TypeError``/``ValueError`` naming the argument: the
moves are never checked again (the hot path trusts the match), so a bad deal let in here hung
``legal_actions`` or produced matches whose game records do not load back (R1, R2, R8)."""

import numpy as np
import pytest

from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.dealing import deal
from sevenrocks_env.record import MAX_ROUNDS, MAX_TARGET, game_record, validate
from sevenrocks_env.rules import Match, apply_action, legal_actions
from sevenrocks_env.tiles import ALL_TILES

H = 10 ** 5000  # past Python's 4300-digit limit: an f-string of it raises Python's own error
NEGATIVE_DEAL = [-16781996, 269885960, 8728579, 6602912]  # sums to ALL_TILES, 7 bits each
HANDS, OPENER = deal(1, 0)


def short_id(value):
    """pytest's id of a parameter: ``str(H)`` raises, so huge ints are named by size."""
    return f"int_of_{value.bit_length()}_bits" if type(value) is int and value.bit_length() > 64 \
        else None


def refused(error, words, build):
    with pytest.raises(error, match=words) as info:
        build()
    assert len(str(info.value)) < 300
    return str(info.value)


def test_a_deal_with_a_negative_hand_is_refused_before_legal_actions_loops_forever():
    """The old check (sum and bit counts) passed these "hands"; ``hand & -hand`` of a negative
    hand never reaches 0, so ``legal_actions`` never returned."""
    assert sum(NEGATIVE_DEAL) == ALL_TILES and all(bin(h).count("1") == 7 for h in NEGATIVE_DEAL)
    refused(ValueError, r"seat 0's hand -16781996 is not a set of tiles", lambda: Match.from_deal(
        NEGATIVE_DEAL, 0, seed=1))
    waiting = Match.from_deal(HANDS, OPENER)  # no seed: start_round deals the next rounds
    refused(ValueError, "four disjoint 7-tile hands", lambda: waiting.start_round(NEGATIVE_DEAL, 0))


@pytest.mark.parametrize("hands, error, words", [
    (None, ValueError, "hands must be a list of four tile bitmasks"),
    ("0123", ValueError, "hands must be a list"),
    ([1.0] * 4, ValueError, "hands must be a list"),
    ([True, *HANDS[1:]], ValueError, "hands must be a list"),
    ([H, *HANDS[1:]], ValueError, "seat 0's hand <int of 16610 bits>"),
    (HANDS[:3], ValueError, "got 3 hands, not 4"),
    (HANDS + [0], ValueError, "got 5 hands, not 4"),
    ([HANDS[0] | 1 << 28, *HANDS[1:]], ValueError, "seat 0's hand .* is not a set of tiles"),
    ([HANDS[0] & HANDS[0] - 1, *HANDS[1:]], ValueError,
     r"seat 0 holds 6 tiles \(\d\|\d( \d\|\d){5}\), not 7"),
    ([HANDS[0], HANDS[0], *HANDS[2:]], ValueError, r"seats 0 and 1 both hold \d\|\d( \d\|\d){6};"),
])
def test_a_deal_that_is_not_four_disjoint_hands_of_seven_is_named(hands, error, words):
    """(A ValueError, as the deal check always raised: callers catch that.)"""
    refused(error, words, lambda: Match.from_deal(hands, 0))
    refused(error, words, lambda: Match.from_deal(HANDS, OPENER).start_round(hands, 0))


def test_numpy_deals_scores_and_flags_are_taken_as_before():
    """Arrays of hands or scores and NumPy's bool worked before the checks; they still do."""
    import numpy as np

    arrays = Match.from_deal(np.array(HANDS), np.int64(OPENER), scores=np.array([10, 20]),
                             keep_history=np.bool_(False))
    plain = Match.from_deal(HANDS, OPENER, scores=(10, 20), keep_history=False)
    assert arrays.to_state() == plain.to_state() and arrays.history is None
    assert Match.new(1, keep_history=0).history is None


@pytest.mark.parametrize("kwargs, error, words", [
    ({"target": 0}, ValueError, r"target must be in \[1, 5000\], got 0"),
    ({"target": -5}, ValueError, "target must be in"),
    ({"target": MAX_TARGET + 1}, ValueError, "target must be in"),
    ({"target": H}, ValueError, "target must be in .* got <int of 16610 bits>"),
    ({"target": 2.5}, TypeError, "target must be an int, got float 2.5"),
    ({"target": True}, TypeError, "target must be an int, got bool"),
    ({"target": None}, TypeError, "target must be an int"),
    ({"max_rounds": 0}, ValueError, r"max_rounds must be in \[1, 1000\], got 0"),
    ({"max_rounds": -1}, ValueError, "max_rounds must be in"),
    ({"max_rounds": MAX_ROUNDS + 1}, ValueError, "max_rounds must be in"),
    ({"max_rounds": "5"}, TypeError, "max_rounds must be an int"),
    ({"max_rounds": False}, TypeError, "max_rounds must be an int"),
    ({"keep_history": "no"}, TypeError, "keep_history must be a bool"),
    ({"keep_history": None}, TypeError, "keep_history must be a bool"),
])
def test_bad_settings_of_a_new_match_are_named(kwargs, error, words):
    refused(error, words, lambda: Match.new(1, **kwargs))
    refused(error, words, lambda: Match.from_deal(HANDS, OPENER, **kwargs))


@pytest.mark.parametrize("seed, error", [("7", TypeError), (None, TypeError), (-1, ValueError),
                                         (True, TypeError), (1.0, TypeError), (-H, ValueError)],
                         ids=short_id)
def test_a_new_match_needs_a_non_negative_int_seed(seed, error):
    """``seed=None`` raised "object of type 'NoneType' has no len()" and ``-1`` NumPy's error;
    ``"7"`` and ``True`` were taken (and the match could not be saved)."""
    refused(error, "seed must be a non-negative int", lambda: Match.new(seed))
    if seed is not None:  # from_deal needs no seed: without one it waits for start_round
        refused(error, "seed must be a non-negative int", lambda: Match.from_deal(
            HANDS, OPENER, seed=seed))
    assert legal_actions(Match.new(H))  # as the envs (checks.checked_seed): no upper bound


@pytest.mark.parametrize("opener, scores, error, words", [
    (H, (0, 0), ValueError, "the opener is <int of 16610 bits>, not a seat 0-3"),
    (0, (H, 0), ValueError, "scores must be two ints below the target 250"),
    (0, (-H, 0), ValueError, "scores must be two ints"),
    (0, None, ValueError, "scores must be two ints"),
    (0, 5, ValueError, "scores must be two ints"),
    (0, {0: 1, 1: 2}, ValueError, "scores must be two ints"),
], ids=short_id)
def test_a_huge_or_odd_opener_or_scores_is_named_in_short(opener, scores, error, words):
    refused(error, words, lambda: Match.from_deal(HANDS, opener, scores=scores))


def test_a_deal_s_scores_need_enough_rounds_before_it():
    """-200 was taken at round 0, where from_state and the env then refused the same match (a
    partnership loses at most 120 a round, R7); ``round_index`` builds a later round's deal."""
    refused(ValueError, r"^scores \[-200, 0\] need a round_index of at least 1 \(a partnership "
                        r"loses at most 120 a round, R7\), got 0$",
            lambda: Match.from_deal(HANDS, OPENER, scores=(-200, 0)))
    later = Match.from_deal(HANDS, OPENER, scores=(-200, 0), round_index=np.int64(1), seed=5)
    assert Match.from_state(later.to_state()).to_state() == later.to_state()
    assert type(later.round_index) is int and later.round_index == 1
    env = sevenrocks_v0.raw_env()
    env.reset(options={"match": later})
    assert env.match.scores == [-200, 0]
    for index, limit, words in (
            (-1, None, r"\[0, 1000000000\] \(the rounds played before this one\), got -1"),
            (3, 3, r"\[0, 2\] \(the rounds played before this one, below max_rounds\), got 3"),
            (True, None, "round_index must be an int")):
        refused(ValueError, words, lambda: Match.from_deal(HANDS, OPENER, max_rounds=limit, seed=5,
                                                           round_index=index))


def test_numpy_settings_are_taken_as_plain_ints_so_the_match_saves_and_loads_back():
    """A NumPy int is an int (``checks.is_int``); kept as one, the state did not load back."""
    match = Match.new(np.uint64(3), target=np.int64(60), max_rounds=np.int32(5))
    other = Match.from_deal([np.int64(h) for h in HANDS], np.int8(OPENER), target=np.int64(60),
                            scores=(np.int16(5), 0), seed=np.int64(3))
    for built in (match, other):
        state = built.to_state()
        assert all(type(state[name]) is int for name in ("seed", "target", "opener"))
        assert all(type(value) is int for value in state["hands"] + state["scores"])
        assert Match.from_state(state).to_state() == state


@pytest.mark.parametrize("target, max_rounds, past", [(1, 1, -1), (MAX_TARGET, MAX_ROUNDS, 1)])
def test_the_settings_are_bounded_by_the_game_record_s_bounds(target, max_rounds, past):
    """The bounds are the record's (``record.MAX_TARGET``, ``MAX_ROUNDS``): a match to 0 points
    or cut after 0 rounds played, but its record failed ``record.validate``.  Every match the
    constructors accept has a record that loads back; one step past a bound is refused."""
    for limit in (max_rounds, None):
        for match in (Match.new(5, target=target, max_rounds=limit),
                      Match.from_deal(HANDS, OPENER, target=target, max_rounds=limit, seed=5)):
            moves = 0
            while not match.over and moves < 400:
                apply_action(match, legal_actions(match)[0])
                moves += 1
            validate(game_record(match))
    refused(ValueError, "target must be in", lambda: Match.new(5, target=target + past))
    refused(ValueError, "max_rounds must be in", lambda: Match.new(5, max_rounds=max_rounds + past))


def _seedless_until(seed: int, stop):
    """A seedless match (no deals of its own) played at random until ``stop(match)``; a rules
    engine that never ends a round (no block, no win) fails here, not at pytest's timeout."""
    rng = np.random.default_rng(seed)
    match = Match.from_deal(*deal(seed, 0), target=150)
    for _ in range(20_000):  # a round has at most 97 moves; a match to 150 far fewer rounds
        if stop(match):
            break
        assert not match.over, "the match ended first: choose another seed"
        if match.awaiting_deal:
            hands, drawn = deal(seed, match.round_index)
            match.start_round(hands, drawn if match.finisher_opens is None else match.finisher_opens)
        else:
            apply_action(match, int(rng.choice(legal_actions(match))))
    else:
        raise AssertionError("20,000 moves and the stop never came: does a round ever end?")
    return match


def test_start_round_refuses_a_round_in_play_and_a_finished_match():
    """It replaced the round in play (or dealt a round after R8's end) without a word."""
    in_play = Match.from_deal(HANDS, OPENER)
    apply_action(in_play, legal_actions(in_play)[0])
    before = in_play.to_state()
    refused(ValueError, "^start_round: the round in play has not ended",
            lambda: in_play.start_round(*deal(1, 1)))
    seeded = Match.new(seed=1)  # deals its own rounds
    refused(ValueError, "^start_round: the round in play has not ended",
            lambda: seeded.start_round(*deal(1, 1)))
    assert in_play.to_state() == before
    over = _seedless_until(4, lambda m: m.over)
    refused(ValueError, "^start_round: the match is over$", lambda: over.start_round(*deal(4, 9)))


def test_start_round_makes_the_finisher_of_a_domino_open_the_next_round():
    """R2: after a domino its finisher opens; any other opener is refused, the match unchanged
    (records, the batched engine's lockstep check and OpenSpiel rely on it)."""
    match = _seedless_until(3, lambda m: m.awaiting_deal and m.finisher_opens is not None)
    finisher, before = match.finisher_opens, match.to_state()
    hands = deal(3, match.round_index)[0]
    # a search's world: a clone or a saved state, without the history log (it was accepted)
    for copy in (match, match.clone(), Match.from_state(before)):
        for other in {0, 1, 2, 3} - {finisher}:
            refused(ValueError, rf"^start_round: seat {finisher} dominoed the last round and "
                                rf"must open the next \(R2\), not seat {other}$",
                    lambda: copy.start_round(hands, other))
            assert copy.to_state() == before
    match.start_round(hands, finisher)
    assert match.turn == match.opener == finisher
    blocked = _seedless_until(6, lambda m: m.awaiting_deal and m.finisher_opens is None
                              and m.round_index > 0)
    blocked.start_round(deal(6, blocked.round_index)[0], 3)  # after a block any seat may open
    assert blocked.turn == 3


def test_a_loaded_match_cut_between_rounds_waits_for_no_deal():
    """A saved seedless match cut by its round limit while between rounds (turn -1) is over:
    it waits for no deal, offers no move, and ``start_round`` refuses to deal it another."""
    waiting = _seedless_until(4, lambda m: m.awaiting_deal)
    state = dict(waiting.to_state(), truncated=True, max_rounds=waiting.round_index)
    cut = Match.from_state(state)
    assert cut.over and cut.turn == -1 and not cut.awaiting_deal and legal_actions(cut) == []
    refused(ValueError, "^start_round: the match is over$",
            lambda: cut.start_round(*deal(4, cut.round_index)))
