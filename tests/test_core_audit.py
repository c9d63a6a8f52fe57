"""Gaps a mutation audit of checks, arguments, driver and agents.layout found in the suite."""
import argparse

import numpy as np
import pytest

from sevenrocks_env import arguments, rules
from sevenrocks_env.agents import RandomAgent
from sevenrocks_env.agents.layout import LookaheadLayout, best_action
from sevenrocks_env.checks import is_number_in, shown
from sevenrocks_env.dealing import MAX_SEED
from sevenrocks_env.driver import IllegalActionError, MatchDriver
from sevenrocks_env.tiles import NUM_TILES, tiles_of


def test_a_complex_number_is_not_a_number_in_a_range():
    """``is_number_in``: "a real number"; a complex one is refused, not a TypeError."""
    assert is_number_in(0.5 + 0j, 0, 1) is False
    assert is_number_in(np.complex128(0.5), 0, 1) is False


def test_shown_is_bounded_even_for_a_dict_of_long_strings():
    """``shown``: "never larger than ~100 chars", whatever the value."""
    value = {"k" * 50 + str(i): "v" * 50 for i in range(10)}
    text = shown(value)
    assert text.startswith("{'kkk") and len(text) <= 100


def test_the_seed_argument_takes_every_deal_seed_the_engine_takes():
    """``arguments.seed`` is bounded by ``dealing.MAX_SEED`` (2**63 - 1), not by a count."""
    assert arguments.seed(str(MAX_SEED)) == MAX_SEED == 2 ** 63 - 1
    assert arguments.seed(str(10 ** 12 + 1)) == 10 ** 12 + 1
    with pytest.raises(argparse.ArgumentTypeError, match=r"\[0, 9223372036854775807\]"):
        arguments.seed(str(MAX_SEED + 1))


@pytest.mark.parametrize("seed", range(6))
def test_the_opening_layout_offers_every_tile_at_slot_0_only(seed):
    """R3 and the docstrings: before the opening every tile matches, placed at slot 0 only;
    the lookahead's placements are exactly the rules' legal actions."""
    match = rules.Match.new(seed)
    layout = LookaheadLayout.of_match(match)
    assert layout.matching() == rules.ALL_TILES == (1 << NUM_TILES) - 1
    assert all(layout.placements_of(tile) == [4 * tile] for tile in range(NUM_TILES))
    hand = match.hands[match.turn]
    assert sorted(a for t in tiles_of(hand) for a in layout.placements_of(t)) \
        == rules.legal_actions(match)


def test_best_action_breaks_ties_towards_the_lower_action():
    assert best_action([3, 7, 9], [1.0, 1.0, 0.5]) == 3
    assert best_action([3, 7, 9], [0.5, 1.0, 1.0]) == 7
    assert best_action([3, 7, 9], [0.5, 0.7, 1.0]) == 9


def test_an_outside_numpy_action_is_recorded_as_a_plain_int():
    """``play`` takes an action from an array; the hook and the round's moves (saved as JSON)
    get a plain int."""
    match = rules.Match.new(0)
    seen = []
    driver = MatchDriver(match, [None] * 4, on_move=lambda m, s, a, p, f: seen.append(a))
    assert driver.advance() == match.turn
    action = np.int64(rules.legal_actions(match)[0])
    driver.play(action)
    assert seen == [int(action)] and type(seen[0]) is int
    assert type(match.history[-1].moves[-1][1]) is int


def test_play_on_a_round_that_waits_for_its_deal_says_so():
    hands, opener = rules.deal(5, 0)
    match = rules.Match.from_deal(hands, opener)
    driver = MatchDriver(match, [RandomAgent(seed=1) for _ in range(4)])
    driver.run()
    assert match.awaiting_deal and not match.over
    with pytest.raises(ValueError, match=r"waits for a deal\): no move to play"):
        driver.play(rules.KNOCK)


@pytest.mark.parametrize("answer", [float, bool], ids=["float", "bool"])
def test_an_agent_answer_equal_to_a_legal_action_but_not_an_int_is_illegal(answer):
    """The driver checks an agent's answer with ``rules.is_legal``: ``0.0`` or ``False`` equal
    the legal action 0 (tile 0 opening at slot 0) but are not actions."""
    match = next(m for m in map(rules.Match.new, range(100)) if m.hands[m.turn] & 1)
    assert 0 in rules.legal_actions(match)

    class Sly(RandomAgent):
        name = "sly"

        def act(self, observation, action_mask):
            return answer(0)

    with pytest.raises(IllegalActionError, match="'sly' at seat .* illegal action"):
        MatchDriver(match, [Sly()] * 4).run()
    assert match.placements == 0  # refused at the first answer, nothing played


@pytest.mark.parametrize("sign", ["-", "+", ""])
def test_an_int_past_the_digit_limit_is_named_with_its_sign_or_underscores(sign):
    """``int_in``: an int past int()'s 4300 digits is "an int of N digits", signed or with
    underscores too (int() reads both), not "must be an int"."""
    for digits in ("9" * 5000, "9_" * 5000 + "9"):
        with pytest.raises(argparse.ArgumentTypeError, match="got an int of 5001 digits"
                           if "_" in digits else "got an int of 5000 digits"):
            arguments.count(sign + digits)


def test_shown_never_calls_an_unknown_objects_repr():
    class Hostile:
        def __repr__(self):
            return "secret " * 3

    assert shown(Hostile()) == "<Hostile>"
    assert shown([Hostile()]) == "[<Hostile>]"
    # a class named like a builtin reaches reprlib's repr_int, which fails: still not its repr
    fake_int = type("int", (), {"__repr__": lambda self: "secret"})
    assert shown(fake_int()) == "<int>"


def test_shown_elides_long_and_deep_containers_element_by_element():
    assert shown(list(range(10))) == "[0, 1, 2, 3, ...]"
    assert shown([[[[1]]]]) == "[[[...]]]"


@pytest.mark.parametrize("count", [3, 5])
def test_a_driver_needs_exactly_four_seats(count):
    with pytest.raises(ValueError, match=f"4 seats' agents .* got {count}"):
        MatchDriver(rules.Match.new(0), [None] * count)


@pytest.mark.parametrize("kind, text", [
    (arguments.count, "x" * 10_000), (arguments.positive_real, "x" * 10_000),
    (arguments.non_negative_real, "-" + "0" * 10_000 + "1"),
    (arguments.seconds, "0" * 10_000 + "4000"),
    (arguments.real_at_most(10.0), "0" * 10_000 + "11"),
], ids=["int", "number", "negative", "seconds", "real_at_most"])
def test_a_long_bad_argument_is_quoted_cut_short(kind, text):
    """docs/security.md: every message quotes a bad value bounded, however long the text."""
    with pytest.raises(argparse.ArgumentTypeError) as error:
        kind(text)
    assert len(str(error.value)) < 120, len(str(error.value))
