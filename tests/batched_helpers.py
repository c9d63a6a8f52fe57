"""Helpers shared by the batched engine's tests."""

import pytest
import torch

from sevenrocks_env.batched import VectorEnv
from sevenrocks_env.batched.history import RoundHistory
from sevenrocks_env.batched.state import FIELDS


def first_legal(venv):
    """A deterministic policy that depends only on the env's own state."""
    return venv.action_mask.to(torch.uint8).argmax(1)


def snapshot(venv):
    return {name: getattr(venv.state, name).clone() for name in FIELDS}


def assert_out_of_range_refused(venv, env: int, outside=(113, -1, 10 ** 6)) -> None:
    """Each action outside [0, 112] for ``env`` is a ``ValueError`` naming it, and the state is
    left unchanged."""
    before = snapshot(venv)
    for value in outside:
        actions = first_legal(venv)
        actions[env] = value
        with pytest.raises(ValueError, match=rf"action {value} for env {env} is not in \[0, 112\]"):
            venv.step(actions)
    for name, kept in before.items():
        assert torch.equal(kept, getattr(venv.state, name)), name


def played_with_history(num_envs: int, seed: int, steps: int):
    """A batched engine (target 250, no round limit) after ``steps`` uniform legal moves, with
    its round history (what the inference search reads)."""
    env = VectorEnv(num_envs, target=250, max_rounds=None)
    env.reset(seed=seed)
    history = RoundHistory(env)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        actions = torch.multinomial(env.action_mask.float(), 1, generator=generator).squeeze(1)
        env.step(actions)
        history.record(env, actions)
    return env, history
