"""Mutation audit (second part) of ``search:policy``, the world rollouts, the batched ``search``
and ``views_state``: tests for what the existing tests left open (each kills a mutant that
survived them)."""

import dataclasses

import numpy as np
import pytest
import torch

from sevenrocks_env.agents.policy_search import PolicySearchAgent
from sevenrocks_env.agents.world_rollouts import Decision, WorldRollouts
from sevenrocks_env.batched.greedy import greedy_actions
from sevenrocks_env.policy import PolicyNet
from sevenrocks_env.observation import action_mask, encode
from positions import positions_with_a_choice, sampled_decisions


def _greedy(env, rows):
    return greedy_actions(env.state, env.action_mask, rows)


@pytest.mark.parametrize("horizon", [101, 1000])
def test_policy_search_refuses_a_horizon_above_100(horizon):
    """docs: ``horizon`` is an int in [1, 100] (the error says so); 100 itself is taken."""
    with pytest.raises(ValueError, match=r"^search:policy: horizon must be an int in \[1, 100\], "
                                         rf"got {horizon}$"):
        PolicySearchAgent(PolicyNet([8]), horizon=horizon)
    assert PolicySearchAgent(PolicyNet([8]), horizon=100).horizon == 100


def test_policy_search_names_a_network_it_was_given_and_not_the_shipped_one():
    """The arena's tables tell the agents apart by name: its spec, the network it was given
    (``net`` for a PolicyNet object) and every parameter that is not the default."""
    assert PolicySearchAgent("shipped", samples=2).name == "search:policy=shipped,samples=2"
    assert PolicySearchAgent(PolicyNet([8]), samples=2).name == "search:policy=net,samples=2"


@pytest.mark.parametrize("spec", [
    "search", "search:samples=8,rollout=greedy,win_bonus=0", "search:time_limit=0.5",
    "search:samples=64,rollout=defensive", "search:policy=shipped",
    "search:policy=shipped,samples=16,prior=1,win_bonus=10,reach=0,horizon=2,threads=2",
    "search:policy=shipped,samples=4,inference=0.5,candidates=8",
    "search:policy=shipped,samples=4,inference=0.1234567"])  # (:g wrote 0.123457: two agents)
def test_a_search_agent_s_name_is_its_canonical_spec(spec):
    """An agent object in the arena was labelled by a name that was its class's default agent
    (``search`` for samples=8 and greedy rollouts) or no spec at all (``search:policy``)."""
    from sevenrocks_env.agents import make_agent
    from sevenrocks_env.agents.spec_text import canonical_spec
    assert make_agent(spec).name == canonical_spec(spec)


def test_a_subclass_s_own_name_is_kept():
    """The constructors' spec names hid a subclass's ``name`` attribute, the label docs/agents.md
    tells users to give an Agent object: two different agents shared one label."""
    from sevenrocks_env.agents.search import SearchAgent

    class MySearch(SearchAgent):
        name = "my-search"

    class MyPolicySearch(PolicySearchAgent):
        name = "my-policy-search"

    assert MySearch(samples=8).name == "my-search"
    assert MyPolicySearch(PolicyNet([8]), samples=2).name == "my-policy-search"


def test_policy_search_chooses_nothing_for_no_decisions():
    """``choose_many`` of no decisions is an empty list (the batched arena may have none for
    this agent in a step), not a forward pass over an empty batch."""
    agent = PolicySearchAgent(PolicyNet([8]), samples=2, seed=0)
    assert agent.choose_many([], [], []) == []


def test_decisions_to_different_targets_are_never_rolled_out_together():
    """A group of copies shares one engine and so one target: decisions of matches to different
    targets (R8: the win, and its bonus, come at the target) go to separate groups, and each
    gets the values it gets alone."""
    rollouts = WorldRollouts(win_bonus=50.0)
    small = sampled_decisions(target=60, count=4, samples=3)  # wins (R8) are common
    big = [Decision(dataclasses.replace(d.view, target=1000), d.legal, d.hidden, d.streams)
           for d in small]
    alone_small = rollouts.values(small, _greedy)
    alone_big = rollouts.values(big, _greedy)
    assert any(not np.array_equal(a, b) for a, b in zip(alone_small, alone_big))
    for mixed, expected in ((small + big, alone_small + alone_big),
                            (big + small, alone_big + alone_small)):
        got = rollouts.values(mixed, _greedy)
        assert all(np.array_equal(g, e) for g, e in zip(got, expected))


def test_a_worlds_later_rounds_are_dealt_from_its_own_stream():
    """Past the round (``rounds > 1``) each world plays its later deals from its own stream:
    one world given two different streams plays two different futures, the same stream twice
    the same one."""
    rollouts = WorldRollouts()
    differ = 0
    for d in sampled_decisions(target=250, count=4, samples=2):
        world = d.hidden[0]
        same = Decision(d.view, d.legal, [world, world], [d.streams[0]] * 2, rounds=3)
        two = Decision(d.view, d.legal, [world, world], d.streams, rounds=3)
        [same_values], [two_values] = rollouts.values([same], _greedy), rollouts.values(
            [two], _greedy)
        assert np.array_equal(same_values[0], same_values[1])
        assert np.array_equal(two_values[0], same_values[0])
        differ += not np.array_equal(two_values[0], two_values[1])
    assert differ >= 3


def test_threads_none_leaves_torchs_own_setting(monkeypatch):
    """``threads=None`` leaves torch's setting as the caller has it, during the decision too
    (not the default 1 thread, and no ``set_num_threads(None)``)."""
    agent = PolicySearchAgent(PolicyNet([8]), samples=1, seed=0, threads=None)
    match, = positions_with_a_choice(1)
    obs, mask = encode(match, match.turn), action_mask(match, match.turn)
    seen, world_values = [], agent.world_values
    monkeypatch.setattr(agent, "world_values",
                        lambda decisions: seen.append(torch.get_num_threads())
                        or world_values(decisions))
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        agent.action_values(obs, mask)
        assert seen == [2] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_sampled_rollouts_draw_moves_from_the_policy():
    """``rollout="sample"`` draws the rollout moves from the policy (reproducibly for a seed):
    over a near-uniform network its rollouts differ from the argmax ones."""
    torch.manual_seed(0)
    net = PolicyNet([8])
    decisions = sampled_decisions(target=250, count=3, samples=4)
    values = {}
    for rollout in ("argmax", "sample", "sample again"):
        agent = PolicySearchAgent(net, samples=4, seed=3, rollout=rollout.split()[0])
        values[rollout] = agent.world_values(decisions)
    assert all(np.array_equal(a, b) for a, b in zip(values["sample"], values["sample again"]))
    assert any(not np.array_equal(a, b) for a, b in zip(values["argmax"], values["sample"]))
