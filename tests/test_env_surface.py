"""The batched engine's surface between steps: the round history across auto-resets, and the
cached mask and observation across reset, load and load_state."""

import pytest
import torch

from sevenrocks_env.batched import VectorEnv, random_actions
from sevenrocks_env.batched.history import RoundHistory

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_a_round_history_restarts_when_a_match_won_in_its_first_round_is_replaced():
    """To 5 points a match is often won in round 0 and replaced by one in round 0 again: the
    round index alone does not change, the match counter does, and the history must restart
    (else the new match's round would hold the old one's actions)."""
    env = VectorEnv(8, target=5, max_rounds=None)
    env.reset(seed=1)
    history = RoundHistory(env)
    generator = torch.Generator().manual_seed(1)
    same_round_index = 0
    for _ in range(60):
        rounds, matches = env.state.round_index.clone(), env.state.matches.clone()
        actions = random_actions(env.action_mask, generator)
        env.step(actions)
        history.record(env, actions)
        replaced = env.state.matches != matches
        same_round_index += int((replaced & (env.state.round_index == rounds)).sum())
        for i in replaced.nonzero().squeeze(1).tolist():
            assert int(history.length[i]) == 0, i
            assert history.public_round(i).scores == (0, 0)
            assert history.public_round(i).opener == int(env.state.opener[i])
        kept = (~replaced & (env.state.round_index == rounds)).nonzero().squeeze(1).tolist()
        for i in kept:  # the round goes on: this step's action was appended
            assert int(history.actions[i, int(history.length[i]) - 1]) == int(actions[i])
    assert same_round_index > 3


def _assert_mask_and_observation_are_of(env, matches):
    """``env``'s mask and observation rows are the rules' legal set and ``encode`` of the seat
    on turn in ``matches``."""
    import numpy as np

    from sevenrocks_env.observation import encode
    from sevenrocks_env.rules import legal_actions

    for i, match in enumerate(matches):
        assert env.action_mask[i].nonzero().squeeze(1).tolist() == legal_actions(match), i
        assert np.array_equal(env.observation[i].numpy(), encode(match, match.turn)), i


def test_reset_load_and_load_state_refresh_a_mask_and_observation_read_before():
    """The mask and observation are cached until the state changes: every way of setting a new
    state must drop them, or an agent acts on the position before it."""
    import random

    from sevenrocks_env.rules import Match, apply_action, legal_actions

    env, other = VectorEnv(3), VectorEnv(3)
    env.reset(seed=0)
    for seed in (5, 6):  # reset: the cache is read first, then refreshed
        _ = env.action_mask, env.observation  # read, so cached
        env.reset(seed=seed)
        _assert_mask_and_observation_are_of(env, [env.match(i) for i in range(3)])
    matches = [Match.new(seed) for seed in (1, 2, 3)]
    rng = random.Random(0)
    for match in matches:
        for _ in range(rng.randrange(1, 9)):
            apply_action(match, rng.choice(legal_actions(match)))
    _ = env.action_mask, env.observation
    env.load(matches)
    _assert_mask_and_observation_are_of(env, matches)
    other.reset(seed=9)
    env.load_state(other.state.take())
    _assert_mask_and_observation_are_of(env, [other.match(i) for i in range(3)])
