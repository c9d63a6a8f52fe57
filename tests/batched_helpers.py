"""Helpers shared by the batched engine's API tests."""

import torch

from sevenrocks_env.batched.state import FIELDS


def first_legal(venv):
    """A deterministic policy that depends only on the env's own state."""
    return venv.action_mask.to(torch.uint8).argmax(1)


def snapshot(venv):
    return {name: getattr(venv.state, name).clone() for name in FIELDS}
