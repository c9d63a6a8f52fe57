"""Mutation-audit tests for the search agents and the hidden-hand samplers: checks the other
suites left open (each named by what a wrong implementation would get wrong)."""

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from sevenrocks_env import rules
from sevenrocks_env.agents import inference, policy_search
from sevenrocks_env.agents.belief import HandSampler, world_match
from sevenrocks_env.agents.inference import InferenceSearch, resampled, world_weights
from sevenrocks_env.agents.layout import view_of
from sevenrocks_env.agents.policy_search import PolicySearchAgent
from sevenrocks_env.agents.search import SearchAgent
from sevenrocks_env.agents.search_batched import BatchedSearch
from sevenrocks_env.agents.world_rollouts import Decision
from sevenrocks_env.observation import action_mask, encode
from sevenrocks_env.policy import PolicyNet
from batched_helpers import played_with_history
from positions import positions_with_a_choice, random_state, sampled_decisions


# --- belief.HandSampler ----------------------------------------------------------------------

def test_a_view_no_deal_fits_is_refused_not_sampled():
    """Counts add up, but a seat that knocked on every number (R6) holds no tile while its count
    says it holds some: no deal fits.  The sampler must say so, not deal that seat tiles it
    cannot hold (it would: every weight is 0, and the draw falls through to some seat)."""
    match = random_state(3, 18)
    view = view_of(match, match.turn)
    assert view.tile_counts[1] > 0
    voids = list(view.voids)
    voids[1] = 0b1111111
    with pytest.raises(ValueError, match="no deal of the unseen tiles is consistent"):
        HandSampler(dataclasses.replace(view, voids=tuple(voids)))


def test_a_world_from_a_seat_not_on_turn_looks_the_same_from_that_seat():
    """``world_match`` is used for any seat's view (``openspiel.state_from_view`` builds states
    from the view of a seat that is not on turn): the world's seat on turn is the view's, in the
    observer's frame, not always the observer, so the world looks exactly like the view."""
    checked = 0
    for seed, moves in [(3, 18), (5, 9), (8, 30), (11, 4)]:
        match = random_state(seed, moves)
        for k in (1, 2, 3):
            seat = (match.turn + k) & 3
            view = view_of(match, seat)
            assert view.turn == (4 - k) & 3
            world = world_match(view, tuple(match.hands[(seat + j) & 3] for j in (1, 2, 3)))
            assert world.turn == view.turn and view_of(world, 0) == view
            checked += 1
    assert checked == 12


def test_a_sampler_fits_only_views_with_its_counts_and_knocks():
    """``fits`` guards ``resample_hidden`` against a sampler of another view: one with the same
    unseen tiles but other tile counts, or other knocks (a seat knocked since), deals hands the
    seat knows to be wrong, so it must not fit."""
    match = random_state(3, 18)
    view = view_of(match, match.turn)
    sampler = HandSampler(view)
    assert sampler.fits(view)
    counts = list(view.tile_counts)
    assert counts[1] != counts[3]
    counts[1], counts[3] = counts[3], counts[1]
    assert not sampler.fits(dataclasses.replace(view, tile_counts=tuple(counts)))
    voids = list(view.voids)
    voids[2] |= 0b1111111 & ~voids[2]  # the partner shown lacking every number as well
    assert voids[2] != view.voids[2]
    assert not sampler.fits(dataclasses.replace(view, voids=tuple(voids)))
    assert sampler.fits(dataclasses.replace(view, voids=view.voids))


# --- search.SearchAgent ------------------------------------------------------------------------

@pytest.mark.parametrize("rollout", ["random", "Defensive", "", "argmax"])
def test_search_refuses_a_rollout_it_does_not_have(rollout):
    """Only greedy, defensive and heuristic rollouts exist (an unknown name silently played the
    heuristic in the rule engine and failed later, with a KeyError, in the batched arena)."""
    with pytest.raises(ValueError, match="rollout must be one of"):
        SearchAgent(rollout=rollout)


def test_search_defaults_are_the_documented_ones():
    """docs/agents.md: ``search[:samples=64,time_limit=S,rollout=defensive,win_bonus=50]``
    (no time limit unless given: deterministic for a seed)."""
    agent = SearchAgent()
    assert (agent.samples, agent.time_limit, agent.rollout, agent.win_bonus) == (
        64, None, "defensive", 50.0)


def test_search_takes_its_documented_extremes_and_nothing_past_them():
    """``samples`` in [1, MAX_WORLDS] (every action of every world fits the batched searches'
    ``MAX_COPIES`` copies), ``time_limit`` in (0, MAX_TIME_LIMIT] seconds, ``win_bonus`` in
    [0, 1e6]: the extremes are accepted, one step past them (and inf, NaN) refused."""
    from sevenrocks_env.agents.belief import MAX_WORLDS
    from sevenrocks_env.agents.search import MAX_TIME_LIMIT

    assert SearchAgent(samples=MAX_WORLDS).samples == MAX_WORLDS
    assert SearchAgent(time_limit=MAX_TIME_LIMIT).time_limit == MAX_TIME_LIMIT
    assert SearchAgent(win_bonus=1e6).win_bonus == 1e6
    with pytest.raises(ValueError, match="samples must be an int in"):
        SearchAgent(samples=MAX_WORLDS + 1)
    for bad in (MAX_TIME_LIMIT + 1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="time_limit must be in"):
            SearchAgent(time_limit=bad)
    for bad in (1e6 + 1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="win_bonus must be in"):
            SearchAgent(win_bonus=bad)



@pytest.mark.parametrize("rollout", ["defensive", "greedy"])
def test_a_worlds_value_is_the_seats_own_partnership_margin_in_the_real_match(rollout):
    """With the true hidden hands, a world's value of an action is what that action followed by
    the same rollout moves does in the real match, counted for the seat's own partnership: its
    score change minus the other's to the round's end (R5, R7), plus ``win_bonus`` if it wins
    the match (R8; minus if the other does) -- for seats of both teams.  (The batched search is
    held to ``_rollout_value``; this holds ``_rollout_value`` to the real match: a sign or team
    flip would make the search play for the opponents.)"""
    agent = SearchAgent(rollout=rollout, win_bonus=50.0)
    seats, outcomes = set(), set()
    for seed in range(60):
        match = random_state(seed, seed % 45, target=60)  # a small target: wins are common
        if match.over or len(rules.legal_actions(match)) < 2:
            continue
        seat = match.turn
        ours, theirs = rules.team_of(seat), 1 - rules.team_of(seat)
        hidden = tuple(match.hands[(seat + k) & 3] for k in (1, 2, 3))
        world = world_match(view_of(match, seat), hidden)
        for action in rules.legal_actions(match):
            real = match.clone()
            start = real.scores[ours] - real.scores[theirs]
            round_index = real.round_index
            rules.apply_action(real, action)
            while not real.over and real.round_index == round_index:
                rules.apply_action(real, agent._rollout_action(real))
            expected = float(real.scores[ours] - real.scores[theirs] - start)
            if real.winner is not None:
                expected += 50.0 if real.winner == ours else -50.0
                outcomes.add(real.winner == ours)
            assert agent._rollout_value(world.clone(), action) == expected, (seed, action)
        seats.add(seat)
    assert seats == {0, 1, 2, 3} and outcomes == {True, False}  # both teams, won and lost


def test_search_plays_the_action_of_the_best_mean_value_ties_to_the_lower_action(monkeypatch):
    """``choose`` is the legal action whose mean rollout value is highest (for the seat's own
    partnership: the values are margins), ties going to the lower action number -- not the
    lowest value, the first or the last of the best."""
    match, = positions_with_a_choice(1, min_legal=3)
    view, legal = view_of(match, match.turn), rules.legal_actions(match)
    agent = SearchAgent(seed=0, samples=1)
    for values, best in (([1.0, 5.0, -2.0], 1), ([-3.0, -1.0, -1.0], 1), ([4.0, 4.0, 0.0], 0),
                         ([-1.0, -2.0, 0.5], 2)):
        monkeypatch.setattr(agent, "action_values", lambda v, l, values=values: values)
        assert agent.choose(view, legal[:3]) == legal[best], values


# --- search_batched.BatchedSearch ------------------------------------------------------------

@pytest.mark.parametrize("win_bonus, rollout, samples", [
    (0.0, "greedy", 2), (400.0, "greedy", 2), (7.25, "defensive", 3)])
def test_batched_search_counts_the_agents_own_win_bonus(win_bonus, rollout, samples):
    """``search:win_bonus=...`` in the batched arena: the rollout values use the agent's bonus
    (R8), as ``SearchAgent`` does, not the default 50 (``WorldRollouts(win_bonus=B)``: a rollout
    that wins the match adds ``B``)."""
    agent = SearchAgent(samples=samples, win_bonus=win_bonus, rollout=rollout)
    decisions = sampled_decisions(target=60, count=12, samples=samples)  # wins (R8) are common
    expected = [[[agent._rollout_value(world_match(d.view, h), a) for a in d.legal]
                 for h in d.hidden] for d in decisions]
    values = BatchedSearch(agent).world_values(decisions)
    assert [v.tolist() for v in values] == expected
    if win_bonus:  # the bonus was at stake: some rollouts end the match
        assert any(abs(x) >= win_bonus for e in expected for row in e for x in row)
    if win_bonus % 5:  # a bonus no points can make: counted where a rollout won
        assert any(abs(x) > 7 for e in expected for row in e for x in row if x % 5)


def test_batched_search_samples_the_agents_number_of_worlds():
    matches = positions_with_a_choice(3)
    batched = BatchedSearch(SearchAgent(samples=5))
    decisions = batched.decisions([encode(m, m.turn) for m in matches],
                                  [action_mask(m, m.turn) for m in matches],
                                  [np.random.default_rng(k) for k in range(3)])
    assert [len(d.hidden) for d in decisions] == [5, 5, 5]


# --- world_rollouts.Decision ---------------------------------------------------------------

def test_a_decision_without_worlds_is_refused():
    """No world: every value would be the mean of nothing (NaN), and the choice arbitrary."""
    match = positions_with_a_choice(1)[0]
    with pytest.raises(ValueError, match="one deal stream per world"):
        Decision(view_of(match, match.turn), rules.legal_actions(match), [])
    with pytest.raises(ValueError, match="one deal stream per world"):
        Decision(view_of(match, match.turn), rules.legal_actions(match), [], streams=[])


def test_every_action_of_a_world_is_followed_by_the_worlds_own_later_deals():
    """Rollouts past the round (``rounds > 1``): the copies of one world share its deal stream,
    so the same action in the same world plays the same later rounds -- not each copy a deal
    of its own, which would add the luck of later deals to the difference between actions."""
    from sevenrocks_env.agents.world_rollouts import WorldRollouts
    from sevenrocks_env.batched.greedy import greedy_actions

    rollouts = WorldRollouts()
    choose = lambda env, rows: greedy_actions(env.state, env.action_mask, rows)  # noqa: E731
    for d in sampled_decisions(target=250, count=4, samples=3):
        action = d.legal[0]
        twice = Decision(d.view, [action, action], d.hidden, d.streams, rounds=3)
        [values] = rollouts.values([twice], choose)
        assert values[:, 0].tolist() == values[:, 1].tolist()
        [alone] = rollouts.values([Decision(d.view, [action], d.hidden, d.streams, rounds=3)],
                                  choose)
        assert alone[:, 0].tolist() == values[:, 0].tolist()


def test_the_rollout_engines_kept_are_at_most_eight():
    """``WorldRollouts.env`` keeps an engine per (size, target) for the next call, at most 8: a
    long-lived search (a web opponent, an arena) meets many sizes and would keep them all."""
    from sevenrocks_env.agents.world_rollouts import WorldRollouts

    rollouts = WorldRollouts()
    first = rollouts.env(1, 250)
    assert rollouts.env(1, 250) is first
    for size in range(2, 12):
        rollouts.env(size, 250)
        assert len(rollouts._envs) <= 8


# --- policy_search.PolicySearchAgent -------------------------------------------------------

def test_policy_search_defaults_are_the_documented_ones():
    """docs/agents.md: within ``reach`` (60) points of the target the rollouts play on, at most
    ``horizon`` (3) rounds; ``prior`` 5, ``win_bonus`` 50, argmax rollouts, 64 samples."""
    agent = PolicySearchAgent(PolicyNet([8]))
    assert (agent.samples, agent.prior, agent.win_bonus, agent.reach, agent.horizon,
            agent.rollout) == (64, 5.0, 50.0, 60, 3, "argmax")


def test_a_copy_on_another_device_keeps_the_win_bonus(monkeypatch):
    """The batched arena on a GPU plays ``agent.on(device)``: its rollouts must count the agent's
    ``win_bonus`` (R8), not the default 50.  (``meta`` stands for another device, as in
    ``test_policy_search``: the copy is built, not played.)"""
    monkeypatch.setattr(policy_search, "checked_device", torch.device)
    agent = PolicySearchAgent(PolicyNet([8]), samples=2, win_bonus=400.0)
    moved = agent.on("meta")
    assert moved is not agent and moved.win_bonus == 400.0
    assert moved._rollouts.win_bonus == 400.0 and moved._rollouts.device == torch.device("meta")


# --- inference ---------------------------------------------------------------------------

def test_world_weights_survive_likelihoods_far_apart():
    """Log-likelihoods hundreds of nats apart (a few unlikely plays, times ``power`` up to 10)
    must give finite weights: the most likely world 1, the others 0 -- not inf / inf = NaN."""
    weights = world_weights(np.array([0.0, -800.0, -3.0]), 10.0)
    assert np.isfinite(weights).all() and weights.sum() == pytest.approx(1.0)
    assert weights[0] == pytest.approx(1.0) and weights[1] == 0.0


@pytest.mark.parametrize("power", [-1.0, -0.5, 10.5, float("inf")])
def test_inference_refuses_a_power_outside_its_range(power):
    """A negative power would favour the worlds the other seats' plays make *unlikely*."""
    from sevenrocks_env.agents.policy_search import PolicySearchAgent
    searcher = PolicySearchAgent.__new__(PolicySearchAgent)  # its settings only, no network
    searcher.samples, searcher.rollout, searcher.name = 4, "argmax", "search:policy"
    with pytest.raises(ValueError, match=r"inference \(the weights' power\) must be in"):
        InferenceSearch(searcher, power=power)


def test_resampling_is_unbiased():
    """Systematic resampling draws its one offset at random: over many decisions each world is
    drawn ``samples x weight`` times on average.  (A fixed offset of 1/2 always rounds the same
    way: with one sample and weights 0.3/0.7 it would never draw the first world.)"""
    match = positions_with_a_choice(1)[0]
    view = view_of(match, match.turn)
    decision = Decision.sample(view, rules.legal_actions(match), 2, np.random.default_rng(0))
    assert decision.hidden[0] != decision.hidden[1]
    rng, draws, first = np.random.default_rng(1), 4000, 0
    for _ in range(draws):
        kept, shares = resampled(decision, np.array([0.3, 0.7]), 1, rng)
        first += kept.hidden == [decision.hidden[0]]
    spread = 5 * (draws * 0.3 * 0.7) ** 0.5     # 5 standard deviations: ~145
    assert abs(first - 0.3 * draws) < spread


def test_resampling_never_draws_past_the_last_world():
    """Weights that sum to a hair under 1 in floating point (ten worlds of 0.1) and a draw at
    the top of [0, 1): the last point lies past the cumulative sum, and must still draw the last
    world, not an index one past the decision's worlds."""
    match = positions_with_a_choice(1)[0]
    view = view_of(match, match.turn)
    decision = Decision(view, rules.legal_actions(match), HandSampler(view).sample_many(
        np.random.default_rng(0), 10))
    weights = np.full(10, 0.1)
    assert np.cumsum(weights)[-1] < 1.0
    top = SimpleNamespace(random=lambda: np.nextafter(1.0, 0.0))
    kept, shares = resampled(decision, weights, 10, top)
    assert kept.hidden[-1] == decision.hidden[-1]
    assert len(kept.hidden) == len(shares) and shares.sum() == pytest.approx(1.0)


def test_resampling_never_draws_a_world_of_weight_zero():
    """Ten worlds of 0.1 (a hair under 1 in all) and an eleventh of weight 0: the top point
    of a draw at the top of [0, 1) must draw the tenth world, never the weightless one."""
    match = positions_with_a_choice(1)[0]
    view = view_of(match, match.turn)
    decision = Decision(view, rules.legal_actions(match), HandSampler(view).sample_many(
        np.random.default_rng(0), 11))
    assert len(set(map(tuple, decision.hidden))) == 11
    weights = np.append(np.full(10, 0.1), 0.0)
    assert np.cumsum(weights)[-1] < 1.0
    top = SimpleNamespace(random=lambda: np.nextafter(1.0, 0.0))
    kept, shares = resampled(decision, weights, 10, top)
    assert decision.hidden[10] not in kept.hidden
    assert kept.hidden[-1] == decision.hidden[9] and shares.sum() == pytest.approx(1.0)


def test_a_world_that_makes_a_real_knock_illegal_is_refused():
    """A world whose hidden seat holds a tile of a number it knocked on this round (R6: it
    lacked that number then, and no tile is drawn) is inconsistent with the seat's view: the
    replay of the round's plays must refuse it, not weigh a round that could not happen."""
    from sevenrocks_env.agents.belief import HIDDEN_SEATS, excluded_tiles
    from sevenrocks_env.observation import decode

    env, history = played_with_history(num_envs=8, seed=5, steps=22)
    searcher = PolicySearchAgent(PolicyNet([8]), samples=2)
    tried = 0
    for i in range(env.num_envs):
        view, now = decode(env.observation[i].numpy()), env.match(i)
        truth = [now.hands[(now.turn + k) & 3] for k in HIDDEN_SEATS]
        for k in range(3):
            void = excluded_tiles(view.voids[k + 1])
            other = next((j for j in range(3) if j != k and truth[j] & void and truth[k]), None)
            if not void or other is None:
                continue
            given = truth[other] & void & -(truth[other] & void)  # a tile it cannot hold
            taken = truth[k] & -truth[k]
            bad = list(truth)
            bad[k], bad[other] = truth[k] ^ taken | given, truth[other] ^ given | taken
            envs = torch.tensor([i])
            inference.play_log_likelihoods(searcher, history, env, envs, [[tuple(truth)]])
            with pytest.raises(ValueError, match="a world makes a real move of this round "
                                                 "illegal"):
                inference.play_log_likelihoods(searcher, history, env, envs, [[tuple(bad)]])
            tried += 1
    assert tried >= 2


def _played(num_envs=4, seed=5, steps=13):
    """A batched engine after ``steps`` uniform legal moves, its round history, and the envs
    whose seat on turn has a real choice."""
    env, history = played_with_history(num_envs, seed, steps)
    choice = (env.action_mask.sum(1) > 1).nonzero().squeeze(1)
    assert choice.numel() >= 2
    return env, history, choice


def test_inference_weighs_candidates_worlds_then_rolls_out_samples_of_them(monkeypatch):
    """``candidates=12`` over ``samples=3``: 12 worlds are drawn and weighted per decision, and
    the rollouts get at most 3 distinct worlds drawn from them (``resampled``)."""
    weighed, rolled = [], []
    likelihoods, world_values = inference.play_log_likelihoods, PolicySearchAgent.world_values
    monkeypatch.setattr(inference, "play_log_likelihoods", lambda s, h, e, envs, worlds: (
        weighed.extend(len(w) for w in worlds) or likelihoods(s, h, e, envs, worlds)))
    monkeypatch.setattr(PolicySearchAgent, "world_values", lambda self, decisions: (
        rolled.extend(len(d.hidden) for d in decisions) or world_values(self, decisions)))
    env, history, choice = _played()
    searcher = PolicySearchAgent(PolicyNet([8]), samples=3, seed=0)
    agent = InferenceSearch(searcher, power=1.0, candidates=12)
    rngs = [np.random.default_rng(k) for k in range(choice.numel())]
    agent.scores_in(env, choice, rngs, history)
    assert weighed == [12] * choice.numel()
    # the report's running totals: one effective count (1 to 12 worlds) per decision weighed
    assert agent.decisions_weighed == choice.numel()
    assert choice.numel() <= agent.effective_worlds <= 12 * choice.numel()
    assert len(rolled) == choice.numel() and all(1 <= n <= 3 for n in rolled)


def test_inference_with_power_zero_scores_exactly_as_the_plain_search():
    """``power`` 0: every world weighs the same, and the scores are the plain search's to the
    last bit (its mean, not a weighted sum with weights 1/3, which rounds differently)."""
    torch.manual_seed(0)
    env, history, choice = _played(num_envs=8, seed=7, steps=9)
    searcher = PolicySearchAgent(PolicyNet([8]), samples=3, seed=0, prior=0.0)
    inferred = InferenceSearch(searcher, power=0.0).scores_in(
        env, choice, [np.random.default_rng(k) for k in range(choice.numel())], history)
    plain = searcher.action_values_many(
        env.observation[choice].numpy(), env.action_mask[choice].numpy(),
        [np.random.default_rng(k) for k in range(choice.numel())])
    assert inferred == plain
