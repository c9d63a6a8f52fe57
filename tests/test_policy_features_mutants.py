"""Tests from a mutation audit of the policy's action features
(``sevenrocks_env/policy_features.py``): rare cases the random-state comparison of
``test_policy_features.py`` passes through without a check (the match score read back from an
observation's float32 columns at any target)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sevenrocks_env import rules  # noqa: E402
from sevenrocks_env.observation import encode  # noqa: E402
from sevenrocks_env.policy_features import FEATURE_NAMES, ActionFeatures  # noqa: E402
from sevenrocks_env.tiles import KNOCK  # noqa: E402
import positions  # noqa: E402

WINS, LEFT_CAN_WIN = FEATURE_NAMES.index("wins_match"), FEATURE_NAMES.index("left_can_win")


def features(match: rules.Match, actions: list[int]) -> torch.Tensor:
    obs = torch.from_numpy(encode(match, match.turn)).unsqueeze(0)
    return ActionFeatures(3)(obs, torch.zeros(len(actions), dtype=torch.long),
                             torch.tensor(actions))


def scoring_placements(count: int) -> list[tuple[rules.Match, int, int, int]]:
    """``count`` (state, placement, points it scores, the left opponent's best reply's) of
    random states in play."""
    found = []
    for seed in range(200):
        match = positions.random_state(seed, 4 + seed % 30, target=250, max_rounds=4,
                                       in_play=True)
        if match.over or match.awaiting_deal:
            continue
        actions = [a for a in rules.legal_actions(match) if a != KNOCK]
        if not actions:
            continue
        got = features(match, actions)
        for action, row in zip(actions, got):
            points, left = round(float(row[0]) * 35), round(float(row[17]) * 35)
            if points and left and len(found) < count:
                found.append((match, action, points, left))
    assert len(found) == count
    return found


def test_reaching_the_target_wins_at_every_target_whatever_the_float32_columns_round_to():
    """R8 at targets 16 to 215: the scores are stored as ``score / target`` in float32, which
    times the target is not always the score (32 / 47 * 47 is 31.999998): read back rounded,
    a placement scoring exactly what its team needs wins the match, and so does the left
    opponent's best reply scoring what its team needs; 5 points short, neither does."""
    for match, action, points, left in scoring_placements(6):
        team = rules.team_of(match.turn)
        observations, expected = [], []
        for target in range(max(points, left) + 5, 216):
            match.target = target
            for needing, index, scored in ((team, WINS, points), (team ^ 1, LEFT_CAN_WIN, left)):
                for need, wins in ((scored, 1.0), (scored + 5, 0.0)):
                    match.scores = [0, 0]
                    match.scores[needing] = target - need
                    observations.append(encode(match, match.turn))
                    expected.append((index, wins, target, need))
        obs = torch.from_numpy(np.stack(observations))
        got = ActionFeatures(3)(obs, torch.arange(len(obs)), torch.full((len(obs),), action))
        for row, (index, wins, target, need) in zip(got, expected):
            assert row[index] == wins, (FEATURE_NAMES[index], target, need)
