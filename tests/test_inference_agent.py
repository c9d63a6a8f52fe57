"""The search with inference as an agent: ``search:policy=...,inference=P`` given the round's
public plays (``history=``) wherever it plays, with the batched arena's choices."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from batched_helpers import played_with_history
from distill_stand_ins import tiny_student

from sevenrocks_env import arena, rules, sevenrocks_v0
from sevenrocks_env.agents import make_agent
from sevenrocks_env.agents.belief import HIDDEN_SEATS, HandSampler
from sevenrocks_env.agents.inference import (InferenceSearch, play_log_likelihoods,
                                             replayed_round)
from sevenrocks_env.agents.policy_search import PolicySearchAgent
from sevenrocks_env.batched_agents import batched_agent, search_rngs
from sevenrocks_env.observation import action_mask, decode, encode
from sevenrocks_env.policy import load_policy
from sevenrocks_env.public_round import public_round
from sevenrocks_env.single_agent import SingleAgentEnv
from training.distill_collect import collect, make_teacher
from training.opponents import OpponentPool, training_opponent

SPEC = "search:policy=shipped,samples=6,inference=1"


@pytest.fixture(scope="module")
def model():
    return load_policy("shipped").model.eval()


def test_the_round_rebuilt_from_its_public_plays_gives_the_batched_likelihoods(model):
    searcher = PolicySearchAgent(model)
    rng = np.random.default_rng(2)
    compared = 0
    for steps in (0, 7, 19, 33):
        env, history = played_with_history(6, 20 + steps, steps)
        observations = env.observation.numpy()
        for i in range(env.num_envs):
            now = env.match(i)
            truth = tuple(now.hands[(now.turn + k) & 3] for k in HIDDEN_SEATS)
            worlds = [truth] + HandSampler(decode(observations[i])).sample_many(rng, 3)
            [batched] = play_log_likelihoods(searcher, history, env, torch.tensor([i]), [worlds])
            one, replayed = replayed_round(history.public_round(i), observations[i], "cpu", truth)
            rebuilt = one.match(0)
            for name in ("hands", "played_by", "ends", "turn", "voids", "scores", "spinner"):
                assert getattr(rebuilt, name) == getattr(now, name), (steps, i, name)
            [alone] = play_log_likelihoods(searcher, replayed, one, torch.tensor([0]), [worlds])
            assert alone == pytest.approx(batched, abs=1e-5)
            compared += 1
    assert compared == 24


@pytest.mark.parametrize("candidates", [None, 12])
def test_the_agent_given_the_plays_chooses_what_it_chooses_in_the_batched_arena(model,
                                                                                candidates):
    agent = InferenceSearch(PolicySearchAgent(model, samples=6), power=1.0,
                            candidates=candidates)
    env, history = played_with_history(8, 5, 13)
    choice = (env.action_mask.sum(1) > 1).nonzero().squeeze(1)
    assert choice.numel() >= 3
    context = {"seed": 9, "coordinate": torch.arange(8) * 3, "moves": torch.arange(8),
               "history": history}
    batched = agent.actions(env, choice, context).tolist()
    alone = []
    for i in choice.tolist():
        agent.searcher._rng = search_rngs(context, torch.tensor([i]))[0]  # the arena's worlds
        alone.append(agent.act(env.observation[i].numpy(), env.action_mask[i].numpy(),
                               history=history.public_round(i)))
    assert alone == batched


def test_act_needs_the_plays_that_lead_to_its_observation(model):
    agent = InferenceSearch(PolicySearchAgent(model, samples=2))
    aec = sevenrocks_v0.env()
    aec.reset(seed=12)
    while True:  # to a real choice with a few plays behind it
        obs = aec.last()[0]
        history = aec.unwrapped.public_round()
        if obs["action_mask"].sum() > 1 and len(history.actions) >= 6:
            break
        aec.step(int(np.flatnonzero(obs["action_mask"])[-1]))
    observation, mask = obs["observation"], obs["action_mask"]
    assert mask[agent.act(observation, mask, history=history)]
    with pytest.raises(ValueError, match="reads the round's plays"):
        agent.act(observation, mask)
    with pytest.raises(ValueError, match="reads the round's plays"):
        agent.act(observation, mask, history=tuple(history))
    not_this_observation = "does not lead to this observation"
    wrong = [
        (history._replace(actions=history.actions[:-1]), "is illegal"),  # another seat's turn
        (history._replace(actions=history.actions[:-4]), not_this_observation),  # earlier
        (history._replace(scores=(history.scores[0] + 5, history.scores[1])),
         not_this_observation),
        (history._replace(scores=(300, 0)), "below the target"),  # at the target: won already
        (history._replace(actions=(rules.KNOCK,) * 4), r"action 0 \(knock\) is illegal"),
        (history._replace(actions=(113,)), "must be an int"),       # not an action
    ]
    for bad, words in wrong:
        with pytest.raises(ValueError, match=words):
            agent.act(observation, mask, history=bad)
    world = HandSampler(decode(observation)).sample_many(np.random.default_rng(1), 1)[0]
    with pytest.raises(ValueError, match="relative seats 1-3"):
        replayed_round(history, observation, "cpu", world + (0,))
    # (another opener with the same plays is the same round seen from other seat numbers: the
    # view is seat-relative, so it cannot be told apart, and it weighs the worlds the same)


def test_plays_that_end_the_round_on_the_way_are_refused(model):
    """At a seat's last tile, with a choice of ends: the plays so far and then that tile (a
    domino, R7) and three more moves come back to the same seat, past the round's end."""
    agent = InferenceSearch(PolicySearchAgent(model, samples=2))
    rng = np.random.default_rng(0)
    for seed in range(200):
        aec = sevenrocks_v0.env()
        aec.reset(seed=seed)
        while aec.agents:
            obs = aec.last()[0]
            mask = obs["action_mask"]
            seat = aec.unwrapped.match.turn
            if mask.sum() > 1 and aec.unwrapped.match.hands[seat].bit_count() == 1:
                history = aec.unwrapped.public_round()
                past_the_end = history._replace(
                    actions=history.actions + (int(np.flatnonzero(mask)[0]),) + (rules.KNOCK,) * 3)
                with pytest.raises(ValueError, match="ends the round"):
                    agent.act(obs["observation"], mask, history=past_the_end)
                return
            aec.step(int(rng.choice(np.flatnonzero(mask))))
    pytest.fail("no seat with a choice at its last tile in 200 matches")


def test_it_plays_after_rounds_of_deductions(model):
    """A partnership below -120 (one round's most, R7) has played rounds before this one: the
    rebuilt round is given a round number its scores allow (the view has none)."""
    agent = InferenceSearch(PolicySearchAgent(model, samples=2))
    match = rules.Match.from_deal(rules.deal(9, 3)[0], 1, scores=(-130, 35), seed=9, round_index=3)
    while len(rules.legal_actions(match)) < 2 or len(match.history[-1].moves) < 3:
        rules.apply_action(match, rules.legal_actions(match)[0])
    history = public_round(match)
    assert history.scores == (-130, 35)
    mask = action_mask(match, match.turn)
    assert mask[agent.act(encode(match, match.turn), mask, history=history)]


def test_a_forced_move_needs_no_history(model):
    agent = InferenceSearch(PolicySearchAgent(model, samples=2))
    match = rules.Match.new(0)
    while len(rules.legal_actions(match)) > 1:
        rules.apply_action(match, rules.legal_actions(match)[0])
    assert agent.act(encode(match, match.turn), action_mask(match, match.turn)) == \
        rules.legal_actions(match)[0]


def test_the_spec_builds_the_search_with_inference():
    agent = make_agent("search:policy=shipped,samples=4,inference=0.5,candidates=8", seed=3)
    assert isinstance(agent, InferenceSearch) and agent.needs_history
    assert (agent.power, agent.candidates, agent.searcher.samples) == (0.5, 8, 4)
    assert agent.name == "search:policy=shipped,samples=4,inference=0.5,candidates=8"
    assert batched_agent("search:policy=shipped,samples=4,inference=0.5").power == 0.5
    for bad, words in (("inference=11", "power"), ("candidates=8", "goes with inference"),
                       ("inference=0.5,rollout=sample", "argmax"),
                       ("inference=0.5,candidates=2", "candidates")):
        with pytest.raises(ValueError, match=words):
            make_agent(f"search:policy=shipped,samples=4,{bad}")


def test_it_plays_whole_matches_in_the_unbatched_arena():
    result = arena.evaluate("search:policy=shipped,samples=2,inference=0.5", "greedy", pairs=1,
                            seed=4, target=30)
    assert result.pairs == 1 and result.rounds_per_match >= 1
    assert result.seconds_per_decision[0] > 0


def test_the_trainer_refuses_it_as_an_opponent():
    with pytest.raises(ValueError, match="round's plays"):
        training_opponent(SPEC)
    with pytest.raises(ValueError, match="round's plays"):  # a pool built in code, too
        OpponentPool([SPEC], load_policy("shipped").model)


def test_a_single_agent_env_with_it_refuses_a_start_without_history():
    env = SingleAgentEnv(opponents=SPEC)
    start = rules.Match.from_state(rules.Match.new(3).to_state())  # no history log
    with pytest.raises(ValueError, match="keeps no history"):
        env.reset(seed=1, options={"match": start})


def test_it_teaches_a_distillation_with_the_round_history_of_every_env():
    """With ``inference=0`` its labels are the plain search's, value for value (the same worlds,
    uniform weights); with ``inference=1`` the plays weigh the worlds and the values change;
    and a span of the envs labels what the whole collection labels there."""
    def labels(spec, first_env=0, num_envs=6):
        return collect(tiny_student(), make_teacher(spec), 40 * num_envs // 6,
                       num_envs=num_envs, seed=8, first_env=first_env, log=lambda *_: None)

    plain = labels("search:policy=shipped,samples=3")
    uniform = labels("search:policy=shipped,samples=3,inference=0")
    weighted = labels("search:policy=shipped,samples=3,inference=1")
    for key in ("observation", "action", "values"):
        np.testing.assert_array_equal(uniform[key], plain[key])
    np.testing.assert_array_equal(weighted["observation"], plain["observation"])
    assert not np.array_equal(weighted["values"], plain["values"])
    span = labels("search:policy=shipped,samples=3,inference=1", first_env=3, num_envs=3)
    theirs = weighted["values"][(weighted["match"] >> 32) >= 3]
    shared = min(len(theirs), len(span["values"]))
    assert shared >= 15
    np.testing.assert_allclose(span["values"][:shared], theirs[:shared], atol=1e-3)  # batch bits


def test_the_inference_search_names_what_it_takes_and_writes_no_minus_zero():
    with pytest.raises(TypeError, match="searches with a PolicySearchAgent, got 'shipped'"):
        InferenceSearch("shipped", 0.5)
    agent = make_agent("search:policy=shipped,inference=-0.0")
    assert agent.name == "search:policy=shipped,inference=0"


def test_the_inference_search_refuses_the_plain_search_for_what_it_is():
    with pytest.raises(TypeError, match="searches with a PolicySearchAgent, got <SearchAgent>"):
        InferenceSearch(make_agent("search"), 0.5)
