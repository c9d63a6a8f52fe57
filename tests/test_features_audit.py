"""Tests from a mutation audit of the TorchRL env, the action features and the match-state checks
(``sevenrocks_env.batched.observe`` had no survivor that was not equivalent): each one fails on a
plausible mistake the other tests let through -- an observation spec no longer bounded, an
unseeded env that always deals the same, stale "finished" flags that let a partial reset restart
a match in progress, tensors handed out that alias the engine's buffers, a match target read back
a float32 ulp high, an untrusted state's field out of its range or named wrongly."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sevenrocks_env.match_state import BIG
from sevenrocks_env.rules import Match, legal_actions, team_of
from sevenrocks_env.scoring import end_sum
from sevenrocks_env.tiles import DOUBLE_OF, EAST, TILE_HIGH, TILE_LOW, WEST, tiles_of

from positions import won_at_exactly_the_target
from test_match_state import good_state


# -- SevenRocksTorchRLEnv (docs/torchrl.md) --------------------------------------------------------

try:
    import torchrl
except ModuleNotFoundError:  # an optional extra: pip install -e '.[torchrl]'
    torchrl = None
else:
    from tensordict import TensorDict
    from torchrl.data import Bounded, Unbounded

    from sevenrocks_env import sevenrocks_v0
    from sevenrocks_env.torchrl_env import SevenRocksTorchRLEnv

    from batched_helpers import SHORT, masked_random, some_matches_done

needs_torchrl = pytest.mark.skipif(torchrl is None, reason="TorchRL is an optional extra")


def partial_reset(flags: torch.Tensor) -> TensorDict:
    return TensorDict({"_reset": flags.reshape(-1, 1).clone()}, batch_size=[len(flags)])


@needs_torchrl
def test_the_observation_spec_has_the_observation_s_finite_bounds():
    """docs/torchrl.md: ``Bounded`` by the observation's finite bounds (the AEC env's
    ``observation_space`` for the same target and ``max_rounds``), ``Unbounded`` only with
    ``max_rounds=None``."""
    env = SevenRocksTorchRLEnv(3, seed=0, target=60, max_rounds=5)
    spec = env.observation_spec["observation"]
    assert isinstance(spec, Bounded)
    box = sevenrocks_v0.env(target=60, max_rounds=5).observation_space("player_0")["observation"]
    assert torch.equal(spec.space.low[0], torch.from_numpy(box.low))
    assert torch.equal(spec.space.high[0], torch.from_numpy(box.high))
    assert spec.is_in(env.reset()["observation"])
    unbounded = SevenRocksTorchRLEnv(3, seed=0, target=60, max_rounds=None)
    assert isinstance(unbounded.observation_spec["observation"], Unbounded)


@needs_torchrl
def test_unseeded_envs_deal_from_fresh_seeds():
    """Without ``seed`` each env draws its deal stream from fresh entropy: two unseeded envs
    (and two full resets of one) do not replay the same deals."""
    a, b = SevenRocksTorchRLEnv(2, **SHORT), SevenRocksTorchRLEnv(2, **SHORT)
    a.reset()
    b.reset()
    first = a.vector_env.seed
    assert first != b.vector_env.seed
    a.reset()
    assert a.vector_env.seed != first


@needs_torchrl
def test_a_first_reset_naming_some_envs_starts_every_match():
    """Before any reset there is no match in progress: a ``_reset`` naming some envs starts all
    of them, as ``reset()`` does (the same deals, from the same seed).  (TorchRL fills the rows
    of the envs not named from the input tensordict, so the engine is compared.)"""
    env, plain = SevenRocksTorchRLEnv(4, seed=9, **SHORT), SevenRocksTorchRLEnv(4, seed=9, **SHORT)
    td = env.reset(partial_reset(torch.tensor([True, False, False, False])))
    want = plain.reset()
    assert torch.equal(td["observation"][0], want["observation"][0]) and not td["done"].any()
    assert torch.equal(env.vector_env.observation, want["observation"])
    assert torch.equal(env.vector_env.action_mask, want["action_mask"])
    assert env.vector_env.action_mask.any(-1).all()


@needs_torchrl
def test_a_full_reset_forgets_which_matches_had_ended():
    """After ``reset()`` every match is new and in progress: a partial ``_reset`` naming the
    envs whose match ended just before is refused."""
    env, done = some_matches_done()
    env.reset()
    with pytest.raises(ValueError, match="partial reset"):
        env.reset(partial_reset(done))


@needs_torchrl
def test_a_match_stepped_after_its_auto_reset_is_in_progress():
    """The flags of a done step last one step: once the next match has been played (stepped
    without a reset in between) a partial ``_reset`` of it is refused."""
    env, done = some_matches_done()
    td = TensorDict({"action": env.vector_env.action_mask.to(torch.uint8).argmax(1)},
                    batch_size=[8])
    assert not env.step(td)["next", "done"][done.squeeze(-1)].any()
    with pytest.raises(ValueError, match="partial reset"):
        env.reset(partial_reset(done))


@needs_torchrl
def test_a_reset_that_restarts_nothing_reports_no_done_flags():
    """A ``_reset`` naming none of the envs, right after a step that ended some matches, returns
    ``done=False`` everywhere: every env has a match in progress (its next one)."""
    env, done = some_matches_done()
    assert done.any()
    td = env.reset(partial_reset(torch.zeros(8, dtype=torch.bool)))
    assert not td["done"].any() and not td["terminated"].any() and not td["truncated"].any()


@needs_torchrl
def test_the_tensors_handed_out_are_copies_of_the_engine_s_buffers():
    """Writing into a returned observation, mask or seat (a transform working in place) changes
    neither the engine nor what the next step reports."""
    env = SevenRocksTorchRLEnv(4, seed=3, **SHORT)
    td = env.reset()
    vec = env.vector_env
    kept = {key: td[key].clone() for key in ("observation", "action_mask", "current_seat")}
    td["observation"].fill_(-7.0)
    td["action_mask"].fill_(False)
    td["current_seat"].fill_(3)
    assert torch.equal(vec.observation, kept["observation"])
    assert torch.equal(vec.action_mask, kept["action_mask"])
    assert torch.equal(vec.current_seat, kept["current_seat"])
    td["action"] = masked_random(kept["action_mask"], torch.Generator().manual_seed(0))
    nxt = env.step(td)["next"]
    assert torch.equal(nxt["current_seat"], (kept["current_seat"] + 1) & 3)  # R6: turn passes left


# -- ActionFeatures ----------------------------------------------------------------------------

def test_an_unknown_action_feature_version_is_a_value_error_naming_the_versions():
    from sevenrocks_env.policy_features import ActionFeatures
    for version in (0, 4):
        with pytest.raises(ValueError, match=r"action feature version must be one of \[1, 2, 3\]"):
            ActionFeatures(version)


@pytest.mark.parametrize("target", [254, 1001])  # float32(target / 1000) * 1000 > target
def test_reaching_a_target_stored_a_bit_high_still_wins(target):
    """R8 at targets whose ``target / 1000`` in float32 reads back above the target: the target
    must be rounded back, or "reaching it exactly" would need a fraction of a point more."""
    from sevenrocks_env.policy_features import FEATURE_NAMES
    from sevenrocks_env.tiles import KNOCK
    from test_policy_features import features_of, placement_points_of, random_state

    assert float(np.float32(target / 1000)) * 1000 > target
    index = FEATURE_NAMES.index("wins_match")
    checked = 0
    for seed in range(30):
        match = random_state(seed, 6 + seed % 20, target=target)
        if match.over or match.awaiting_deal:
            continue
        team = team_of(match.turn)
        for action in [a for a in legal_actions(match) if a != KNOCK]:
            points = placement_points_of(match, action)
            if points <= 0:
                continue
            match.scores = [0, 0]
            match.scores[team] = target - points
            assert features_of(match, [action], 3)[0, index] == 1.0, (seed, action)
            checked += 1
    assert checked >= 5


# -- match_state: what an untrusted state or deal may hold --------------------------------------
# (a field out of its range, three scores for a deal and a round that should have ended with
# seat 0 on turn: rows of parametrized tests in test_match_state.py and
# test_match_state_layouts.py)

def test_a_state_s_seed_may_be_2_to_the_64_and_no_more():
    """``check_match_state``: a seed is None or an int in [0, 2**64]."""
    state = good_state()
    for seed in (2 ** 63, 2 ** 64):
        assert Match.from_state(dict(state, seed=seed)).to_state() == dict(state, seed=seed)
    with pytest.raises(ValueError, match=r"match state: seed must be None or an int in "
                                         r"\[0, 2\*\*64\]"):
        Match.from_state(dict(state, seed=2 ** 64 + 1))


@pytest.mark.parametrize("scores, words", [
    ([0, BIG + 1], "scores must be two ints"),        # a winner's score too is bounded
    ([0, 249], "scores must be at the target for the winner"),  # one short of 250 has not won
])
def test_a_won_state_s_scores_are_checked(scores, words):
    """R8: the winner stands at (or past, by its last placement) the target, and no score is
    beyond the state's bounds (:data:`BIG`)."""
    state = won_at_exactly_the_target().to_state()
    assert state["winner"] == 1 and state["scores"] == [0, 250]
    assert Match.from_state(dict(state, scores=[0, 255])).scores == [0, 255]
    with pytest.raises(ValueError, match=f"match state: {words}"):
        Match.from_state(dict(state, scores=scores))


@pytest.mark.parametrize("overlap", ["another hand", "the played tiles"])
def test_a_tile_in_two_places_is_named_as_the_hands(overlap):
    """R1: a tile is held by one seat or played; a copy of one in a second hand is named as
    such (not as a count of tiles)."""
    state = good_state()
    seat, source = (1, state["hands"][0]) if overlap == "another hand" else (0, state["played"])
    state["hands"][seat] |= source & -source
    with pytest.raises(ValueError, match="match state: hands must be disjoint from each other and "
                                         "from the played tiles"):
        Match.from_state(state)


def test_doubles_before_the_first_tile_are_refused():
    state = Match.new(7, keep_history=False).to_state()
    assert state["placements"] == 0
    state["end_double"] = [True, False, False, False]
    with pytest.raises(ValueError, match="match state: ends must be all closed, with no doubles"):
        Match.from_state(state)


def _numbers_played(match) -> set[int]:
    return {n for t in tiles_of(match.played) for n in (TILE_LOW[t], TILE_HIGH[t])}


def test_an_end_showing_a_number_no_played_tile_has_is_refused():
    """R3: an open end shows a half of a played tile.  West and east both turned to a number no
    played tile shows (the parity of that number's halves still even) is refused."""
    from test_match_state import _a_state_where
    state = _a_state_where(lambda m: m.spinner < 0 and m.ends[WEST] == m.ends[EAST]
                           and len(_numbers_played(m)) < 7)
    match = Match.from_state(state)
    number = min(set(range(7)) - _numbers_played(match))
    state["ends"][WEST] = state["ends"][EAST] = number
    state["last_end_sum"] = end_sum(state["ends"], state["end_double"], state["branch_started"])
    with pytest.raises(ValueError, match="match state: ends must be numbers the played tiles "
                                         "leave open"):
        Match.from_state(state)


def test_a_double_flagged_at_three_ends_is_refused():
    """R5: a double is one tile at one end; three ends showing its number cannot all be it."""
    from test_match_state import _a_state_where

    def three_ends(m):
        return [n for n in range(7) if n != m.spinner and m.ends.count(n) == 3
                and m.played >> DOUBLE_OF[n] & 1]
    state = _a_state_where(lambda m: three_ends(m))
    number = three_ends(Match.from_state(state))[0]
    state["end_double"] = [d or e == number for d, e in zip(state["end_double"], state["ends"])]
    state["last_end_sum"] = end_sum(state["ends"], state["end_double"], state["branch_started"])
    with pytest.raises(ValueError, match="match state: end_double must be one end per double"):
        Match.from_state(state)
