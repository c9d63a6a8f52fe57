"""Gaps a mutation audit of checks, arguments, driver and agents.layout found in the suite (those
of checks and the driver: beside their tests, in test_checks.py and test_driver.py)."""
import argparse

import pytest

from sevenrocks_env import arguments, rules
from sevenrocks_env.agents.layout import LookaheadLayout, best_action
from sevenrocks_env.dealing import MAX_SEED
from sevenrocks_env.tiles import NUM_TILES, tiles_of


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


@pytest.mark.parametrize("sign", ["-", "+", ""])
def test_an_int_past_the_digit_limit_is_named_with_its_sign_or_underscores(sign):
    """``int_in``: an int past int()'s 4300 digits is "an int of N digits", signed or with
    underscores too (int() reads both), not "must be an int"."""
    for digits in ("9" * 5000, "9_" * 5000 + "9"):
        with pytest.raises(argparse.ArgumentTypeError, match="got an int of 5001 digits"
                           if "_" in digits else "got an int of 5000 digits"):
            arguments.count(sign + digits)


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
