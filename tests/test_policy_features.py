"""Every action feature (0-23) against an independent computation with the rules engine (R3-R7).

:class:`~sevenrocks_env.policy_features.ActionFeatures` recomputes placements in torch from the
observation's slot pieces.  Here each feature is computed again from the decoded
:class:`~sevenrocks_env.observation.SeatView` with the engine's own functions
(:func:`rules.place_tile` via :class:`LookaheadLayout`, :func:`scoring.placement_points`, tile
sets), on random states of random matches, for every legal placement and for placements that
do not fit (all zeros).  The values must never change: the shipped policy was trained on them.
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from sevenrocks_env import rules
from sevenrocks_env.agents.belief import excluded_tiles
from sevenrocks_env.agents.layout import LookaheadLayout
from sevenrocks_env.observation import decode, encode
from sevenrocks_env.policy_features import FEATURE_NAMES, ActionFeatures
from sevenrocks_env.scoring import placement_points
from sevenrocks_env.tiles import KNOCK, TILE_IS_DOUBLE, TILE_PIPS, tiles_of

LEFT_OPPONENT, PARTNER = 1, 2  # relative seats


def random_state(seed: int, moves: int) -> rules.Match:
    rng = np.random.default_rng(seed)
    match = rules.Match.new(seed, max_rounds=4)
    for _ in range(moves):
        if match.over:
            break
        legal = rules.legal_actions(match)
        rules.apply_action(match, legal[int(rng.integers(len(legal)))])
    return match


def reference_features(view, action: int) -> list[float]:
    """The 24 features of placement ``action`` for ``view``, from the rules engine."""
    tile, slot = action >> 2, action & 3
    after = LookaheadLayout.of(view).after(action)      # rules.place_tile on the view's layout
    total = after.end_sum()                             # scoring.end_sum (R5)
    points = placement_points(total)
    features = [0.0] * 24
    features[0] = points / 35
    features[1] = float(points > 0)
    features[2] = total / 36
    features[3 + total % 5] = 1.0
    features[8] = TILE_PIPS[tile] / 12
    features[9] = float(TILE_IS_DOUBLE[tile])
    if not view.opening:
        features[10 + after.ends[slot]] = 1.0           # the number left open at that slot
    hidden = view.unseen
    fits_after = after.matching()
    for seat, (best, expected_sum, knock) in ((LEFT_OPPONENT, (17, 18, 21)),
                                              (PARTNER, (19, 20, 22))):
        possible = tiles_of(hidden & ~excluded_tiles(view.voids[seat]))
        share = min(1.0, view.tile_counts[seat] / max(hidden.bit_count(), 1))
        replies = [after.best_points(t) for t in possible]  # most points each tile scores next
        features[best] = max(replies, default=0) / 35
        features[expected_sum] = sum(replies) * share / 35
        features[knock] = math.prod(1.0 - share for t in possible if (fits_after >> t) & 1)
    rest = view.hand & ~(1 << tile)
    features[23] = (rest & fits_after).bit_count() / max(view.hand.bit_count(), 1)
    return features


def features_of(match: rules.Match, actions: list[int], version: int = 2) -> np.ndarray:
    obs = torch.from_numpy(encode(match, match.turn)).unsqueeze(0)
    rows = torch.zeros(len(actions), dtype=torch.long)
    return ActionFeatures(version)(obs, rows, torch.tensor(actions)).numpy()


def test_names_cover_every_feature():
    assert len(FEATURE_NAMES) == ActionFeatures.SIZES[ActionFeatures.LATEST] == 24
    assert len(set(FEATURE_NAMES)) == 24
    # 18 and 20 are share-weighted sums over the possible tiles, not an expected maximum
    assert "best" not in FEATURE_NAMES[18] and "best" not in FEATURE_NAMES[20]
    assert "sum" in FEATURE_NAMES[18] and "sum" in FEATURE_NAMES[20]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), moves=st.integers(0, 120))
def test_every_feature_matches_the_rules_engine(seed, moves):
    match = random_state(seed, moves)
    if match.over or match.awaiting_deal:
        return
    legal = [a for a in rules.legal_actions(match) if a != KNOCK]
    if not legal:
        return
    view = decode(encode(match, match.turn))
    got = features_of(match, legal)
    for row, action in zip(got, legal):
        expected = reference_features(view, action)
        for index, (value, want) in enumerate(zip(row, expected)):
            assert value == pytest.approx(want, abs=1e-5), (FEATURE_NAMES[index], action)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), moves=st.integers(0, 120))
def test_placements_that_do_not_fit_are_all_zero_and_version_1_is_a_prefix(seed, moves):
    match = random_state(seed, moves)
    if match.over or match.awaiting_deal:
        return
    legal = set(rules.legal_actions(match))
    hand = match.hands[match.turn]
    illegal = [4 * t + s for t in tiles_of(hand) for s in range(4) if 4 * t + s not in legal]
    if illegal:
        assert not features_of(match, illegal).any()
    placements = sorted(legal - {KNOCK})
    if placements:
        v1, v2 = features_of(match, placements, 1), features_of(match, placements, 2)
        assert v1.shape[1] == 21 and np.array_equal(v1, v2[:, :21])



def test_every_feature_is_exercised_with_nonzero_values():
    """Fixed states where each of the 24 features is nonzero somewhere, so the comparison above
    cannot pass by both sides being zero; checked against the engine here too."""
    seen = np.zeros(24, dtype=bool)
    for seed in range(40):
        for moves in (0, 1, 5, 9, 14, 20):
            match = random_state(seed, moves)
            if match.over or match.awaiting_deal:
                continue
            legal = [a for a in rules.legal_actions(match) if a != KNOCK]
            if not legal:
                continue
            view = decode(encode(match, match.turn))
            got = features_of(match, legal)
            want = np.array([reference_features(view, a) for a in legal])
            assert np.allclose(got, want, atol=1e-5)
            seen |= (got != 0).any(0)
    assert seen.all(), [FEATURE_NAMES[i] for i in np.flatnonzero(~seen)]
