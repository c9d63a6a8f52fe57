"""The arena's statistics (``sevenrocks_env/ratings.py``): Wilson intervals over pairs, t
intervals of a mean, and Bradley-Terry ratings on the Elo scale -- their standard errors, groups
of agents that reach each other by wins, agents rated by the prior alone, and Newton's method
converging or saying it did not (the arena itself: ``test_arena.py``)."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sevenrocks_env.arena_report import centre_text, rating_text
from sevenrocks_env.ratings import (ELO, _components, bradley_terry, fit_bradley_terry,
                                    mean_interval, t_quantile_975, wilson_interval)


def test_wilson_interval_known_cases():
    lo, hi = wilson_interval(0.5, 100)  # textbook: 50/100 -> [0.4038, 0.5962]
    assert lo == pytest.approx(0.40383, abs=1e-4) and hi == pytest.approx(0.59617, abs=1e-4)
    lo, hi = wilson_interval(0.0, 10)   # 0/10 -> [0, 0.2775]
    assert lo == 0.0 and hi == pytest.approx(0.27753, abs=1e-4)
    lo, hi = wilson_interval(0.8, 25)   # 20/25 -> [0.6087, 0.9114]
    assert lo == pytest.approx(0.6087, abs=1e-3) and hi == pytest.approx(0.9114, abs=1e-3)
    assert wilson_interval(0.5, 0) == (0.0, 1.0)  # no trials: nothing is known


def test_bradley_terry_stderr_is_the_inverse_fisher_information_in_elo_points():
    """Two agents, 3 even pairs plus the prior's drawn pair: p = 1/2, the information of the
    rating difference is 4 * 1/4 = 1, so each centred rating has variance 1/4: stderr ELO / 2."""
    out = bradley_terry(["a", "b"], {(0, 1): (1.5, 3)})
    assert [r["rating"] for r in out] == pytest.approx([0.0, 0.0], abs=1e-9)
    assert [r["stderr"] for r in out] == pytest.approx([ELO / 2, ELO / 2])


def test_ratings_are_on_the_elo_scale():
    """Two agents, A scoring 60 of 100 pairs, plus the prior's drawn pair: p = 60.5 / 101, and
    on the Elo scale (odds of 10 to 1 are 400 points) the gap is 400 log10(p / (1 - p))."""
    out = bradley_terry(["a", "b"], {(0, 1): (60.0, 100)})
    gap = out[0]["rating"] - out[1]["rating"]
    assert gap == pytest.approx(69.72, abs=0.01)  # = 400 * log10(60.5 / 40.5)
    assert out[0]["rating"] == pytest.approx(-out[1]["rating"])  # centred
    # the gap's variance is 1 / (101 p (1 - p)) in logits; each centred rating has a quarter
    assert out[0]["stderr"] == pytest.approx(400 / np.log(10) / 2 / np.sqrt(60.5 * 40.5 / 101))


@pytest.mark.parametrize("results", [
    {(0, 1): (300.0, 100)}, {(0, 1): (float("nan"), 100)}, {(0, 1): (-1, 100)},
    {(0, 1): (1, 0)}, {(0, 1): (1, 2.0)}, {(0, 0): (1, 2)}, {(0, 2): (1, 2)},
    {(0, 1): (True, 2)}, {(0, 1): (1, 2, 3)},
])
def test_bradley_terry_refuses_results_no_arena_gives(results):
    """A saved win rate of 3 fitted a rating of 1.6e15 with no error; NaN was a LinAlgError."""
    with pytest.raises(ValueError, match="Bradley-Terry: result"):
        bradley_terry(["a", "b"], results)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 8).flatmap(lambda k: st.tuples(st.just(k), st.sets(st.tuples(
    st.integers(0, k - 1), st.integers(0, k - 1))))))
def test_groups_are_the_agents_that_reach_each_other_by_wins(graph):
    """``_components``: two agents share a group exactly when each reaches the other through
    wins (checked by a search from every agent), groups numbered 0, 1, ... by first agent."""
    k, edges = graph
    beat = {i: {j for a, j in edges if a == i and j != i} for i in range(k)}
    reach = []
    for start in range(k):
        seen, todo = {start}, [start]
        while todo:
            for nxt in beat[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        reach.append(seen)
    component = _components(k, beat)
    for i in range(k):
        for j in range(k):
            assert (component[i] == component[j]) == (j in reach[i] and i in reach[j])
    assert list(dict.fromkeys(component)) == list(range(max(component) + 1))


def test_bradley_terry_orders_and_centres():
    names = ["weak", "mid", "strong"]
    flat = bradley_terry(names, {(0, 1): (50, 100), (0, 2): (50, 100), (1, 2): (50, 100)})
    assert all(abs(r["rating"]) < 1e-6 for r in flat)
    ratings = bradley_terry(names, {(0, 1): (25, 100), (0, 2): (10, 100), (1, 2): (25, 100)})
    values = [r["rating"] for r in ratings]
    assert values[0] < values[1] < values[2] and abs(sum(values)) < 1e-6
    assert all(r["stderr"] > 0 for r in ratings)
    # an unbeaten agent still gets a finite rating (the prior)
    assert all(abs(r["rating"]) < 2000 for r in bradley_terry(names[:2], {(0, 1): (0, 50)}))
    # agents that never met, directly or through others, cannot be rated against each other
    with pytest.raises(ValueError, match="do not connect weak with strong"):
        bradley_terry(names, {(0, 1): (0, 50)})
    with pytest.raises(ValueError, match="do not connect a with c, d"):
        bradley_terry(list("abcd"), {(0, 1): (8, 10), (2, 3): (8, 10)})
    with pytest.raises(ValueError, match="no agents to rate"):  # a ZeroDivisionError
        bradley_terry([], {})
    assert [r["rating"] for r in bradley_terry(["alone"], {})] == [0.0]


#: A ladder-like table: "floor" lost every pair it played, against "a" and "b" only.
LADDER = (["floor", "a", "b", "c"],
          {(1, 0): (80, 80), (2, 0): (80, 80), (2, 1): (120, 200), (3, 1): (130, 200),
           (3, 2): (110, 200)})


def test_a_one_sided_agent_is_marked_and_left_out_of_the_centring():
    """Its rating is the prior's (it lost every pair): it must not move the others' ratings."""
    names, results = LADDER
    fitted = fit_bradley_terry(names, results)
    assert fitted.one_sided == ["lost every pair", None, None, None]
    assert fitted.rating[1:].mean() == pytest.approx(0.0, abs=1e-9)
    weaker = fit_bradley_terry(names, results, prior_pairs=0.1)  # the floor sinks, the rest stay
    assert weaker.rating[0] < fitted.rating[0] - 200
    assert weaker.rating[1:] == pytest.approx(fitted.rating[1:], abs=3)
    unbeaten = fit_bradley_terry(["x", "y"], {(0, 1): (50, 50)}).one_sided
    assert unbeaten == ["won every pair", "lost every pair"]


def test_a_group_that_never_scored_against_another_is_marked_as_the_prior_s():
    """Ford's condition: r1 and r2 split pairs between them but lost every pair to g and h, so
    the gap between {g, h} and {r1, r2} is the prior's (it grew with more pairs and nobody was
    marked).  Within each group the gap is measured."""
    names = ["r1", "r2", "g", "h"]
    for pairs in (10, 40):
        results = {(0, 1): (pairs / 2, pairs), (2, 0): (pairs, pairs), (2, 1): (pairs, pairs),
                   (3, 0): (pairs, pairs), (3, 1): (pairs, pairs), (2, 3): (0.3 * pairs, pairs)}
        fitted = fit_bradley_terry(names, results)
        assert fitted.one_sided == ["lost every pair against the other groups"] * 2 + [
            "won every pair against the other groups"] * 2  # two groups of two: no measured one
        assert fitted.group[0] == fitted.group[1] != fitted.group[2] == fitted.group[3]
        assert fitted.measured(0, 1) and fitted.measured(2, 3) and not fitted.measured(1, 2)
        assert fitted.rating.mean() == pytest.approx(0.0, abs=1e-9)  # centred on both groups
        assert centre_text(fitted.rows()).startswith("0 = the mean of the largest groups")
    # two tied groups and a lone agent below them: centred on the two groups, and said so
    tied = fit_bradley_terry(["a", "b", "c", "d", "e"], {
        (0, 1): (5, 10), (2, 3): (5, 10), (0, 2): (10, 10), (1, 3): (10, 10),
        (2, 4): (10, 10)})
    assert tied.rating[:4].mean() == pytest.approx(0.0, abs=1e-9)
    assert centre_text(tied.rows()).startswith("0 = the mean of the largest groups")
    # a larger measured group: the small one is marked, the centre is the measured group's
    names5 = ["r1", "r2", "a", "b", "c"]
    results5 = {(0, 1): (5, 10), (2, 0): (10, 10), (3, 1): (10, 10), (2, 3): (4, 10),
                (3, 4): (6, 10), (4, 2): (5, 10)}
    fitted5 = fit_bradley_terry(names5, results5)
    assert fitted5.one_sided == ["lost every pair against the other groups"] * 2 + [None] * 3
    assert fitted5.group == [1, 1, 0, 0, 0]
    assert fitted5.rating[2:].mean() == pytest.approx(0.0, abs=1e-9)
    # a middle agent: beaten by every pair of the top, beating every pair of the bottom
    chain = fit_bradley_terry(["top", "mid", "low"], {(0, 1): (10, 10), (1, 2): (10, 10)})
    assert chain.one_sided == ["won every pair", "between groups", "lost every pair"]
    assert chain.rating.mean() == pytest.approx(0.0, abs=1e-9)
    assert centre_text(chain.rows()) == "0 = the mean of all agents; every gap is the prior's"
    assert rating_text(chain.rows()[1]) == f"{chain.rating[1]:+.0f}"
    assert rating_text(chain.rows()[0]).startswith(">= ")
    # one group: nothing is marked, as before (LADDER's floor aside)
    assert fit_bradley_terry(["x", "y"], {(0, 1): (30, 50)}).one_sided == [None, None]
    # one agent alone: rated 0 (numpy's empty max ended the Newton loop with a ValueError)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no "did not converge" warning
        alone = fit_bradley_terry(["x"], {})
    assert alone.rating.tolist() == [0.0] and alone.one_sided == [None]


def test_rating_differences_have_the_gauge_free_standard_error():
    """``difference(i, j)``'s variance is ``c^T I^+ c`` for the contrast ``c = e_i - e_j`` and
    the Fisher information ``I`` at the fit, whatever the centring."""
    names, results = LADDER
    fitted = fit_bradley_terry(names, results)
    beta = fitted.rating / ELO
    games = np.zeros((4, 4))
    for (i, j), (_, trials) in results.items():
        games[i, j] = games[j, i] = trials + 1.0  # the prior's drawn pair
    p = 1.0 / (1.0 + np.exp(beta[None, :] - beta[:, None]))
    weight = games * p * (1 - p)
    information = np.diag(weight.sum(axis=1)) - weight
    for i, j in ((1, 2), (3, 1), (0, 3)):
        contrast = np.zeros(4)
        contrast[i], contrast[j] = 1.0, -1.0
        expected = ELO * np.sqrt(contrast @ np.linalg.pinv(information) @ contrast)
        difference, stderr = fitted.difference(i, j)
        assert difference == pytest.approx(fitted.rating[i] - fitted.rating[j])
        assert stderr == pytest.approx(expected, rel=1e-6)


def test_newton_that_does_not_converge_says_so():
    names, results = LADDER
    with pytest.warns(RuntimeWarning, match="did not converge"):
        fit_bradley_terry(names, results, iterations=1)


def test_t_quantiles_and_the_mean_interval():
    for df, exact in ((3, 3.18245), (4, 2.77645), (5, 2.57058), (10, 2.22814), (19, 2.09302),
                      (30, 2.04227), (1000, 1.96234)):
        assert t_quantile_975(df) == pytest.approx(exact, abs=4e-3 if df == 3 else 1e-3)
    with pytest.raises(ValueError):
        t_quantile_975(2)
    lo, hi = mean_interval([1.0, 2.0, 3.0, 4.0, 5.0])  # mean 3, sd 1.5811, t(4) 2.7764
    assert (lo + hi) / 2 == pytest.approx(3.0) and (hi - lo) / 2 == pytest.approx(1.9632, abs=2e-3)
    assert mean_interval([1.0, 2.0, 3.0]) is None  # too few pairs to say


def test_the_centre_is_the_measured_agents_mean_when_some_are_rated_by_the_prior():
    """LADDER's floor lost every pair, the others are measured: the ratings are centred on
    the agents the data rate against each other, and the label says so."""
    rows = fit_bradley_terry(*LADDER).rows()
    assert [bool(r["one_sided"]) for r in rows] == [True, False, False, False]
    assert centre_text(rows) == "0 = the mean of the agents the data rate against each other"


def test_four_values_are_enough_for_a_mean_interval():
    """Student's t needs 3 degrees of freedom (``t_quantile_975``): 4 pairs give an interval."""
    lo, hi = mean_interval([1.0, 2.0, 3.0, 4.0])  # mean 2.5, sd 1.2910, t(3) 3.1824
    assert (lo + hi) / 2 == pytest.approx(2.5)
    assert (hi - lo) / 2 == pytest.approx(3.18245 * 1.29099 / 2, abs=5e-3)


def test_one_pair_has_a_wilson_interval_too():
    """n = 1 is a trial like any other: 1/1 -> [0.2065, 1], 0/1 -> [0, 0.7935] (not the
    no-trials answer [0, 1])."""
    lo, hi = wilson_interval(1.0, 1)
    assert lo == pytest.approx(0.20655, abs=1e-4) and hi == 1.0
    lo, hi = wilson_interval(0.0, 1)
    assert lo == 0.0 and hi == pytest.approx(0.79345, abs=1e-4)


def assert_likelihood_equations_hold(fitted, results, k: int, tolerance: float) -> None:
    """At the fitted ratings each agent's expected score equals its actual one (the prior's
    drawn pair per pairing included): the Bradley-Terry likelihood's equations."""
    wins, games = np.zeros((k, k)), np.zeros((k, k))
    for (i, j), (score, trials) in results.items():
        wins[i, j], wins[j, i] = score + 0.5, trials - score + 0.5
        games[i, j] = games[j, i] = trials + 1.0
    beta = fitted.rating / ELO
    p = 1.0 / (1.0 + np.exp(beta[None, :] - beta[:, None]))
    assert (wins - games * p).sum(axis=1) == pytest.approx(np.zeros(k), abs=tolerance)


def test_the_bradley_terry_fit_solves_the_likelihood_equations():
    """At the fit each agent's expected score (prior's drawn pairs included) equals its
    observed one: Newton's method runs until it gets there, not only near."""
    names, results = LADDER
    fitted = fit_bradley_terry(names, results)
    assert_likelihood_equations_hold(fitted, results, 4, 1e-7)


def test_a_fractional_score_is_scoring_against_an_agent():
    """A pair half won (a truncated match) counts as scoring: 0.5 of 3 pairs joins the two
    agents in one measured group, nobody rated by the prior alone."""
    fitted = fit_bradley_terry(["x", "y"], {(0, 1): (0.5, 3)})
    assert fitted.one_sided == [None, None] and fitted.group == [0, 0]
    assert fitted.measured(0, 1)


def test_without_a_measured_group_no_agent_is_in_group_0():
    """Group 0 is the measured one; when every group is one agent there is none, and the
    groups are numbered from 1 in the agents' order."""
    chain = fit_bradley_terry(["top", "mid", "low"], {(0, 1): (10, 10), (1, 2): (10, 10)})
    assert chain.group == [1, 2, 3]
    assert [r["group"] for r in chain.rows()] == [1, 2, 3]


def test_newton_does_not_run_away_on_intransitive_results():
    """A beat B 999.75 of 1000 pairs, B swept C, C beat D, D held A, A swept E: full Newton
    steps overshot, ``exp`` overflowed and E came out 4e14 Elo above A (who beat it in every
    pair) with a standard error of 26.  The damped steps reach the maximum: each agent's
    expected score equals its observed one, no warning, every rating finite."""
    results = {(0, 1): (999.75, 1000), (0, 3): (12.25, 20), (0, 4): (1000.0, 1000),
               (1, 2): (10000.0, 10000), (2, 3): (4999.75, 5000), (3, 4): (15.5, 20)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow, no "did not converge"
        fitted = fit_bradley_terry(list("ABCDE"), results)
    assert np.all(np.abs(fitted.rating) < 3000) and fitted.one_sided == [None] * 5
    assert fitted.rating[0] > fitted.rating[4]  # A swept E
    assert_likelihood_equations_hold(fitted, results, 5, 1e-6)
