"""Reward modes: one definition for the env, the single-agent view, the batched engine and the trainer.

Every mode is the same formula with different weights.  After each step, team 0's reward is

    points_scale * (team 0's score change - team 1's score change) + win_reward * winner_sign

where ``winner_sign`` is +1 if team 0 won the match on this step (R8), -1 if team 1 did and 0
otherwise (also on truncation); team 1 gets the negative, and both seats of a team get their
team's value (the partnerships are zero-sum).  Score changes include placement points (R5)
and end-of-round deductions (R7).

| mode       | points_scale | win_reward | a whole match sums to                         |
|------------|-------------:|-----------:|-----------------------------------------------|
| ``win``    | 0            | 1          | +1 / -1 for the winners / losers, 0 if truncated |
| ``points`` | 0.01         | 0          | the final margin / 100                         |
| ``shaped`` | 0.01 (``points_scale``) | 1 (``win_reward``) | margin * points_scale +- win_reward (the trainer's reward) |

:func:`team0_reward` is plain arithmetic, so it works on Python numbers and on torch tensors.
"""

from __future__ import annotations

from .checks import is_number_in, shown

REWARD_MODES = ("win", "points", "shaped")
#: (points_scale, win_reward) of the fixed modes; ``shaped`` takes both as parameters.
FIXED_WEIGHTS = {"win": (0.0, 1.0), "points": (0.01, 0.0)}
SHAPED_DEFAULTS = (0.01, 1.0)
_MAX_WEIGHT = 1e6


def reward_weights(mode: str, points_scale: float | None = None,
                   win_reward: float | None = None) -> tuple[float, float]:
    """``(points_scale, win_reward)`` of a reward mode; raises ``ValueError`` on bad input.

    ``points_scale``/``win_reward`` are only for ``mode="shaped"`` (default 0.01 and 1.0).
    """
    if not isinstance(mode, str) or mode not in REWARD_MODES:
        raise ValueError(f"reward must be one of {REWARD_MODES}, got {shown(mode)}")
    if mode != "shaped":
        if points_scale is not None or win_reward is not None:
            raise ValueError(f"points_scale and win_reward are parameters of reward='shaped', "
                             f"not of reward={mode!r}")
        return FIXED_WEIGHTS[mode]
    weights = []
    for name, value, default in (("points_scale", points_scale, SHAPED_DEFAULTS[0]),
                                 ("win_reward", win_reward, SHAPED_DEFAULTS[1])):
        if value is None:
            value = default
        if not is_number_in(value, 0, _MAX_WEIGHT):  # (NaN, infinities, 10**400 included)
            raise ValueError(f"{name} must be a finite number in [0, {_MAX_WEIGHT:g}], "
                             f"got {shown(value)}")
        weights.append(float(value))
    return weights[0], weights[1]


def winner_sign(winner) -> int:
    """+1 if team 0 won the match (``winner`` 0, R8), -1 if team 1 did, 0 while it runs or
    when it was cut at its round limit (``winner`` None)."""
    return 0 if winner is None else (1 if winner == 0 else -1)


def team0_reward(margin_change, sign, points_scale: float, win_reward: float):
    """Team 0's reward for one step (the module formula); team 1 gets the negative.

    ``margin_change`` is team 0's score change minus team 1's; ``sign`` is the step's
    :func:`winner_sign`, +1 / -1 / 0.  Works elementwise on tensors.
    """
    return points_scale * margin_change + win_reward * sign


__all__ = ["FIXED_WEIGHTS", "REWARD_MODES", "SHAPED_DEFAULTS", "reward_weights", "team0_reward",
           "winner_sign"]
