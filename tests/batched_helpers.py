"""Helpers shared by the batched engine's tests (and the TorchRL env's, over the batched
engine: ``test_torchrl_env_rollouts.py``, ``_resets``, ``test_features_audit.py``)."""

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


# a low target ends matches within a few dozen steps, so rollouts cross many auto-resets
SHORT = dict(target=25, max_rounds=3)


def masked_random(mask: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    return torch.multinomial(mask.to(torch.float32), 1, generator=generator).squeeze(-1)


def some_matches_done():
    """``(env, done)``: 8 short matches stepped with masked random actions until a step ends
    some but not all of them; ``done`` that step's ``[8, 1]`` flags."""
    from sevenrocks_env.torchrl_env import SevenRocksTorchRLEnv  # (TorchRL: an optional extra)

    env = SevenRocksTorchRLEnv(8, seed=2, **SHORT)
    generator = torch.Generator().manual_seed(0)
    td = env.reset()
    for _ in range(300):
        td["action"] = masked_random(td["action_mask"], generator)
        td = env.step(td)
        done = td["next", "done"]
        if done.any() and not done.all():
            return env, done
        td = td["next"]
    raise AssertionError("no step ended some but not all matches")
