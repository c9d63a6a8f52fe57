"""``search`` on the batched engine: worlds, the defensive rollout move, values, the arena.

The batched search (``agents/search_batched.py`` over ``agents/world_rollouts.py``) must be the
``search`` agent, only faster: given the same sampled worlds its values equal
``SearchAgent``'s rule-engine rollouts exactly, world by world and action by action.
"""

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from sevenrocks_env import rules
from sevenrocks_env.agents.belief import HandSampler, world_match
from sevenrocks_env.agents.layout import view_of
from sevenrocks_env.agents.search import SearchAgent, defensive_choice
from sevenrocks_env.agents.search_batched import BatchedSearch
from sevenrocks_env.agents import world_rollouts
from sevenrocks_env.agents.world_rollouts import MAX_COPIES, Decision, WorldRollouts
from sevenrocks_env.arena_batched import evaluate_batched
from sevenrocks_env.batched import BatchState, VectorEnv, layout
from sevenrocks_env.batched.defensive import defensive_actions
from sevenrocks_env.batched.worlds import views_state
from sevenrocks_env.observation import action_mask, encode
from positions import choices_grouped_and_alone, positions_with_a_choice, random_state


def position(seed: int, moves: int, target: int = 250):
    """A random position with a real choice for the seat on turn, or ``None``."""
    match = random_state(seed, moves, target=target)
    if match.over or match.awaiting_deal or len(rules.legal_actions(match)) < 2:
        return None
    return match


def decision(match, samples: int, seed: int) -> Decision:
    view = view_of(match, match.turn)
    return Decision.sample(view, rules.legal_actions(match), samples, np.random.default_rng(seed))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), moves=st.integers(0, 60))
def test_views_state_is_world_match(seed, moves):
    match = random_state(seed, moves)
    if match.over or match.awaiting_deal:
        return
    view = view_of(match, match.turn)
    sampler = HandSampler(view)
    hidden = [sampler.sample(np.random.default_rng(seed + k)) for k in range(3)]
    state = views_state([view], torch.zeros(3, dtype=torch.long), torch.tensor(hidden))
    for row, world in enumerate(hidden):
        expected = world_match(view, world).to_state()
        got = state.match(row, view.target).to_state()
        assert got == expected


def test_views_state_of_a_seat_not_on_turn_is_world_match():
    """The twin of ``world_match`` for any seat's view: the world's seat on turn is the view's
    (relative to the observer), not always the observer."""
    for seed, moves in [(3, 18), (5, 9), (8, 30)]:
        match = random_state(seed, moves)
        for k in (1, 2, 3):
            view = view_of(match, (match.turn + k) & 3)
            assert view.turn != 0
            hidden = HandSampler(view).sample(np.random.default_rng(seed))
            state = views_state([view], torch.zeros(1, dtype=torch.long), torch.tensor([hidden]))
            assert state.match(0, view.target).to_state() == world_match(view, hidden).to_state()


def test_views_state_refuses_indices_and_hands_it_cannot_use():
    """A -1 picked the last view (another seat's world, silently); a list or a length that
    does not match failed inside torch."""
    match = position(3, 20)
    views = [view_of(match, match.turn), view_of(match, (match.turn + 1) % 4)]
    hidden = torch.tensor([HandSampler(views[0]).sample(np.random.default_rng(0))] * 2)
    for index, error, words in (
            (torch.tensor([0, -1]), ValueError, r"view_index must lie in \[0, 1\] \(indices "
                                                r"into the 2 views\)"),
            (torch.tensor([0, 2]), ValueError, r"view_index must lie in \[0, 1\]"),
            ([0, 0], TypeError, "view_index must be a 1-D LongTensor of indices into views, "
                                "got list"),
            (torch.tensor([[0], [0]]), TypeError, "view_index must be a 1-D LongTensor"),
            (torch.tensor([0, 0], dtype=torch.int32), TypeError, "view_index: expected dtype"),
            (torch.tensor([0]), ValueError, r"hidden: expected shape \[1, 3\], got \[2, 3\]")):
        with pytest.raises(error, match=f"views_state: {words}"):
            views_state(views, index, hidden)
    with pytest.raises(TypeError, match="views_state: hidden: expected dtype torch.int64"):
        views_state(views, torch.tensor([0, 0]), hidden.int())
    assert views_state(views, torch.zeros(0, dtype=torch.long),
                       torch.zeros((0, 3), dtype=torch.long)).hands.shape == (0, 4)


def test_views_state_and_the_batched_search_read_a_device_as_the_vector_env_does():
    """``views_state`` compared its tensors' device with ``torch.device(device)``: "cpu:0" (and
    on a GPU plain "cuda", whose tensors are on "cuda:0") refused every tensor made there, so
    ``evaluate_batched("search", ..., device="cpu:0")`` failed; ``VectorEnv`` takes both."""
    match = position(3, 20)
    view = view_of(match, match.turn)
    hidden = torch.tensor([HandSampler(view).sample(np.random.default_rng(0))])
    index = torch.zeros(1, dtype=torch.long)
    expected = views_state([view], index, hidden).match(0, view.target).to_state()
    for device in ("cpu:0", torch.device("cpu", 0)):
        state = views_state([view], index, hidden, device)
        assert state.match(0, view.target).to_state() == expected
        VectorEnv(1, device=device).load_state(state)
        assert state.to(device) is state  # already there: no copy
    played = [evaluate_batched("search:samples=4", "greedy", pairs=2, target=50, device=where)
              for where in ("cpu", "cpu:0")]
    assert [(r.win_rate, r.mean_margin, r.rounds_per_match) for r in played] == \
        [(played[0].win_rate, played[0].mean_margin, played[0].rounds_per_match)] * 2


def test_defensive_actions_are_defensive_choice_on_random_worlds():
    worlds = [m for m in (position(s, s % 50) for s in range(300)) if m is not None]
    env = VectorEnv(len(worlds), validate=False)
    env.reset(seed=0)
    env.load(worlds)
    rows = torch.arange(len(worlds))
    got = defensive_actions(env.state, env.action_mask, rows).tolist()
    assert got == [defensive_choice(m, rules.legal_actions(m)) for m in worlds]
    assert len(worlds) > 150


@pytest.mark.parametrize("rollout", ["defensive", "greedy", "heuristic"])
def test_world_values_equal_the_search_agents_rule_rollouts(rollout):
    """Every (world, action) value equals ``SearchAgent``'s playout in ``rules``: placement points,
    the round's deductions (R7), the win bonus when a partnership reaches the target (R8) --
    target 60 makes wins common -- and no points from the engine's next round."""
    agent = SearchAgent(samples=4, rollout=rollout, win_bonus=50.0)
    batched = BatchedSearch(agent)
    decisions, expected = [], []
    for seed in range(40):
        match = position(seed, seed % 40, target=60 if seed % 2 else 250)
        if match is None:
            continue
        d = decision(match, 4, seed)
        decisions.append(d)
        expected.append([[agent._rollout_value(world_match(d.view, h), a) for a in d.legal]
                         for h in d.hidden])
    values = batched.world_values(decisions)
    assert [v.tolist() for v in values] == expected
    assert any(abs(x) >= 50 for e in expected for row in e for x in row)  # wins were counted


def test_choices_do_not_depend_on_how_decisions_are_grouped():
    agent = SearchAgent(samples=6)
    batched = BatchedSearch(agent)
    matches = [m for m in (position(s, 5 + s % 30) for s in range(20)) if m is not None]
    together, alone = choices_grouped_and_alone(batched.choose_many, matches)
    assert together == alone
    assert all(rules.is_legal(m, a) for m, a in zip(matches, together))


def test_the_choice_is_the_best_mean_value_with_ties_to_the_lower_action():
    agent = SearchAgent(samples=3)
    batched = BatchedSearch(agent)
    batched.world_values = lambda decisions: [np.array([[1.0, 5.0, 5.0], [3.0, 1.0, 1.0]])]
    match = next(m for m in (position(s, 9) for s in range(100))
                 if m is not None and len(rules.legal_actions(m)) == 3)
    legal = rules.legal_actions(match)
    chosen = batched.choose_many([encode(match, match.turn)], [action_mask(match, match.turn)],
                                 [np.random.default_rng(0)])
    assert chosen == [legal[1]]  # means 2, 3, 3: the tie goes to the lower action
    # the values themselves are the means (distillation keeps them as the teacher's values)
    assert batched.action_values_many([encode(match, match.turn)],
                                      [action_mask(match, match.turn)],
                                      [np.random.default_rng(0)]) == [[2.0, 3.0, 3.0]]


def test_one_decision_repeated_past_max_copies_gets_the_same_values_in_every_group():
    """At the real ``MAX_COPIES``: the copies of one decision land in two groups, and each
    group values them alike (the group sizes: ``test_no_group_steps_more_than_max_copies``).  A
    position twelve moves into the round: short rollouts for the ~65,000 copies."""
    match = next(m for m in (position(s, 12) for s in range(50)) if m is not None)
    d = decision(match, 64, 0)
    copies = d.copies
    many = [d] * (MAX_COPIES // copies + 2)          # more than one group
    agent = SearchAgent(samples=64)
    values = BatchedSearch(agent).world_values(many)
    assert len(values) == len(many)
    assert all(np.array_equal(v, values[0]) for v in values)


def test_legal_counts_equal_the_mask_sums():
    env = VectorEnv(64, validate=False)
    env.reset(seed=3)
    for _ in range(20):
        mask = env.action_mask
        assert torch.equal(layout.legal_counts(mask).long(), mask.sum(1))
        env.step(mask.to(torch.int8).argmax(1))


def test_load_state_checks_what_it_is_given():
    env = VectorEnv(4, validate=False)
    with pytest.raises(ValueError, match="BatchState of 4 envs"):
        env.load_state(BatchState(3, "cpu"))
    with pytest.raises(TypeError, match="BatchState of 4 envs on cpu, got dict"):
        env.load_state({})
    # every field's shape and dtype (a [4, 3] 'ends' failed later, deep in the mask kernel)
    for name, value in (("ends", torch.zeros(4, 3, dtype=torch.long)),
                        ("hands", torch.zeros(4, 4, dtype=torch.int32)),
                        ("end_double", torch.zeros(4, 4, dtype=torch.long)),
                        ("matches", None)):
        state = BatchState(4, "cpu")
        setattr(state, name, value)
        with pytest.raises(ValueError, match=f"field '{name}' must be"):
            env.load_state(state)
    with pytest.raises(ValueError, match="deal_streams"):
        env.load_state(BatchState(4, "cpu"), deal_streams=torch.zeros(5, dtype=torch.long))
    with pytest.raises(RuntimeError, match="records"):
        VectorEnv(4, records=True).load_state(BatchState(4, "cpu"))


def test_batched_arena_plays_search_legally_and_the_same_for_any_batch():
    """``search`` in the batched arena: every match's record replays (so every move was legal),
    and the result is the same for any batch, each decision's worlds seeded by its own
    coordinates (pair, game, move)."""
    from sevenrocks_env import record as game_record
    from sevenrocks_env.arena_batched import play_pairs_batched
    from sevenrocks_env.batched_agents import BatchedGreedy, batched_agent
    _, records = play_pairs_batched(batched_agent("search:samples=2"), BatchedGreedy(), seed=4,
                                    first=0, pairs=2, target=60, max_rounds=100, records=True)
    for record in records:
        game_record.validate(record)
    spec = "search:samples=2"
    one = evaluate_batched(spec, "greedy", pairs=3, seed=4, target=60, batch=1)
    three = evaluate_batched(spec, "greedy", pairs=3, seed=4, target=60, batch=3)
    assert one.win_rate == three.win_rate and one.mean_margin == three.mean_margin
    assert one.matches == 6


def test_a_decision_needs_one_deal_stream_per_world():
    match = positions_with_a_choice(1)[0]
    view = view_of(match, match.turn)
    sampler = HandSampler(view)
    rng = np.random.default_rng(0)
    hidden = [sampler.sample(rng), sampler.sample(rng)]
    with pytest.raises(ValueError, match="one deal stream per world"):
        Decision(view, rules.legal_actions(match), hidden, streams=[0])
    with pytest.raises(ValueError, match="one deal stream per world"):
        Decision(view, rules.legal_actions(match), hidden, streams=[0, 1, 2])
    with pytest.raises(ValueError, match="legal actions"):
        Decision(view, [], hidden)


def test_no_group_steps_more_than_max_copies(monkeypatch):
    """``MAX_COPIES``: the most copies stepped together; a longer list of decisions is split into
    groups of at most that many copies, with the same values as one decision at a time."""
    matches = positions_with_a_choice(8)
    decisions = [Decision.sample(view_of(m, m.turn), rules.legal_actions(m), 3,
                                 np.random.default_rng(k)) for k, m in enumerate(matches)]
    limit = max(d.copies for d in decisions) + 1
    assert sum(d.copies for d in decisions) > 2 * limit
    sizes = []

    def choose(env, rows):
        sizes.append(env.num_envs)
        return defensive_actions(env.state, env.action_mask, rows)

    alone = [WorldRollouts().values([d], choose)[0] for d in decisions]
    sizes.clear()
    monkeypatch.setattr(world_rollouts, "MAX_COPIES", limit)
    grouped = WorldRollouts().values(decisions, choose)
    assert sizes and max(sizes) <= limit
    assert all(np.array_equal(a, g) for a, g in zip(alone, grouped))


def test_copy_groups_split_at_the_copy_limit_and_at_a_new_key():
    from sevenrocks_env.agents.world_rollouts import MAX_COPIES, copy_groups
    half = MAX_COPIES // 2
    assert list(copy_groups([half, half, 1, MAX_COPIES + 5, 3])) == [(0, 2), (2, 3), (3, 4), (4, 5)]
    assert list(copy_groups([1, 1, 1, 1], [250, 250, 100, 100])) == [(0, 2), (2, 4)]
    assert list(copy_groups([])) == []
