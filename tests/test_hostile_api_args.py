"""Arguments of the public Python API that were taken as something else (found by calling each
public function with each argument replaced by None, bools, floats, NaN, -1, huge ints, strings,
lists, NumPy and torch scalars): a seat of -1 encoded seat 3's view, a seat of ``None`` gave an
all-zeros mask, ``deterministic=None`` loaded a sampling policy and ``"False"`` a deterministic
one, ``allow_pickles="False"`` allowed pickles, ``time_limit=True`` searched for 1 s, ``deal``
took ``"1"`` and ``[1]`` as seed 1, and a Bradley-Terry fit with ``iterations=0`` or a negative
prior returned ratings of 0.  Each is now a ``TypeError``/``ValueError`` naming the argument."""

import math

import numpy as np
import pytest

from sevenrocks_env import observation, ratings
from sevenrocks_env.agents import make_agent
from sevenrocks_env.agents.search import SearchAgent
from sevenrocks_env.dealing import deal
from sevenrocks_env.rules import Match

NOT_A_SEAT = [None, True, False, 2.5, math.nan, -1, 4, 2 ** 70, "1", [1], np.float32(1.0)]


def refused(words, call):
    with pytest.raises((TypeError, ValueError), match=words) as info:
        call()
    assert len(str(info.value)) < 300
    return str(info.value)


@pytest.mark.parametrize("seat", NOT_A_SEAT, ids=repr)
def test_encode_and_action_mask_name_a_seat_that_is_no_seat(seat):
    match = Match.new(seed=0)
    refused("seat must be", lambda: observation.encode(match, seat))
    refused("seat must be", lambda: observation.action_mask(match, seat))


def test_a_numpy_int_seat_is_a_seat():
    match = Match.new(seed=0)
    seat = np.int64(match.turn)
    assert np.array_equal(observation.encode(match, seat), observation.encode(match, match.turn))
    assert observation.action_mask(match, seat).sum() > 0


@pytest.mark.parametrize("seed, round_index", [
    ("1", 0), (True, 0), ([1], 0), ([], 0), ({}, 5), (None, 0), (2.5, 0), (-1, 0),
    (0, True), (0, "1"), (0, -1), (0, 1.0)], ids=repr)
def test_deal_names_a_seed_or_round_that_is_no_int(seed, round_index):
    refused("seed must be|round_index must be", lambda: deal(seed, round_index))


def test_deal_takes_numpy_ints_and_huge_seeds():
    assert deal(np.int64(3), np.int64(2)) == deal(3, 2)
    deal(2 ** 70, 0)


@pytest.mark.parametrize("deterministic", [None, "False", "", 0, 1, [], np.array([1, 2])],
                         ids=repr)
def test_load_policy_takes_a_bool_for_deterministic(deterministic):
    pytest.importorskip("torch")
    from sevenrocks_env.policy import load_policy
    refused("deterministic must be True or False", lambda: load_policy(
        "shipped", deterministic=deterministic))


def test_load_policy_takes_a_numpy_bool():
    pytest.importorskip("torch")
    from sevenrocks_env.policy import load_policy
    assert load_policy("shipped", deterministic=np.bool_(False)).deterministic is False


@pytest.mark.parametrize("allow_pickles", [None, "False", "", 0, 1, [1]], ids=repr)
def test_make_agent_takes_a_bool_for_allow_pickles(allow_pickles):
    refused("allow_pickles must be True or False", lambda: make_agent(
        "random", allow_pickles=allow_pickles))


@pytest.mark.parametrize("options", [
    {"time_limit": True}, {"time_limit": "1"}, {"time_limit": [1]}, {"time_limit": math.nan},
    {"win_bonus": True}, {"win_bonus": "5"}], ids=repr)
def test_search_names_a_time_limit_or_bonus_that_is_no_number(options):
    refused(f"search: {next(iter(options))} must be", lambda: SearchAgent(**options))


@pytest.mark.parametrize("options, words", [
    ({"iterations": 0}, "iterations must be"), ({"iterations": -5}, "iterations must be"),
    ({"iterations": True}, "iterations must be"), ({"iterations": 2.5}, "iterations must be"),
    ({"prior_pairs": -1}, "prior_pairs must be"), ({"prior_pairs": 0}, "prior_pairs must be"),
    ({"prior_pairs": math.nan}, "prior_pairs must be"),
    ({"prior_pairs": math.inf}, "prior_pairs must be"),
    ({"prior_pairs": True}, "prior_pairs must be")], ids=repr)
def test_bradley_terry_names_a_prior_or_iteration_count_it_cannot_fit_with(options, words):
    refused(words, lambda: ratings.fit_bradley_terry(["a", "b"], {(0, 1): (9.0, 10)}, **options))


@pytest.mark.parametrize("results", [None, [((0, 1), (1.0, 2))], "x"], ids=repr)
def test_bradley_terry_names_results_that_are_no_dict(results):
    refused("results must be a dict", lambda: ratings.fit_bradley_terry(["a", "b"], results))


@pytest.mark.parametrize("args, words", [
    ((0.5, math.nan), "n must be"), ((0.5, 10.0), "n must be"), ((0.5, -1), "n must be"),
    ((0.5, True), "n must be"), ((0.5, "10"), "n must be"), ((0.5, 10**400), "n must be"),
    ((0.5, 1 << 63), "n must be"), ((1.5, 10), "p must be"),
    ((-0.1, 10), "p must be"), ((math.nan, 10), "p must be"), (("0.5", 10), "p must be"),
    ((0.5, 10, -1), "z must be"), ((0.5, 10, 0), "z must be"), ((0.5, 10, math.inf), "z must be"),
    ((0.5, 10, math.nan), "z must be")], ids=repr)
def test_wilson_interval_names_a_proportion_count_or_z_it_cannot_use(args, words):
    """NaN trials or ``z = -1`` gave (0.5, 0.5), an interval of no width; ``p = 1.5`` a math
    domain error."""
    refused(f"wilson_interval: {words}", lambda: ratings.wilson_interval(*args))


def test_wilson_interval_of_a_numpy_count_is_that_of_the_same_python_int():
    """``4 * n * n`` overflowed a NumPy integer ``n`` (``np.int32`` past 23,170: a shifted
    interval; ``np.int64(2**31)``: (0, 1)), silently but for a RuntimeWarning."""
    for n in (np.int32(50_000), np.int32(2**31 - 1), np.int64(2**31), np.int64((1 << 63) - 1)):
        assert ratings.wilson_interval(0.3, n) == ratings.wilson_interval(0.3, int(n)), n


def test_wilson_interval_still_takes_no_trials_ints_and_numpy_values():
    assert ratings.wilson_interval(0.5, 0) == (0.0, 1.0)
    for largest in ((1 << 63) - 1, np.int64((1 << 63) - 1)):  # the largest count: a point
        low, high = ratings.wilson_interval(0.5, largest)
        assert low == pytest.approx(0.5) and high == pytest.approx(0.5)
    assert ratings.wilson_interval(1, 10) == ratings.wilson_interval(1.0, 10)
    assert ratings.wilson_interval(np.float64(0.3), np.int64(20), 1.0) \
        == ratings.wilson_interval(0.3, 20, 1.0)


@pytest.mark.parametrize("df", [math.nan, 2, 3.5, True, "5", None], ids=repr)
def test_t_quantile_names_degrees_of_freedom_that_are_no_int_of_3_or_more(df):
    refused("df must be", lambda: ratings.t_quantile_975(df))


NOT_A_MATCH = [None, 0, "match", [], {}]


def _match_takers():
    from sevenrocks_env import record, rules
    from sevenrocks_env.render import render_text
    from sevenrocks_env.render.picture import draw_picture, render_picture
    return {"legal_actions": rules.legal_actions,
            "encode": lambda m: observation.encode(m, 0),
            "action_mask": lambda m: observation.action_mask(m, 0),
            "render_text": render_text, "draw_picture": draw_picture,
            "render_picture": render_picture, "game_record": record.game_record}


@pytest.mark.parametrize("taker", ["legal_actions", "encode", "action_mask", "render_text",
                                   "draw_picture", "render_picture", "game_record"])
@pytest.mark.parametrize("match", NOT_A_MATCH, ids=repr)
def test_functions_of_a_match_name_one_that_is_no_match(taker, match):
    """``None`` was ``AttributeError: 'NoneType' object has no attribute 'turn'``."""
    with pytest.raises(TypeError, match=f"match must be a rules.Match, got {type(match).__name__}"):
        _match_takers()[taker](match)


@pytest.mark.parametrize("mask", [None, [[True, False]], np.ones((2, 3), bool), "mask"], ids=repr)
def test_random_actions_names_a_mask_that_is_no_tensor(mask):
    pytest.importorskip("torch")
    from sevenrocks_env.batched import random_actions
    with pytest.raises(TypeError, match="mask must be a 2-d bool tensor"):
        random_actions(mask)


@pytest.mark.parametrize("log", [123, b"l.jsonl", ["l.jsonl"], True], ids=repr)
def test_evaluate_names_a_log_that_is_no_path(log):
    """``log=123`` was pathlib's ``expected str, bytes or os.PathLike object, not int``."""
    from sevenrocks_env import arena
    with pytest.raises(TypeError, match=f"log must be a path \\(a str or os.PathLike\\), got "
                                        f"{type(log).__name__}"):
        arena.evaluate("greedy", "random", pairs=1, log=log)
