"""Statistics for the arena: a confidence interval over duplicate pairs and Bradley-Terry ratings.

**Win-rate interval.**  Matches of one duplicate pair share their deals, so they are correlated;
the honest unit is the pair.  Each pair scores ``s`` in [0, 1] for agent A (its wins over the
two matches / 2, a truncated match counting 1/2: 0, 1/4, 1/2, 3/4 or 1).  The 95% interval is the Wilson score
interval of the mean pair score with ``n = pairs``: a variable in [0, 1] with mean ``p`` has
variance at most ``p(1 - p)``, so treating the pairs as ``n`` Bernoulli trials is conservative,
and, unlike a bootstrap, it stays sensible when every pair has the same result.

**Ratings.**  A Bradley-Terry model ``P(i beats j) = 1 / (1 + 10^((r_j - r_i) / 400))`` (Elo
scale) fitted by Newton's method on the pair scores of every pairing (each pair one trial with a
fractional outcome), with one virtual drawn pair per pairing as a weak prior so an unbeaten agent
still gets a finite rating.  Ratings are centred on mean 0; the uncertainty is the standard error
from the inverse Fisher information (same centring).
"""

from __future__ import annotations

import math

import numpy as np

Z95 = 1.959963984540054
ELO = 400.0 / math.log(10.0)  # natural-log logit -> Elo points


def wilson_interval(p: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion ``p`` observed over ``n`` trials."""
    if n <= 0:
        return (0.0, 1.0)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (max(0.0, centre - half), min(1.0, centre + half))


def bradley_terry(names: list[str], results: dict[tuple[int, int], tuple[float, int]],
                  prior_pairs: float = 1.0, iterations: int = 100) -> list[dict]:
    """Elo-scale Bradley-Terry ratings with standard errors.

    ``results[(i, j)] = (score of i, trials)``: the summed pair scores of agent ``i`` against
    ``j`` and the number of pairs.  Returns one ``{"agent", "rating", "stderr"}`` per name.
    ``ValueError`` if the pairings do not connect every agent: ratings of agents that never
    met, directly or through others, are not comparable (the fit would still print numbers).
    """
    k = len(names)
    _check_connected(names, results)
    wins = np.zeros((k, k))
    games = np.zeros((k, k))
    for (i, j), (score, trials) in results.items():
        wins[i, j] += score + prior_pairs / 2
        wins[j, i] += trials - score + prior_pairs / 2
        games[i, j] += trials + prior_pairs
        games[j, i] += trials + prior_pairs
    beta = np.zeros(k)
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(beta[None, :] - beta[:, None]))
        gradient = (wins - games * p).sum(axis=1)
        weight = games * p * (1 - p)
        hessian = np.diag(weight.sum(axis=1)) - weight
        step = np.linalg.lstsq(hessian[1:, 1:], gradient[1:], rcond=None)[0]
        beta[1:] += step
        if np.max(np.abs(step)) < 1e-10:
            break
    p = 1.0 / (1.0 + np.exp(beta[None, :] - beta[:, None]))
    weight = games * p * (1 - p)
    information = np.diag(weight.sum(axis=1)) - weight
    covariance = np.zeros((k, k))
    if k > 1:
        covariance[1:, 1:] = np.linalg.pinv(information[1:, 1:])
    centre = np.eye(k) - 1.0 / k
    covariance = centre @ covariance @ centre.T
    beta = beta - beta.mean()
    return [{"agent": names[i], "rating": float(ELO * beta[i]),
             "stderr": float(ELO * math.sqrt(max(covariance[i, i], 0.0)))} for i in range(k)]


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
