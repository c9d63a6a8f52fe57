"""``vector_env(compile=True)``: the fused kernels (``sevenrocks_env.batched.kernels``) play
exactly as the eager engine -- same masks, rewards, states, records -- and refuse bad input the
same way (issue 10).  Every test uses one batch size, so the kernels compile once (seconds)."""

import shutil

import pytest
import torch

from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.batched import random_actions
from sevenrocks_env.batched.state import FIELDS
from sevenrocks_env.record import validate

from batched_helpers import first_legal, snapshot

pytestmark = [
    pytest.mark.usefixtures("one_torch_thread"),
    pytest.mark.skipif(shutil.which("g++") is None,
                       reason="torch.compile on the CPU needs a C++ compiler (g++)"),
]

NUM_ENVS = 48


def pair(**settings):
    """The same envs twice, eager and compiled, reset to the same seed."""
    envs = [sevenrocks_v0.vector_env(num_envs=NUM_ENVS, compile=compiled, **settings)
            for compiled in (False, True)]
    for venv in envs:
        venv.reset(seed=2026)
    return envs


def test_compiled_play_equals_eager_step_by_step_with_records():
    eager, fused = pair(target=100, max_rounds=4, records=True, validate=False, reward="shaped")
    assert fused.compiled and not eager.compiled
    generator = torch.Generator().manual_seed(5)
    records = 0
    for step in range(700):  # many rounds and matches: wins, blocks, dominoes, truncations
        assert torch.equal(eager.action_mask, fused.action_mask), step
        if step % 7 == 0:
            assert torch.equal(eager.observation, fused.observation), step
        actions = random_actions(eager.action_mask, generator)
        for a, b in zip(eager.step(actions), fused.step(actions)):
            assert torch.equal(a, b), step
        if step % 100 == 99:
            finished = eager.pop_finished_records()
            assert finished == fused.pop_finished_records()
            for _, record in finished:
                validate(record)
            records += len(finished)
    for name in FIELDS:
        assert torch.equal(getattr(eager.state, name), getattr(fused.state, name)), name
    assert records > 100


def test_compiled_env_refuses_bad_actions_and_changes_nothing():
    for validate_actions in (True, False):
        _, venv = pair(validate=validate_actions)
        for _ in range(3):
            venv.step(first_legal(venv))
        before, mask = snapshot(venv), venv.action_mask.clone()
        for outside in (113, -1):
            actions = first_legal(venv)
            actions[7] = outside
            with pytest.raises(ValueError, match=rf"action {outside} for env 7"):
                venv.step(actions)
        if validate_actions:
            actions = first_legal(venv)
            actions[3] = int((~venv.action_mask[3]).nonzero()[0, 0])
            with pytest.raises(ValueError, match="for env 3"):
                venv.step(actions)
        with pytest.raises(TypeError, match="actions: expected dtype"):
            venv.step(first_legal(venv).int())
        for name, value in before.items():
            assert torch.equal(value, getattr(venv.state, name)), name
        assert torch.equal(mask, venv.action_mask)
        venv.step(first_legal(venv))  # still usable


def test_compile_must_be_a_bool():
    with pytest.raises(TypeError, match="compile must be a bool"):
        sevenrocks_v0.vector_env(num_envs=2, compile="yes")
