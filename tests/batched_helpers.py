"""Helpers shared by the batched engine's API tests."""

import pytest
import torch

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
