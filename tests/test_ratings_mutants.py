"""Ratings details a mutation audit found unpinned: each test failed on one plausible slip in
:mod:`sevenrocks_env.ratings` (a pairing given both ways, a row that scored nothing, the
Newton step's damping, the measured group of a hand-made :class:`Ratings`)."""

from __future__ import annotations

import numpy as np
import pytest

from sevenrocks_env import ratings
from sevenrocks_env.ratings import MAX_STEP, Ratings, fit_bradley_terry


def test_without_groups_every_gap_is_measured():
    """``group=None`` (a :class:`Ratings` made by hand, as before groups existed): the data fix
    every gap."""
    made = Ratings(["a", "b"], np.zeros(2), np.eye(2), [None, None])
    assert made.measured(0, 1) and made.measured(1, 0)
    assert [row["group"] for row in made.rows()] == [0, 0]


def test_one_agent_alone_is_in_no_measured_group():
    """A measured group needs two agents: one agent alone is not group 0 (as for any fit
    without a measured group)."""
    alone = fit_bradley_terry(["x"], {})
    assert alone.group == [1] and alone.rows()[0]["group"] == 1


def test_a_pairing_given_both_ways_counts_both_whatever_their_order():
    """``(0, 1)`` and ``(1, 0)`` are the same two agents: their pairs add up (each key brings
    its own prior pair), in any order of the dict."""
    merged = fit_bradley_terry(["a", "b"], {(0, 1): (6.0, 10)}, prior_pairs=2.0)
    for results in ({(0, 1): (5.0, 6), (1, 0): (3.0, 4)}, {(1, 0): (3.0, 4), (0, 1): (5.0, 6)}):
        fitted = fit_bradley_terry(["a", "b"], results)
        assert fitted.rating == pytest.approx(merged.rating, abs=1e-6)
        assert fitted.covariance == pytest.approx(merged.covariance, rel=1e-6)


def test_a_row_agent_that_scored_nothing_lost_every_pair():
    """``results[(i, j)] = (0, n)``: i never scored against j, so only j reaches i by wins;
    i is rated by the prior (the same as the mirrored key says)."""
    names = ["a", "b", "c"]
    row = fit_bradley_terry(names, {(0, 1): (0.0, 10), (1, 2): (5.0, 10)})
    column = fit_bradley_terry(names, {(1, 0): (10.0, 10), (1, 2): (5.0, 10)})
    for fitted in (row, column):
        assert fitted.one_sided == ["lost every pair", None, None]
        assert fitted.group == [1, 0, 0] and not fitted.measured(0, 1)
    assert row.rating == pytest.approx(column.rating, abs=1e-6)


def _optimum():
    """A fitted two-agent optimum (natural-log scale) and its wins matrix (prior included)."""
    fitted = fit_bradley_terry(["a", "b"], {(0, 1): (7.0, 10)})
    wins = np.array([[0.0, 7.5], [3.5, 0.0]])
    return fitted.rating / ratings.ELO, wins


def test_a_damped_step_never_lowers_the_likelihood():
    """At the maximum every step lowers the likelihood, even a short one (0.05, about 9 Elo
    points): it is halved until the loss is rounding only (1e-12 of the likelihood)."""
    beta, wins = _optimum()
    before = ratings._log_likelihood(beta, wins)
    for raw in ([0.0, 0.05], [0.0, -0.05], [0.3, -0.3], [0.0, 1.5]):
        step = ratings._damped(beta, np.array(raw), wins)
        assert np.max(np.abs(step)) < np.max(np.abs(raw))  # halved
        assert ratings._log_likelihood(beta + step, wins) >= before - 1e-12 * abs(before)


def test_a_damped_step_is_at_most_max_step_long():
    """Far from the maximum, toward it: a Newton step of 40 is cut to :data:`MAX_STEP`, even
    where the full step would still raise the likelihood."""
    wins = np.array([[0.0, 999.5], [0.5, 0.0]])  # a won 999 of 1000 pairs: far above b
    beta = np.zeros(2)
    full = np.array([0.0, -40.0])
    assert ratings._log_likelihood(beta + full, wins) > ratings._log_likelihood(beta, wins)
    step = ratings._damped(beta, full, wins)
    assert np.max(np.abs(step)) == pytest.approx(MAX_STEP)
    assert step[0] == 0.0 and step[1] < 0


def test_a_step_that_cannot_be_checked_is_no_step():
    """A step the likelihood cannot judge (NaN: every halving fails the test) is dropped, not
    taken: the ratings stay finite."""
    beta, wins = _optimum()
    with np.errstate(invalid="ignore"):
        step = ratings._damped(beta, np.array([0.0, np.nan]), wins)
    assert step.tolist() == [0.0, 0.0]
