"""Tests from a mutation audit of the search with inference (``sevenrocks_env/agents/inference.py``,
which no earlier audit targeted): each kills a mutant that the existing tests (test_inference.py,
test_inference_agent.py, test_search_audit.py and the spec, hostile-input and name tests) let
live -- a batch with one inconsistent world among good ones, likelihoods replayed in more than
one group of copies, the rebuilt round's refusals and their words (which action, which seat, a
match won on the way), a round past the 100th, ``power`` and ``candidates`` at their bounds, the
weights' power and resampling stream in ``scores_in``, its running report totals and ``seed``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sevenrocks_env import rules
from sevenrocks_env.agents import inference, world_rollouts
from sevenrocks_env.agents.belief import HIDDEN_SEATS, MAX_WORLDS, excluded_tiles
from sevenrocks_env.agents.inference import (MAX_POWER, InferenceSearch, play_log_likelihoods,
                                             replayed_round, resampled, world_weights)
from sevenrocks_env.agents.layout import view_of
from sevenrocks_env.agents.policy_search import PolicySearchAgent
from sevenrocks_env.agents.world_rollouts import Decision
from sevenrocks_env.dealing import deal
from sevenrocks_env.observation import action_mask, decode, encode
from sevenrocks_env.policy import PolicyNet
from sevenrocks_env.public_round import PublicRound, public_round
from sevenrocks_env.tiles import EAST, KNOCK, WEST, encode_action, parse_tile
from batched_helpers import played_with_history
from positions import opponent_wins_next_position, positions_with_a_choice


def _searcher(samples: int = 3, **settings) -> PolicySearchAgent:
    torch.manual_seed(0)
    return PolicySearchAgent(PolicyNet([8]), samples=samples, seed=0, **settings)


def _truth(match: rules.Match) -> tuple[int, int, int]:
    """The real hands of the seat on turn's relative seats 1-3 (the true world)."""
    return tuple(match.hands[(match.turn + k) & 3] for k in HIDDEN_SEATS)


def _played_with_choice(num_envs=6, seed=5, steps=13):
    env, history = played_with_history(num_envs, seed, steps)
    choice = (env.action_mask.sum(1) > 1).nonzero().squeeze(1)
    assert choice.numel() >= 2
    return env, history, choice


def _a_match_with_plays(seed: int = 3, plays: int = 9) -> rules.Match:
    """A match ``plays`` actions into its first round, its seat on turn with a choice."""
    match = rules.Match.new(seed)
    rng = np.random.default_rng(seed)
    while len(match.history[-1].moves) < plays or len(rules.legal_actions(match)) < 2:
        rules.apply_action(match, int(rng.choice(rules.legal_actions(match))))
    return match


# --- play_log_likelihoods ------------------------------------------------------------------

def test_one_world_that_makes_a_real_move_illegal_is_refused_beside_good_ones():
    """The check is that *every* world's replay allows every real move: one bad world among
    true ones must be refused (a check that some world allows it let it through)."""
    env, history = played_with_history(num_envs=8, seed=5, steps=22)
    searcher = _searcher(2)
    for i in range(env.num_envs):
        view, now = decode(env.observation[i].numpy()), env.match(i)
        truth = list(_truth(now))
        for k in range(3):  # a tile of a number relative seat k+1 knocked on, moved to it
            void = excluded_tiles(view.voids[k + 1])
            other = next((j for j in range(3) if j != k and truth[j] & void and truth[k]), None)
            if not void or other is None:
                continue
            given = truth[other] & void & -(truth[other] & void)
            taken = truth[k] & -truth[k]
            bad = list(truth)
            bad[k], bad[other] = truth[k] ^ taken | given, truth[other] ^ given | taken
            with pytest.raises(ValueError, match="a world makes a real move of this round"):
                play_log_likelihoods(searcher, history, env, torch.tensor([i]),
                                     [[tuple(truth), tuple(bad), tuple(truth)]])
            return
    pytest.fail("no seat with a void and a tile to swap in 8 envs")


def test_likelihoods_replayed_in_several_groups_are_those_of_one_group(monkeypatch):
    """More worlds than ``MAX_COPIES`` are replayed in groups of decisions: every group's rows
    are returned, in order (keeping only the last group's lost the others)."""
    env, history, choice = _played_with_choice(num_envs=6, seed=5, steps=13)
    searcher = _searcher()
    rng = np.random.default_rng(3)
    worlds = [searcher.decisions([env.observation[i].numpy()], [env.action_mask[i].numpy()],
                                 [rng], 4)[0].hidden for i in choice.tolist()]
    whole = play_log_likelihoods(searcher, history, env, choice, worlds)
    monkeypatch.setattr(world_rollouts, "MAX_COPIES", 5)  # one decision (4 worlds) a group
    grouped = play_log_likelihoods(searcher, history, env, choice, worlds)
    assert len(grouped) == len(whole) == choice.numel()
    for a, b in zip(grouped, whole):
        np.testing.assert_allclose(a, b, atol=1e-6)
    assert any(row.min() < 0 for row in whole)  # the plays did weigh something


# --- replayed_round's refusals ---------------------------------------------------------------

def test_a_world_of_four_hands_is_refused_naming_how_many():
    match = _a_match_with_plays()
    with pytest.raises(ValueError, match=r"relative seats 1-3, got 4 hands"):
        replayed_round(public_round(match), encode(match, match.turn), "cpu",
                       _truth(match) + (0,))


def test_a_history_the_deal_cannot_start_from_is_blamed_on_the_history():
    """Scores at the target (a match already won, R8) fail ``Match.from_deal``: the error says
    the history does not fit the observation, with from_deal's reason."""
    match = _a_match_with_plays()
    won = public_round(match)._replace(scores=(250, 0))
    with pytest.raises(ValueError, match=r"^inference: the history does not fit the "
                                         r"observation \(.*below the target"):
        replayed_round(won, encode(match, match.turn), "cpu", _truth(match))


def test_an_illegal_history_action_names_the_seat_that_made_it():
    """A knock where the seat could place (R6) is refused naming the action's index and the
    seat on turn at that action, not the seat on turn now."""
    match = _a_match_with_plays(plays=9)
    history = public_round(match)
    index = next(i for i, action in enumerate(history.actions)
                 if action != KNOCK and (len(history.actions) - i) % 4)
    bad = history._replace(actions=history.actions[:index] + (KNOCK,)
                           + history.actions[index + 1:])
    seat = (history.opener + index) % 4
    assert seat != match.turn
    with pytest.raises(ValueError, match=rf"history action {index} \(knock\) is illegal for "
                                         rf"seat {seat} in the round"):
        replayed_round(bad, encode(match, match.turn), "cpu", _truth(match))


def test_plays_that_win_the_match_on_the_way_are_refused_naming_the_action():
    """Seat 1's forced 1|5 after 0|1 brings its partnership to 250 (R5, R8): the match is over
    (not waiting for a deal), and a history with those two plays is refused at action 1."""
    match = opponent_wins_next_position()
    first, second = encode_action(parse_tile("0|1"), WEST), encode_action(parse_tile("1|5"), EAST)
    rules.apply_action(match, first)
    observation = encode(match, 2)  # seat 2's view, which would be on turn after both plays
    world = tuple(match.hands[(2 + k) & 3] for k in HIDDEN_SEATS)
    history = PublicRound(0, (0, 245), (first, second))
    with pytest.raises(ValueError, match=r"history action 1 ends the round"):
        replayed_round(history, observation, "cpu", world)


def test_a_round_past_the_hundredth_is_rebuilt_without_a_round_limit():
    """Scores of -12200 need 101 rounds of deductions before (R7): the rebuilt one-env engine
    has no round limit, so the round loads and the agent plays (a limit of 100 refused it)."""
    hands, opener = deal(9, 101)
    match = rules.Match.from_deal(hands, opener, scores=(-12200, 35), seed=9, round_index=101)
    rng = np.random.default_rng(1)
    while len(match.history[-1].moves) < 5 or len(rules.legal_actions(match)) < 2:
        rules.apply_action(match, int(rng.choice(rules.legal_actions(match))))
    observation, mask = encode(match, match.turn), action_mask(match, match.turn)
    env, _ = replayed_round(public_round(match), observation, "cpu")
    assert env.state.round_index.tolist() == [101]
    agent = InferenceSearch(_searcher(2), power=1.0)
    assert mask[agent.act(observation, mask, history=public_round(match))]


# --- world_weights and resampled -------------------------------------------------------------

def test_world_weights_keep_double_precision_at_large_likelihoods():
    """Log-likelihoods far from 0 still differ by half a nat (float32 rounds -1e7 - 0.5)."""
    weights = world_weights(np.array([-1e7, -1e7 - 0.5]), 1.0)
    assert weights[1] / weights[0] == pytest.approx(np.exp(-0.5))


def test_resampled_worlds_keep_their_decisions_round_budget():
    """A decision whose rollouts may play past the round (``rounds`` 3) keeps that budget after
    resampling (a default of 1 cut its rollouts at the round's end)."""
    match = positions_with_a_choice(1)[0]
    view = view_of(match, match.turn)
    decision = Decision.sample(view, rules.legal_actions(match), 4, np.random.default_rng(0),
                               rounds=3)
    kept, _ = resampled(decision, np.full(4, 0.25), 4, np.random.default_rng(1))
    assert kept.rounds == 3


# --- InferenceSearch's settings --------------------------------------------------------------

def test_power_ten_is_the_largest_taken_and_the_refusal_says_the_range():
    searcher = _searcher(4)
    assert MAX_POWER == 10.0
    assert InferenceSearch(searcher, power=10.0).power == 10.0
    with pytest.raises(ValueError, match=r"must be in \[0, 10\.0\], got 10\.01"):
        InferenceSearch(searcher, power=10.01)


def test_candidates_up_to_max_worlds_and_the_refusal_says_the_range():
    searcher = _searcher(4)
    assert InferenceSearch(searcher, candidates=MAX_WORLDS).candidates == MAX_WORLDS
    with pytest.raises(ValueError, match=rf"candidates must be an int in \[samples = 4, "
                                         rf"{MAX_WORLDS}\], got {MAX_WORLDS + 1}"):
        InferenceSearch(searcher, candidates=MAX_WORLDS + 1)


def test_the_power_is_kept_as_a_plain_float():
    """A NumPy or int power is stored as a Python float, so the name is written as a spec
    writes it (a float32 -0.0 is ``inference=0``, not ``-0.0``)."""
    searcher = _searcher(4)
    agent = InferenceSearch(searcher, power=np.float32(-0.0))
    assert type(agent.power) is float and agent.name.endswith(",inference=0")
    assert type(InferenceSearch(searcher, power=1).power) is float


def test_a_history_of_another_type_is_refused_naming_the_type():
    match = _a_match_with_plays()
    agent = InferenceSearch(_searcher(2))
    with pytest.raises(ValueError, match=r"got tuple$"):
        agent.act(encode(match, match.turn), action_mask(match, match.turn),
                  history=tuple(public_round(match)))


def test_seed_reseeds_the_searchers_streams():
    """``seed(S)`` is the searcher's: its worlds come from a stream seeded S."""
    agent = InferenceSearch(_searcher(2))
    agent.seed(11)
    assert agent.searcher._rng.random() == np.random.default_rng(11).random()


# --- scores_in -------------------------------------------------------------------------------

@pytest.mark.parametrize("power, candidates", [(0.5, None), (2.0, 8)])
def test_scores_are_the_rollouts_weighted_by_the_plays_to_the_power(power, candidates):
    """``scores_in`` is the searcher's scores over the worlds drawn from each decision's
    stream, weighted by ``world_weights(log-likelihoods, power)``; with more candidates, the
    worlds drawn again by those weights from the same stream (:func:`resampled`)."""
    env, history, choice = _played_with_choice(num_envs=6, seed=5, steps=13)
    searcher = _searcher(4)
    agent = InferenceSearch(searcher, power=power, candidates=candidates)

    def streams():
        return [np.random.default_rng(20 + k) for k in range(choice.numel())]

    scores = agent.scores_in(env, choice, streams(), history)
    observations = env.observation[choice].numpy()
    masks = env.action_mask[choice].numpy()

    def expected(p):
        rngs = streams()
        with searcher.own_threads():  # (as scores_in: the same float sums to the last bit)
            return _scores(p, rngs)

    def _scores(p, rngs):
        decisions = searcher.decisions(observations, masks, rngs, agent.candidates)
        logl = play_log_likelihoods(searcher, history, env, choice, [d.hidden for d in decisions])
        weights = [world_weights(row, p) for row in logl]
        if candidates is not None:
            decisions, weights = map(list, zip(*(resampled(d, w, 4, rng)
                                                 for d, w, rng in zip(decisions, weights, rngs))))
        return searcher.scores(observations, masks, decisions, weights)

    assert scores == expected(power)
    assert scores != expected(1.0)  # (the power matters here)


def test_the_report_totals_run_over_calls(monkeypatch):
    """``effective_worlds`` adds ``1 / sum(w^2)`` per decision and ``decisions_weighed`` one per
    decision, over every call: with all weight on one world, one effective world a decision."""
    monkeypatch.setattr(inference, "play_log_likelihoods", lambda s, h, e, envs, worlds: [
        np.array([0.0] + [-1e4] * (len(w) - 1)) for w in worlds])
    env, history, choice = _played_with_choice(num_envs=6, seed=5, steps=13)
    agent = InferenceSearch(_searcher(3), power=1.0)
    for calls in (1, 2):
        agent.scores_in(env, choice, [np.random.default_rng(k) for k in range(choice.numel())],
                        history)
        assert agent.decisions_weighed == calls * choice.numel()
        assert agent.effective_worlds == pytest.approx(calls * choice.numel())
