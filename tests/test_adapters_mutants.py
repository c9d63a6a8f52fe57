"""Tests written by a mutation audit of the adapters (single_agent, wrappers, torchrl_env,
registration, masked_categorical, rewards): each pins a behaviour that a small change to the
product code left unnoticed by the other tests."""

import numpy as np
import pytest

from sevenrocks_env import rules, sevenrocks_v0
from sevenrocks_env.agents import GreedyAgent, RandomAgent
from sevenrocks_env.single_agent import SingleAgentEnv


# -- single_agent: construction ------------------------------------------------------------------

def test_bytes_opponents_are_one_spec_refused_as_bytes():
    """b"random" is one (bad) spec, not a sequence of six int specs."""
    with pytest.raises(ValueError, match="agent spec must be a string or an Agent, got bytes"):
        SingleAgentEnv(opponents=b"random")
    with pytest.raises(ValueError, match="got bytes"):
        SingleAgentEnv(opponents=b"ab")


@pytest.mark.parametrize("opponents", ["self", ("heuristic", "self")])
def test_self_is_a_partner_not_an_opponent_and_the_message_says_so(opponents):
    """'self' (valid for ``partner``, and the SB3 example's ``--opponents``) was 'unknown agent
    spec' with the list of valid specs, none of them what the user meant."""
    with pytest.raises(ValueError, match="'self' is for the partner only"):
        SingleAgentEnv(opponents=opponents)


def test_a_bad_illegal_action_mode_is_shown():
    with pytest.raises(ValueError, match=r"illegal_action must be one of \('terminate', 'raise'\), "
                                         r"got 'ignore'"):
        SingleAgentEnv(opponents="random", illegal_action="ignore")


@pytest.mark.parametrize("seat", ["Random", "RANDOM", " random"])
def test_seat_random_is_spelled_exactly(seat):
    with pytest.raises(ValueError, match="seat must be 0-3 or 'random'"):
        SingleAgentEnv(opponents="random", seat=seat)


def test_opponent_specs_keep_the_left_right_order_given():
    env = SingleAgentEnv(opponents=("random", "greedy"), seat=1, partner="heuristic")
    assert env.opponent_specs == ("random", "greedy")
    assert env.partner_spec == "heuristic"


class _Named(RandomAgent):
    name = "named-agent"


def test_agent_objects_are_labelled_by_their_name():
    env = SingleAgentEnv(opponents=(_Named(), GreedyAgent()), partner=_Named())
    assert env.opponent_specs == ("named-agent", "greedy")
    assert env.partner_spec == "named-agent"


# -- single_agent: episodes ----------------------------------------------------------------------

def test_step_before_reset_says_to_reset_not_that_a_match_is_over():
    env = SingleAgentEnv(opponents="random")
    with pytest.raises(RuntimeError, match=r"^call reset\(\) before step\(\)$"):
        env.step(0)


def test_a_truncated_match_refuses_further_steps():
    """max_rounds ends the episode (truncated); stepping on is refused as after a win."""
    env = SingleAgentEnv(opponents="random", max_rounds=1)
    obs, _ = env.reset(seed=0)
    truncated = False
    while not truncated:
        obs, _, terminated, truncated, _ = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        assert not terminated
    with pytest.raises(RuntimeError, match="the episode is over"):
        env.step(0)


class _Reader(GreedyAgent):
    needs_history = True

    def act(self, observation, action_mask, history=None):
        return super().act(observation, action_mask)


def test_a_start_without_history_is_refused_for_an_opponent_that_reads_it():
    env = SingleAgentEnv(opponents=_Reader(), seat=0)
    start = rules.Match.new(1, keep_history=False)
    with pytest.raises(ValueError, match="keeps no history"):
        env.reset(options={"match": start})
    env.reset(options={"match": rules.Match.new(1)})  # with its history: accepted


def test_an_illegal_action_of_the_partner_seat_names_that_seat():
    """partner="self": the message names the seat on turn (2), not the learner's seat (0)."""
    env = SingleAgentEnv(opponents="random", seat=0, partner="self", illegal_action="raise")
    obs, info = env.reset(seed=3)
    while info["seat"] != 2:
        obs, _, _, _, info = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
    bad = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    with pytest.raises(ValueError, match="seat 2"):
        env.step(bad)


# -- wrappers ------------------------------------------------------------------------------------

def test_parallel_step_without_the_movers_action_lists_the_keys_given():
    env = sevenrocks_v0.parallel_env()
    observations, _ = env.reset(seed=6)
    mover = next(a for a in env.agents if observations[a]["action_mask"].any())
    other = next(a for a in env.agents if a != mover)
    with pytest.raises(ValueError, match=rf"got \['{other}'\]"):
        env.step({other: 0})


# -- torchrl_env ---------------------------------------------------------------------------------

def test_a_refused_partial_reset_names_the_matches_in_progress():
    pytest.importorskip("torchrl")
    import torch
    from tensordict import TensorDict

    from sevenrocks_env.torchrl_env import SevenRocksTorchRLEnv

    env = SevenRocksTorchRLEnv(12, seed=0)
    env.reset()
    some = torch.tensor([False, True, False, True] + [False] * 8).unsqueeze(-1)
    with pytest.raises(ValueError, match=r"envs \[1, 3\]\)"):
        env.reset(TensorDict({"_reset": some}, batch_size=[12]))
    most = torch.tensor([True] * 11 + [False]).unsqueeze(-1)
    with pytest.raises(ValueError, match=r"envs \[0, 1, 2, 3, 4, 5, 6, 7\] \.\.\.\)"):
        env.reset(TensorDict({"_reset": most}, batch_size=[12]))


# -- registration --------------------------------------------------------------------------------

def _layers(env):
    """The wrapper classes around ``env.unwrapped``, outermost first."""
    layers = []
    while env is not env.unwrapped:
        layers.append(type(env))
        env = env.env
    return layers


def test_gymnasium_make_runs_gymnasiums_env_checker_and_sets_no_step_limit():
    """A match is cut by max_rounds alone (no TimeLimit); the env checker runs."""
    import gymnasium
    from gymnasium.wrappers import PassiveEnvChecker, TimeLimit

    from sevenrocks_env.registration import GYMNASIUM_ID

    env = gymnasium.make(GYMNASIUM_ID, opponents="random")
    assert PassiveEnvChecker in _layers(env)
    assert TimeLimit not in _layers(env)
    assert env.spec.max_episode_steps is None


def test_this_pettingzoo_has_a_registry_and_both_ids_are_in_it():
    import pettingzoo

    from sevenrocks_env.registration import PETTINGZOO_ID, pettingzoo_has_registry

    if not hasattr(pettingzoo, "register"):
        pytest.skip("this PettingZoo has no registry (< 1.27)")
    assert pettingzoo_has_registry()
    assert PETTINGZOO_ID in pettingzoo.aec_registry
    assert PETTINGZOO_ID in pettingzoo.parallel_registry


@pytest.mark.parametrize("kind", ["aec", "parallel"])
def test_pettingzoos_max_cycles_is_refused_by_both_ids(kind):
    """max_cycles would be swallowed silently: a match is cut by max_rounds."""
    pettingzoo = pytest.importorskip("pettingzoo")
    from sevenrocks_env.registration import PETTINGZOO_ID

    if not hasattr(pettingzoo, "make"):
        pytest.skip("this PettingZoo has no registry (< 1.27)")
    with pytest.raises(ValueError, match="no max_cycles: truncate matches with max_rounds"):
        pettingzoo.make(kind, PETTINGZOO_ID, max_cycles=10)


# -- rewards -------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, words", [
    (("WIN",), "got 'WIN'"),
    (("shaped", -1), r"points_scale must be a finite number in \[0, 1e\+06\], got -1"),
    (("shaped", None, float("nan")), "win_reward must be .*, got nan"),
])
def test_reward_setting_errors_show_the_value_given(args, words):
    from sevenrocks_env.rewards import reward_weights

    with pytest.raises(ValueError, match=words):
        reward_weights(*args)


# -- masked_categorical --------------------------------------------------------------------------

def test_a_row_whose_legal_logits_are_all_minus_inf_is_blamed_on_the_logits():
    """Its draw falls on a masked action: the error says the logits are not finite."""
    torch = pytest.importorskip("torch")
    from sevenrocks_env.masked_categorical import MaskedCategorical

    mask = torch.zeros(2, 5, dtype=torch.bool)
    mask[:, [1, 3]] = True
    logits = torch.zeros(2, 5)
    logits[1, [1, 3]] = -float("inf")
    dist = MaskedCategorical(logits, mask)
    for draw in (dist.mode, dist.sample):
        with pytest.raises(ValueError, match=r"row \[1\] .*\(the logits are not finite"):
            draw()


def test_an_int8_mask_as_the_env_gives_it_works_as_a_bool_mask():
    torch = pytest.importorskip("torch")
    from sevenrocks_env.masked_categorical import MaskedCategorical

    mask = torch.tensor([[0, 1, 0, 1], [1, 0, 0, 0]], dtype=torch.int8)
    logits = torch.tensor([[5.0, 0.0, 9.0, 1.0], [0.0, 3.0, 4.0, 5.0]])
    dist = MaskedCategorical(logits, mask)
    assert dist.mode().tolist() == [3, 0]
    assert dist.probs[0, [0, 2]].tolist() == [0.0, 0.0]
    assert float(dist.entropy()[1]) == 0.0
