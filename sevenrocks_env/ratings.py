"""Statistics for the arena: a confidence interval over duplicate pairs and Bradley-Terry ratings.

**Win-rate interval.**  Matches of one duplicate pair share their deals, so they are correlated;
the honest unit is the pair.  Each pair scores ``s`` in [0, 1] for agent A (its wins over the
two matches / 2, a truncated match counting 1/2: 0, 1/4, 1/2, 3/4 or 1).  The 95% interval is the Wilson score
interval of the mean pair score with ``n = pairs``: a variable in [0, 1] with mean ``p`` has
variance at most ``p(1 - p)``, so treating the pairs as ``n`` Bernoulli trials is conservative,
and, unlike a bootstrap, it stays sensible when every pair has the same result.

Wilson's interval is wider than one from the pairs' observed spread (pairs that split are
counted as if half their trials were won outright), and its coverage dips under 95% as it does
for Bernoulli trials (exactly: at least 92.6% at 20 pairs for ``p`` in [0.1, 0.9], but 84% for a
``p`` within 1% of 0 or 1, from about 20 pairs on).

**Mean margin.**  The mean over pairs of the pair's mean final margin, with a 95% interval from
their spread: Student's t over ``pairs - 1`` degrees of freedom (:func:`mean_interval`).

**Ratings.**  A Bradley-Terry model ``P(i beats j) = 1 / (1 + 10^((r_j - r_i) / 400))`` (Elo
scale) fitted by Newton's method (each step damped until the likelihood does not fall) on the
pair scores of every pairing (each pair one trial with a fractional outcome), with one virtual
drawn pair per pairing as a weak prior so an unbeaten agent still gets a finite rating.  An
agent that won every pair it played, or lost every one, is *one-sided*: its rating is set by
that prior (the data only say it is above, or below, all it met), so it is marked.  The same
holds for a group: the data fix a gap between two agents only when each is reached from the
other along "scored against" edges (Ford's condition: the groups are the strongly connected
components of that graph).  When agents that split pairs among
themselves never scored against another group (or it never against them), the gap between the
groups is the prior's too, however many pairs were played: every agent outside the largest group
(the *measured* one; several of equal size together) is marked with how its group did against
the others, and the ratings are centred on the mean of the measured group's agents (of all, if
every group is one agent).  The uncertainty is the covariance from the inverse Fisher
information, with the same centring; the standard error of a *difference* between two agents
(:meth:`Ratings.difference`) is what says whether they differ, and is smaller than either
rating's own interval suggests.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass

import numpy as np

from .checks import is_int, is_number_in, shown

Z95 = 1.959963984540054
ELO = 400.0 / math.log(10.0)  # natural-log logit -> Elo points


def wilson_interval(p: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion ``p`` observed over ``n`` trials: within [0, 1]
    and around ``p`` (which the exact interval always contains; rounding alone gave a lower
    bound of 2.8e-17 at p = 0, n = 7, and an upper one of 1.0000000000000002 at p = 1).
    ``n = 0`` (nothing observed) gives (0, 1).  ``ValueError`` naming ``p`` outside [0, 1], ``n``
    that is no int in [0, 2**63), ``z`` outside (0, 1e6] (NaN trials or a negative ``z`` gave an
    interval of no width, ``p = 1.5`` a math domain error, ``n = 10**400`` an OverflowError)."""
    if not (type(n) is int and type(p) is float and z is Z95 and 0 <= n < 1 << 63
            and 0.0 <= p <= 1.0):
        _check_wilson(p, n, z)
        # Python numbers: a NumPy integer n overflows in 4 * n * n (np.int32 past 23,170,
        # np.int64 at 2**31 gave (0, 1)), with only a RuntimeWarning
        p, n, z = float(p), int(n), float(z)
    if n == 0:
        return (0.0, 1.0)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half)))


def _check_wilson(p, n, z) -> None:
    if not is_number_in(p, 0, 1):
        raise ValueError(f"wilson_interval: p must be a number in [0, 1], got {shown(p)}")
    if not is_int(n, 0, (1 << 63) - 1):
        raise ValueError(f"wilson_interval: n must be an int in [0, 2**63), got {shown(n)}")
    if not (is_number_in(z, 0, 1e6) and z > 0):
        raise ValueError(f"wilson_interval: z must be a number in (0, 1e6], got {shown(z)}")


def t_quantile_975(df: int) -> float:
    """The 97.5% quantile of Student's t with ``df >= 3`` degrees of freedom (the normal's as
    ``df`` grows): the Cornish-Fisher expansion to fourth order, 0.004 under the exact value
    at ``df = 3`` (0.12 %), 0.0009 at 4, under 3e-4 from 5 on."""
    if not is_int(df, 3):  # NaN degrees of freedom gave a NaN quantile
        raise ValueError(f"t quantile: df must be an int of at least 3 degrees of freedom, got "
                         f"{shown(df)}")
    z = Z95
    terms = ((z ** 3 + z) / 4,
             (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96,
             (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384,
             (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160)
    return z + sum(term / df ** (k + 1) for k, term in enumerate(terms))


def mean_interval(values) -> tuple[float, float] | None:
    """95% interval of the mean of ``values`` (one per duplicate pair): Student's t from their
    spread; None for fewer than 4 values (too few to say)."""
    values = np.asarray(values, dtype=np.float64)
    n = len(values)
    if n < 4:
        return None
    half = t_quantile_975(n - 1) * float(values.std(ddof=1)) / math.sqrt(n)
    mean = float(values.mean())
    return (mean - half, mean + half)


@dataclass
class Ratings:
    """Fitted Bradley-Terry ratings (Elo points) of ``names``, their covariance (Elo points
    squared), which agents the prior rates (``one_sided``: ``"won every pair"``, ``"lost every
    pair"``, the ``"... against the other groups"`` of a group, or None; see the module docs)
    and each agent's ``group`` (0: the measured one)."""

    names: list[str]
    rating: np.ndarray
    covariance: np.ndarray
    one_sided: list[str | None]
    group: list[int] | None = None

    def measured(self, i: int, j: int) -> bool:
        """Whether the data fix the gap between agents ``i`` and ``j`` (one group), rather
        than the prior."""
        return self.group is None or self.group[i] == self.group[j]

    def stderr(self, i: int) -> float:
        return math.sqrt(max(float(self.covariance[i, i]), 0.0))

    def difference(self, i: int, j: int) -> tuple[float, float]:
        """``rating[i] - rating[j]`` and its standard error."""
        c = self.covariance
        variance = float(c[i, i] + c[j, j] - 2 * c[i, j])
        return float(self.rating[i] - self.rating[j]), math.sqrt(max(variance, 0.0))

    def rows(self) -> list[dict]:
        """One ``{"agent", "rating", "stderr", "one_sided", "group"}`` per name, in the names'
        order."""
        return [{"agent": name, "rating": float(self.rating[i]), "stderr": self.stderr(i),
                 "one_sided": self.one_sided[i],
                 "group": 0 if self.group is None else self.group[i]}
                for i, name in enumerate(self.names)]


def fit_bradley_terry(names: list[str], results: dict[tuple[int, int], tuple[float, int]],
                      prior_pairs: float = 1.0, iterations: int = 100) -> Ratings:
    """Elo-scale Bradley-Terry ratings with their covariance (see the module docs).

    ``results[(i, j)] = (score of i, trials)``: the summed pair scores of agent ``i`` against
    ``j`` and the number of pairs.  ``ValueError`` if the pairings do not connect every agent:
    ratings of agents that never met, directly or through others, are not comparable (the fit
    would still print numbers).
    """
    k = len(names)
    _check_results(names, results)
    # a NaN or infinite prior ended in numpy's LinAlgError, a negative one (or no iteration)
    # returned ratings of 0 with a warning only
    if not (is_number_in(prior_pairs, 0, 1e6) and prior_pairs > 0):
        raise ValueError(f"Bradley-Terry: prior_pairs must be a number in (0, 1e6], got "
                         f"{shown(prior_pairs)}")
    if not is_int(iterations, 1, 10 ** 6):
        raise ValueError(f"Bradley-Terry: iterations must be an int in [1, 1000000], got "
                         f"{shown(iterations)}")
    _check_connected(names, results)
    wins = np.zeros((k, k))
    games = np.zeros((k, k))
    for (i, j), (score, trials) in results.items():
        wins[i, j] += score + prior_pairs / 2
        wins[j, i] += trials - score + prior_pairs / 2
        games[i, j] += trials + prior_pairs
        games[j, i] += trials + prior_pairs
    beta = np.zeros(k)
    if k > 1:  # one agent: rated 0, nothing to fit
        for _ in range(iterations):
            p, information = _fisher(beta, games)
            gradient = (wins - games * p).sum(axis=1)
            step = np.zeros(k)
            step[1:] = np.linalg.lstsq(information[1:, 1:], gradient[1:], rcond=None)[0]
            step = _damped(beta, step, wins)
            beta += step
            if np.max(np.abs(step)) < 1e-10:
                break
        else:
            warnings.warn(f"Bradley-Terry: Newton's method did not converge in {iterations} "
                          "iterations; the ratings may be off", RuntimeWarning, stacklevel=2)
    _, information = _fisher(beta, games)
    covariance = np.zeros((k, k))
    if k > 1:
        covariance[1:, 1:] = np.linalg.pinv(information[1:, 1:])
    group, one_sided, centre_on = _groups(k, results)
    weights = np.zeros(k)
    weights[centre_on] = 1.0 / len(centre_on)
    centre = np.eye(k) - np.outer(np.ones(k), weights)  # any centring: its rows sum to zero
    return Ratings(list(names), ELO * (centre @ beta),
                   ELO ** 2 * (centre @ covariance @ centre.T), one_sided, group)


def _groups(k: int, results) -> tuple[list[int], list[str | None], list[int]]:
    """``(group, one_sided, centre_on)``: each agent's group (the strongly connected components
    of "scored > 0 against"; 0 is the measured one, the largest, when one group is largest and
    has two agents or more), the mark of every agent outside it (how its group did in every
    pair against the agents of other groups it met) and the agents the ratings are centred on
    (the largest groups, or all agents when every group is one agent)."""
    beat = {i: set() for i in range(k)}
    for (i, j), (score, trials) in results.items():
        if score > 0:
            beat[i].add(j)
        if score < trials:
            beat[j].add(i)
    component = _components(k, beat)
    sizes = [component.count(c) for c in range(max(component, default=-1) + 1)]
    largest = max(sizes, default=0)
    biggest = [c for c, size in enumerate(sizes) if size == largest]
    measured = biggest[0] if len(biggest) == 1 and largest > 1 else None
    # renumber: the measured group 0, the others from 1 in order of their first agent
    order = ([measured] if measured is not None else []) + [
        c for c in dict.fromkeys(component) if c != measured]
    group = [order.index(c) + (measured is None) for c in component]
    one_sided: list[str | None] = [None] * k
    for i in range(k):
        if len(sizes) == 1 or component[i] == measured:
            continue
        won = lost = True  # against every agent of another group that i's group met
        for (a, b), (score, trials) in results.items():
            if (group[a] == group[i]) != (group[b] == group[i]):
                ours = score if group[a] == group[i] else trials - score
                won, lost = won and ours >= trials, lost and ours <= 0
        what = "won every pair" if won else "lost every pair" if lost else "between groups"
        one_sided[i] = what if group.count(group[i]) == 1 else f"{what} against the other groups"
    centre_on = [i for i in range(k) if largest > 1 and component[i] in biggest] or list(range(k))
    return group, one_sided, centre_on


def _components(k: int, beat: dict[int, set[int]]) -> list[int]:
    """The strongly connected components of the graph ``beat`` (agents each of which reaches
    the other by wins): each node's component, numbered in order of their first node.  A
    Warshall closure: a ladder has a dozen agents."""
    reach = np.eye(k, dtype=bool)
    for node, beaten in beat.items():
        reach[node, sorted(beaten)] = True
    for via in range(k):
        reach |= reach[:, via, None] & reach[None, via, :]
    first = (reach & reach.T).argmax(axis=1)  # the component's first node
    return np.unique(first, return_inverse=True)[1].tolist()


def _log_likelihood(beta: np.ndarray, wins: np.ndarray) -> float:
    """The log-likelihood of ``wins`` (prior's drawn pairs included) at ratings ``beta``
    (natural-log scale), without overflow however far apart the ratings are."""
    return -float((wins * np.logaddexp(0.0, beta[None, :] - beta[:, None])).sum())


#: The longest Newton step, in natural-log rating units (about 350 Elo points).
MAX_STEP = 2.0


def _damped(beta: np.ndarray, step: np.ndarray, wins: np.ndarray) -> np.ndarray:
    """Newton's ``step``, at most :data:`MAX_STEP` long in any rating and halved until it
    does not lower the log-likelihood (concave, with a single maximum thanks to the prior).
    Full steps overshot on intransitive results (A beat B 999.75 of 1000 pairs, B swept C, C
    beat D, D held A, A swept E): the ratings ran to 1e14, ``exp`` overflowed, the
    information vanished and the zero step that followed passed for convergence, E rated far
    above A, who had beaten it in every pair."""
    longest = float(np.max(np.abs(step)))
    if longest > MAX_STEP:
        step = step * (MAX_STEP / longest)
    before = _log_likelihood(beta, wins)
    slack = 1e-12 * max(1.0, abs(before))  # rounding near the maximum: still a full step
    for _ in range(60):
        if _log_likelihood(beta + step, wins) >= before - slack:
            return step
        step = step / 2
    return np.zeros_like(step)


def _fisher(beta: np.ndarray, games: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``P(i beats j)`` at ratings ``beta`` (natural-log scale) and the Fisher information (the
    negative Hessian of the log-likelihood: Newton's step, then the covariance)."""
    p = 1.0 / (1.0 + np.exp(beta[None, :] - beta[:, None]))
    weight = games * p * (1 - p)
    return p, np.diag(weight.sum(axis=1)) - weight


def bradley_terry(names: list[str], results: dict[tuple[int, int], tuple[float, int]],
                  prior_pairs: float = 1.0, iterations: int = 100) -> list[dict]:
    """:func:`fit_bradley_terry`'s :meth:`Ratings.rows`: one ``{"agent", "rating", "stderr",
    "one_sided"}`` per name."""
    return fit_bradley_terry(names, results, prior_pairs, iterations).rows()


def _check_results(names: list[str], results) -> None:
    """``ValueError`` for a result no arena gives (a saved file's, edited): agents ``i != j``
    among ``names``, ``trials`` pairs (an int >= 1) and a score in ``[0, trials]`` (a win rate
    of 3 fitted a rating of 1.6e15 with no error; NaN ended in numpy's LinAlgError)."""
    if not names:
        raise ValueError("no agents to rate")
    if not isinstance(results, dict):
        raise TypeError(f"Bradley-Terry: results must be a dict {{(i, j): (score, pairs)}}, got "
                        f"{type(results).__name__} {shown(results)}")
    for key, value in results.items():
        ok = (isinstance(key, tuple) and len(key) == 2 and all(is_int(x, 0, len(names) - 1)
                                                               for x in key)
              and key[0] != key[1] and isinstance(value, tuple) and len(value) == 2)
        if ok:
            score, trials = value
            ok = is_int(trials, 1) and isinstance(score, numbers.Real) \
                and not isinstance(score, bool) and 0 <= score <= trials
        if not ok:
            raise ValueError(f"Bradley-Terry: result {str(key)[:40]}: {str(value)[:60]} is not "
                             f"(score in [0, pairs], pairs >= 1) of two of {len(names)} agents")


def _check_connected(names: list[str], results) -> None:
    group = {0} if names else set()
    grown = True
    while grown:
        grown = False
        for i, j in results:
            if (i in group) != (j in group):
                group |= {i, j}
                grown = True
    apart = [names[i] for i in range(len(names)) if i not in group]
    if apart:
        raise ValueError(f"the pairings do not connect {names[0]} with {', '.join(apart)}: "
                         "ratings across unconnected groups are not comparable")
