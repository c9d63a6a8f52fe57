"""Every peer library's own environment checker, run as its users run it (issue: first impressions).

Gymnasium ``check_env`` and SB3 ``check_env`` on the registered single-agent id; PettingZoo's
``api_test``, ``parallel_api_test``, ``seed_test``, ``parallel_seed_test`` and ``render_test``;
TorchRL's ``check_env_specs`` on ``PettingZooWrapper(sevenrocks_v0.env(), use_mask=True)`` (skipped
cleanly where torchrl is not installed).  RLlib's pre-checks run in ``tests/test_rllib.py`` (their
own venv).  Warnings are errors here, except the ones listed with the reason they do not apply.
"""

import warnings

import gymnasium
import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, render_test, seed_test

from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.registration import GYMNASIUM_ID

# PettingZoo's api_test warns for every env whose observation is not a bare array unless the env
# is one of its own classic games, which observe exactly this {"observation", "action_mask"}
# Dict (chess, connect four, ...); the Dict is the documented way to give an action mask.
PETTINGZOO_DICT_OBSERVATION_WARNINGS = (
    "Observation space for each agent probably should be gymnasium.spaces.box or "
    "gymnasium.spaces.discrete",
    "Observation is not a NumPy array",
)


def single_agent(**kwargs):
    kwargs = {"opponents": "heuristic", "seat": 0, "partner": "self", **kwargs}
    return gymnasium.make(GYMNASIUM_ID, **kwargs)


def messages(caught):
    return [str(w.message) for w in caught]


@pytest.fixture
def no_warnings():
    """Collect every warning; the test asserts the list it gets back is empty (or explained)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


# -- Gymnasium / SB3 -------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [{}, {"reward": "points"}, {"reward": "shaped"},
                                    {"seat": "random", "partner": "random", "skip_forced": True}])
def test_gymnasium_check_env(kwargs, no_warnings):
    from gymnasium.utils.env_checker import check_env

    env = single_agent(**kwargs)
    check_env(env.unwrapped)
    assert messages(no_warnings) == []


def test_gymnasium_check_env_on_the_made_env(no_warnings):
    """As a user calls it on ``gymnasium.make``'s result: the only remark is Gymnasium's own
    advice to pass the unwrapped env (its wrappers, not ours)."""
    from gymnasium.utils.env_checker import check_env

    check_env(single_agent())
    assert all("different from the unwrapped version" in m for m in messages(no_warnings))


def test_sb3_check_env(no_warnings):
    env_checker = pytest.importorskip("stable_baselines3.common.env_checker",
                                      reason="needs the [sb3] extra")
    env_checker.check_env(single_agent().unwrapped, warn=True)
    assert messages(no_warnings) == []


def test_gymnasium_checkers_step_random_actions_into_a_clean_end():
    """What the checkers do: random (mostly illegal) actions end episodes, never crash."""
    env = single_agent().unwrapped
    env.action_space.seed(0)
    ends = 0
    for seed in range(20):
        env.reset(seed=seed)
        while True:
            _, reward, terminated, truncated, info = env.step(env.action_space.sample())
            if terminated or truncated:
                ends += info.get("illegal_action", False)
                break
    assert ends > 0


# -- PettingZoo ------------------------------------------------------------------------------


def only_dict_observation_warnings(caught):
    unexplained = [m for m in messages(caught)
                   if not any(m.startswith(ok) for ok in PETTINGZOO_DICT_OBSERVATION_WARNINGS)]
    assert unexplained == []


@pytest.mark.parametrize("make", [sevenrocks_v0.env, sevenrocks_v0.raw_env])
def test_pettingzoo_api_test(make, no_warnings):
    api_test(make(), num_cycles=1000)
    only_dict_observation_warnings(no_warnings)


def test_pettingzoo_parallel_api_test(no_warnings):
    parallel_api_test(sevenrocks_v0.parallel_env(), num_cycles=1000)
    assert messages(no_warnings) == []


def test_pettingzoo_seed_test(no_warnings):
    seed_test(sevenrocks_v0.env, num_cycles=500)
    seed_test(lambda: sevenrocks_v0.env(reward="shaped", target=60), num_cycles=500)
    assert messages(no_warnings) == []


def test_pettingzoo_parallel_seed_test(no_warnings):
    parallel_seed_test(sevenrocks_v0.parallel_env, num_cycles=500)
    assert messages(no_warnings) == []


def masked_parallel_run(seed: int) -> list:
    """One whole match of the parallel view, the mover's action drawn from its seeded space under
    its mask: ``parallel_seed_test`` draws without the mask, so its first action is almost always
    illegal and the match ends after one step."""
    env = sevenrocks_v0.parallel_env()
    observations, _ = env.reset(seed=seed)
    for number, agent in enumerate(env.possible_agents):
        env.action_space(agent).seed(seed + number)
    seen = []
    while env.agents:
        actions = {agent: env.action_space(agent).sample(observations[agent]["action_mask"])
                   if observations[agent]["action_mask"].any() else 0 for agent in env.agents}
        observations, rewards, terminations, truncations, _ = env.step(actions)
        seen.append((actions, rewards, terminations, truncations,
                     {agent: obs["observation"].tobytes() for agent, obs in observations.items()}))
    return seen


def test_the_parallel_view_is_deterministic_over_whole_matches():
    first = masked_parallel_run(3)
    assert len(first) > 100 and first == masked_parallel_run(3) != masked_parallel_run(4)


def test_pettingzoo_render_test(capsys, no_warnings):
    render_test(sevenrocks_v0.env)
    assert "Seven Rocks" in capsys.readouterr().out  # the "human" mode printed the table
    assert messages(no_warnings) == []


# -- TorchRL ---------------------------------------------------------------------------------


def test_torchrl_check_env_specs_on_the_pettingzoo_wrapper():
    pytest.importorskip("torchrl", reason="needs torchrl (the [torchrl] extra)")
    from torchrl.envs import PettingZooWrapper
    from torchrl.envs.utils import check_env_specs

    # TorchRL warns that it is "tested using [PettingZoo] 1.24.3": a note about its own test
    # matrix, not about this env (1.24.3 is also our lower bound, tests/test_adapters_compat.py)
    env = PettingZooWrapper(sevenrocks_v0.env(), use_mask=True, seed=0)
    check_env_specs(env, seed=0)
    rollout = env.rollout(200)
    # every seat's observation, as TorchRL saw it, lies in the declared bounds
    for group in env.group_map:
        obs = rollout[group, "observation", "observation"]
        spec = env.full_observation_spec[group, "observation", "observation"]
        assert spec.is_in(obs[0]) and np.isfinite(spec.space.low.numpy()).all()


def test_torchrl_pettingzoo_wrapper_with_a_seed_is_reproducible():
    """``PettingZooWrapper(seed=s)`` resets the env once with ``s``, then without a seed: the env
    must take those resets' seeds from ``s`` (tests/test_env_seeding.py) for two runs to agree."""
    pytest.importorskip("torchrl", reason="needs torchrl (the [torchrl] extra)")
    import torch
    from torchrl.envs import PettingZooWrapper

    def run():
        env = PettingZooWrapper(sevenrocks_v0.env(target=20), use_mask=True, seed=0)
        torch.manual_seed(0)  # the rollout's random actions
        return env.rollout(100)

    first, second = run(), run()
    for group in first["next"].keys():
        if group in ("done", "terminated", "truncated"):
            continue
        assert torch.equal(first[group, "observation", "observation"],
                           second[group, "observation", "observation"])
