"""Match.to_state / Match.from_state: a lossless round trip, and a clear error for every bad field
(types, bounds, scores, hands, turn, ``from_deal``'s opener).  Layouts no play reaches (ends,
doubles, branches, voids, end sums): test_match_state_layouts.py."""

import pytest
from hypothesis import given, settings, strategies as st

from sevenrocks_env.observation import encode
from sevenrocks_env.record import MAX_TARGET
from sevenrocks_env.rules import Match, apply_action, legal_actions

from positions import won_at_exactly_the_target


def play(match, rng_values):
    for value in rng_values:
        if match.over or match.awaiting_deal:
            break
        legal = legal_actions(match)
        apply_action(match, legal[value % len(legal)])
    return match


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.lists(st.integers(0, 100), max_size=120))
def test_round_trip_keeps_play_identical(seed, moves):
    match = play(Match.new(seed, keep_history=False), moves)
    copy = Match.from_state(match.to_state())
    assert copy.to_state() == match.to_state()
    if not match.over:
        for seat in range(4):
            assert encode(copy, seat).tobytes() == encode(match, seat).tobytes()
        # both continue identically (same seed -> same later deals)
        play(match, moves)
        play(copy, moves)
        assert copy.to_state() == match.to_state()


def good_state():
    return play(Match.new(7, keep_history=False), [3, 1, 4, 1, 5, 9, 2, 6]).to_state()


@pytest.mark.parametrize("field, value", [
    ("hands", [1, 2, 3]), ("hands", "x"), ("ends", [0, 0, 9, -1]), ("end_double", [1, 0, 0, 0]),
    ("scores", [10 ** 30, 0]), ("turn", 4), ("spinner", True), ("placements", 27),
    ("target", 0), ("voids", [0, 0, 0, 128]), ("played", 0), ("winner", 2),
    ("played_by", [1, 1, 0, 0]), ("last_end_sum", 37), ("seed", -1), ("truncated", 0),
    ("seed", 2 ** 64 + 1),
])
def test_bad_field_is_named(field, value):
    state = good_state()
    state[field] = value
    with pytest.raises(ValueError, match=f"match state: {field}"):
        Match.from_state(state)


def test_the_largest_end_sum_36_round_trips():
    """R5: the largest end sum is 36 (6|6 west, 6 east, 5|5 north, 4|4 south), reached by play;
    a saved state at it loads back."""
    from sevenrocks_env.tiles import EAST, NORTH, NUM_TILES, SOUTH, WEST, tile_index
    plan = [(0, (1, 1), WEST), (1, (1, 6), WEST), (2, (1, 2), EAST), (3, (6, 6), WEST),
            (0, (1, 5), NORTH), (1, (1, 4), SOUTH), (2, (2, 6), EAST), (3, (5, 5), NORTH),
            (0, (4, 4), SOUTH)]
    hands = [0, 0, 0, 0]
    for seat, (low, high), _ in plan:
        hands[seat] |= 1 << tile_index(low, high)
    rest = [t for t in range(NUM_TILES) if not (hands[0] | hands[1] | hands[2] | hands[3]) >> t & 1]
    for seat in range(4):
        while bin(hands[seat]).count("1") < 7:
            hands[seat] |= 1 << rest.pop()
    match = Match.from_deal(hands, opener=0, target=500)
    for seat, (low, high), slot in plan:
        assert match.turn == seat
        tile = tile_index(low, high)
        apply_action(match, next(a for a in legal_actions(match)
                                 if a >> 2 == tile and (a & 3 == slot or match.placements == 0)))
    assert match.last_end_sum == 36
    assert Match.from_state(match.to_state()).to_state() == match.to_state()


def test_missing_and_unknown_fields():
    state = good_state()
    del state["turn"]
    state["history"] = []
    with pytest.raises(ValueError, match=r"missing fields \['turn'\], unknown fields \['history'\]"):
        Match.from_state(state)
    with pytest.raises(ValueError, match="must be a dict"):
        Match.from_state([1, 2])


def test_scores_obey_r8_a_target_reached_is_a_win():
    state = good_state()
    assert Match.from_state(state).winner is None
    for scores, winner in (([state["target"], 0], None), ([0, 0], 1)):
        with pytest.raises(ValueError, match="match state: scores .*R8"):
            Match.from_state(dict(state, scores=scores, winner=winner))


def test_scores_obey_r7_a_partnership_loses_at_most_120_a_round():
    """Below that no match can go, and the observation space (its low bound is -120 a round
    of ``max_rounds``) would not hold the observation."""
    from sevenrocks_env.scoring import MAX_TEAM_DEDUCTION
    from sevenrocks_env.single_agent import SingleAgentEnv

    state = dict(good_state(), max_rounds=5)
    for rounds in (0, 4):
        lowest = -MAX_TEAM_DEDUCTION * (rounds + 1)
        with pytest.raises(ValueError, match="match state: scores must be at least .*R7"):
            Match.from_state(dict(state, round_index=rounds, scores=[lowest - 1, 0]))
        match = Match.from_state(dict(state, round_index=rounds, scores=[0, lowest]))
        env = SingleAgentEnv(opponents="random", max_rounds=5, target=state["target"])
        observation, _ = env.reset(options={"match": match})
        assert env.observation_space.contains(observation)
    with pytest.raises(ValueError, match="match state: round_index must be below max_rounds"):
        Match.from_state(dict(state, round_index=5))


def _deep(depth):
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("field, change", [
    ("played", float), ("played", lambda v: __import__("numpy").int64(v)), ("winner", lambda _: 0.0),
    ("winner", lambda _: False), ("hands", lambda _: [10 ** 5000] * 4),
    ("scores", lambda _: _deep(100_000)),
    ("scores", lambda v: [__import__("numpy").int64(x) for x in v]),  # not saved as JSON
])
def test_equal_values_of_the_wrong_type_and_huge_values_are_named_in_short(field, change):
    """0.0 == 0 and deep or huge values: refused by type, the message bounded (a raw RecursionError,
    or a float bitmask that broke the first move, before)."""
    state = good_state()
    state[field] = change(state[field])
    with pytest.raises(ValueError, match=f"match state: {field}") as info:
        Match.from_state(state)
    assert len(str(info.value)) < 300


def test_a_match_won_at_exactly_the_target_round_trips():
    """R8: reaching the target exactly wins, so a winner at exactly 250 is a valid state."""
    match = won_at_exactly_the_target()
    assert Match.from_state(match.to_state()).to_state() == match.to_state()


def test_a_turn_below_minus_one_is_refused():
    state = Match.new(7, keep_history=False).to_state()
    state["turn"] = -2
    with pytest.raises(ValueError, match="match state: turn"):
        Match.from_state(state)


def test_a_hand_missing_a_tile_is_named_as_the_hands():
    """R1: seven tiles per seat, held or played; the first bad field named is ``hands``."""
    state = Match.new(7, keep_history=False).to_state()
    state["hands"][0] &= state["hands"][0] - 1  # one tile gone from nowhere
    with pytest.raises(ValueError, match="match state: hands must be 7 tiles per seat"):
        Match.from_state(state)


def test_no_move_is_legal_while_a_round_waits_for_its_deal_or_after_the_match():
    """A seedless match whose round ended has ``turn = -1``: ``hands[-1]`` is seat 3's leftover
    hand, which ``is_legal``/``legal_actions`` called playable (R7: nothing is played until the
    next deal); after a win nothing is legal either."""
    from sevenrocks_env.dealing import deal
    from sevenrocks_env.rules import is_legal
    from sevenrocks_env.tiles import KNOCK

    for seed in range(200):
        match = Match.from_deal(*deal(seed, 0), target=250)
        while not match.awaiting_deal:
            apply_action(match, legal_actions(match)[0])
        if match.hands[3]:  # seat 3 kept tiles: the old answer listed them
            break
    assert match.hands[3] and match.turn == -1
    assert legal_actions(match) == []
    assert not any(is_legal(match, action) for action in range(KNOCK + 1))
    won = won_at_exactly_the_target()
    assert won.over and legal_actions(won) == []
    assert not any(is_legal(won, action) for action in range(KNOCK + 1))


@pytest.mark.parametrize("opener, scores, words", [
    (4, (0, 0), "the opener is 4, not a seat 0-3"), (-1, (0, 0), "the opener is -1, not a seat"),
    (True, (0, 0), "the opener is True, not a seat"), (0, (250, 0), "below the target 250"),
    (0, (0, 1.5), "two ints"), (0, (0,), "two ints"), (0, (0, 0, 0), "scores must be two ints"),
    (0, (27, 3), "multiples of 5"), (0, (245, -1), "multiples of 5 .*R5.*R7"),
])
def test_from_deal_refuses_an_opener_or_scores_the_rules_cannot_have(opener, scores, words):
    from sevenrocks_env.dealing import deal
    with pytest.raises(ValueError, match=words):
        Match.from_deal(deal(0, 0)[0], opener, target=250, scores=scores)


def test_scores_are_multiples_of_5_r5_r7():
    """Placements score multiples of 5 and deductions are rounded to them: a state (from a
    resume checkpoint, say) with 27-3, or 249 before any tile, is no match (it was loaded)."""
    state = good_state()
    for scores in ([27, -3], [249, 0], [0, -121 + 120]):
        with pytest.raises(ValueError, match=r"match state: scores must be multiples of 5 "
                                             r"\(placements score them, R5; deductions"):
            Match.from_state(dict(state, scores=scores))
    assert Match.from_state(dict(state, scores=[25, -5])).scores == [25, -5]


def test_a_state_has_the_bounds_of_a_new_match():
    """``from_state`` took a target up to 10**9 while ``Match.new`` stops at a record's 5000: a
    state no constructor could make loaded, and a record of it would fail ``validate``."""
    from sevenrocks_env.record import MAX_ROUNDS

    largest = Match.new(3, target=MAX_TARGET, max_rounds=MAX_ROUNDS)
    assert Match.from_state(largest.to_state()).to_state() == largest.to_state()
    for field, value in (("target", MAX_TARGET + 1), ("max_rounds", MAX_ROUNDS + 1)):
        with pytest.raises(ValueError, match=f"{field} must be") as constructor:
            Match.new(3, **{field: value})
        with pytest.raises(ValueError, match=f"match state: {field} must be"):
            Match.from_state(dict(largest.to_state(), **{field: value}))
        assert str(value) in str(constructor.value)


def _a_state_where(holds) -> dict:
    """The first state of round 0, by random play seed after seed, with a tile down and the
    round going on, where ``holds(match)``."""
    import random
    for seed in range(300):
        match, rng = Match.new(seed, keep_history=False), random.Random(seed)
        while match.round_index == 0 and not match.over:
            if match.placements and holds(match):
                return match.to_state()
            apply_action(match, rng.choice(legal_actions(match)))
    raise AssertionError("no such state in 300 random rounds")


def test_a_state_is_a_copy_of_the_match():
    """Search and checkpoints edit ``to_state()``'s dict; the match must not change with it."""
    import copy
    match = play(Match.new(7, keep_history=False), [3, 1, 4, 1, 5, 9, 2, 6])
    before = copy.deepcopy(match.to_state())
    state = match.to_state()
    for value in state.values():
        if isinstance(value, list):
            value[:] = [7] * len(value)
    assert match.to_state() == before


def test_a_refused_list_field_says_what_it_is_made_of():
    """NumPy integers print as ints and a tuple as a tuple: "hands must be four bitmasks, got
    [8703..., ...]" gave no hint of what was wrong with them."""
    import numpy as np

    from sevenrocks_env.match_state import check_match_state

    match = Match.new(1)
    match.hands = [np.int64(hand) for hand in match.hands]
    with pytest.raises(ValueError, match=r"hands must be four bitmasks, got \[.*\] "
                                         r"\(a list of int64\)$"):
        check_match_state(match)
    match = Match.new(1)
    match.scores = (10, 5)
    with pytest.raises(ValueError, match=r"^match state: scores must be two ints, got \(10, 5\) "
                                         r"\(a tuple of int\)$"):
        check_match_state(match)
    match.scores = [10, "5"]
    with pytest.raises(ValueError, match=r"\(a list of int, str\)$"):
        check_match_state(match)
    match.scores = [10, 10 ** 12]  # plain ints: nothing to add
    with pytest.raises(ValueError, match=r"got \[10, 1000000000000\]$"):
        check_match_state(match)
