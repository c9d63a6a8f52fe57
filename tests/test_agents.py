"""Baseline agents: legality, greedy's choice (R5 examples), search's information set, specs."""

import dataclasses
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from sevenrocks_env import rules
from sevenrocks_env.agents import Agent, GreedyAgent, SearchAgent, make_agent
from sevenrocks_env.agents.belief import HandSampler, excluded_tiles, world_match
from sevenrocks_env.agents.layout import LookaheadLayout, points_after, view_of
from sevenrocks_env.driver import agent_action
from sevenrocks_env.observation import action_mask, decode, encode
from sevenrocks_env.tiles import (
    EAST, KNOCK, NORTH, NUM_ACTIONS, TILE_PIPS, WEST, encode_action, mask_of, parse_tile, tiles_of,
)
from positions import positions_with_a_choice, random_state, two_deals_one_view

SPECS = ["random", "greedy", "heuristic", "search:samples=2", "search:samples=2,rollout=greedy",
         "search:samples=1,rollout=heuristic"]


def points_by_action(match: rules.Match) -> dict[int, int]:
    """Points of every legal action, by actually playing it on a clone (the rules' answer)."""
    out = {}
    for action in rules.legal_actions(match):
        clone = match.clone()
        out[action] = rules.apply_action(clone, action)
    return out


@pytest.mark.parametrize("spec, alone", [("bot=heuristic", "'heuristic'"),
                                         ("shipped=ckpt:shipped", "'ckpt:shipped'")])
def test_a_display_name_outside_the_arena_says_where_it_belongs(spec, alone):
    with pytest.raises(ValueError, match="names an agent in `sevenrocks arena`") as error:
        make_agent(spec)
    assert f"give the spec alone ({alone})" in str(error.value)
    with pytest.raises(ValueError, match="valid specs: "):  # no name: the list of specs
        make_agent("minimax")


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), moves=st.integers(0, 60))
def test_agents_only_choose_legal_actions(seed, moves):
    match = random_state(seed, moves)
    if match.over:
        return
    seat = match.turn
    obs, mask = encode(match, seat), action_mask(match, seat)
    for spec in SPECS:
        action = make_agent(spec, seed=seed).act(obs, mask)
        assert rules.is_legal(match, action), (spec, action, rules.legal_actions(match))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), moves=st.integers(0, 60))
def test_view_of_equals_decoded_observation(seed, moves):
    match = random_state(seed, moves)
    if match.over:
        return
    for seat in range(4):
        assert view_of(match, seat) == decode(encode(match, seat))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), moves=st.integers(0, 60))
def test_layout_lookahead_matches_the_rules(seed, moves):
    match = random_state(seed, moves)
    if match.over:
        return
    layout = LookaheadLayout.of(view_of(match, match.turn))
    for action, points in points_by_action(match).items():
        assert points_after(layout, action) == points


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), moves=st.integers(0, 60))
def test_greedy_picks_a_maximal_points_move_then_the_heaviest_tile(seed, moves):
    match = random_state(seed, moves)
    if match.over:
        return
    points = points_by_action(match)
    action = GreedyAgent().act(encode(match, match.turn), action_mask(match, match.turn))
    best = max(points.values())
    assert points[action] == best
    if action != KNOCK:
        heaviest = max(TILE_PIPS[a >> 2] for a, p in points.items() if p == best)
        assert TILE_PIPS[action >> 2] == heaviest


def position(played: list[tuple[str, int]], hand: list[str]) -> rules.Match:
    """Seats play ``played`` in turn from seat 0; the next seat then holds ``hand`` (+ filler)."""
    tiles = [parse_tile(t) for t, _ in played]
    mover = len(played) % 4
    hands = [[] for _ in range(4)]
    for i, t in enumerate(tiles):
        hands[i % 4].append(t)
    hands[mover] += [parse_tile(t) for t in hand]
    rest = [t for t in range(28) if t not in tiles and t not in hands[mover]]
    for seat in [mover] + [s for s in range(4) if s != mover]:
        while len(hands[seat]) < 7:
            hands[seat].append(rest.pop(0) if seat != mover else rest.pop())
    match = rules.Match.from_deal([mask_of(h) for h in hands], opener=0)
    for tile, slot in played:
        rules.apply_action(match, encode_action(parse_tile(tile), slot))
    assert match.turn == mover
    return match


@pytest.mark.parametrize("played, hand, expected, points", [
    # docs/rules.md example A step 3: 4|4 on the 4 end scores spinner 2 + 8 = 10
    ([("1|4", WEST), ("1|1", WEST)], ["4|4", "2|4"], ("4|4", EAST), 10),
    # example A step 5: 1|2 on the spinner's line B scores 5
    ([("1|4", WEST), ("1|1", WEST), ("4|4", EAST), ("3|4", EAST)], ["1|2", "1|6"],
     ("1|2", WEST), 5),
    # example C step 4: 3|5 on a branch scores 5 once the spinner is internal
    ([("5|5", WEST), ("0|5", WEST), ("2|5", EAST)], ["3|5", "0|1"], ("3|5", NORTH), 5),
    # example D step 2: the spinner 6|6 at the end of the line scores 3 + 12 = 15
    ([("3|6", WEST)], ["6|6", "1|6", "0|3"], ("6|6", EAST), 15),
])
def test_greedy_on_rules_examples(played, hand, expected, points):
    match = position(played, hand)
    assert points_by_action(match)[encode_action(parse_tile(expected[0]), expected[1])] == points
    action = GreedyAgent().act(encode(match, match.turn), action_mask(match, match.turn))
    assert points_by_action(match)[action] == points


def test_greedy_prefers_heavier_tile_on_equal_points():
    # after 1|4 west (sum 5), 4|6 east gives 1+6=7 and 0|4 gives 1+0=1: neither scores; 4|6 heavier
    match = position([("1|4", WEST)], ["0|4", "4|6"])
    action = GreedyAgent().act(encode(match, match.turn), action_mask(match, match.turn))
    assert action >> 2 == parse_tile("4|6")


@pytest.mark.parametrize("seed, moves", [(1, 0), (2, 5), (3, 9), (4, 14), (7, 45)])
def test_search_sees_only_the_observation(seed, moves):
    """Asked as every driver asks, the search answers alike in two deals its seat cannot tell
    apart (``two_deals_one_view``: other hidden tiles, dealt and held, the same public round):
    what a driver hands an agent is the same for both, and the sampled worlds too."""
    match, twin = two_deals_one_view(seed, moves)
    seat = match.turn
    sampler_a, sampler_b = HandSampler(view_of(match, seat)), HandSampler(view_of(twin, seat))
    assert sampler_a.ways == sampler_b.ways  # the same distribution of sampled worlds
    for spec in ("search:samples=4", "search:samples=2,rollout=heuristic"):
        first = agent_action(make_agent(spec, seed=7), match, seat)
        assert first == agent_action(make_agent(spec, seed=7), twin, seat)


def test_search_is_deterministic_for_a_seed():
    match = random_state(5, 3)
    view = decode(encode(match, match.turn))
    legal = rules.legal_actions(match)
    values = [SearchAgent(seed=3, samples=4).action_values(view, legal) for _ in range(2)]
    assert values[0] == values[1]


def test_hand_sampler_respects_counts_voids_and_is_uniform():
    # a late position where the left opponent knocked on three numbers: enumerate every
    # consistent deal and compare sampled frequencies
    match = random_state(3, 18)
    view = view_of(match, match.turn)
    assert view.voids[1] and len(tiles_of(view.unseen)) == 8
    sampler = HandSampler(view)
    unseen = tiles_of(view.unseen)
    counts = [view.tile_counts[k] for k in (1, 2, 3)]
    forbidden = [excluded_tiles(view.voids[k]) for k in (1, 2, 3)]
    consistent = []
    for owners in itertools.product(range(3), repeat=len(unseen)):
        if [owners.count(j) for j in range(3)] != counts:
            continue
        hands = [mask_of(t for t, o in zip(unseen, owners) if o == j) for j in range(3)]
        if all(not hands[j] & forbidden[j] for j in range(3)):
            consistent.append(tuple(hands))
    assert sampler.consistent_deals == len(consistent) < 560  # 560 = 8! / (3! 3! 2!) unconstrained
    rng = np.random.default_rng(0)
    draws = 300 * len(consistent)
    seen = {}
    for _ in range(draws):
        hands = sampler.sample(rng)
        seen[hands] = seen.get(hands, 0) + 1
    assert set(seen) <= set(consistent)
    expected = draws / len(consistent)
    assert all(abs(seen.get(h, 0) - expected) < 5 * expected ** 0.5 for h in consistent)
    world = world_match(view, consistent[0])
    assert view_of(world, 0) == view  # the world looks the same from the observer's seat


def test_make_agent_specs_and_errors(tmp_path):
    assert make_agent("search:samples=3,time_limit=0.5,rollout=heuristic").samples == 3
    greedy = GreedyAgent()
    assert make_agent(greedy) is greedy and isinstance(greedy, Agent)
    for bad, words in [("minimax", "valid specs"), ("search:depth=3", "samples"),
                       ("search:samples=x", "int"), ("search:samples=0", r"\[1, 579\]"),
                       ("search:samples=1000000000000000", r"\[1, 579\]"),
                       ("search:time_limit=nan", "time_limit"), ("search:time_limit=1e400", "time_limit"),
                       ("search:samples=5,samples=7", "given twice"),
                       ("search:rollout=mcts", "rollout"), ("random:seed", "parameters"),
                       ("ckpt:", "path"), (f"ckpt:{tmp_path}/missing.pt", "cannot read"),
                       (3, "Agent")]:
        with pytest.raises(ValueError, match=words):
            make_agent(bad)
    unreadable = tmp_path / "garbage.pt"
    unreadable.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="checkpoint"):
        make_agent(f"policy:{unreadable}")


@pytest.mark.parametrize("spec", [*SPECS, "ckpt:shipped", "search:policy=shipped,samples=2"])
def test_act_refuses_inputs_of_the_wrong_shape_or_values(spec):
    """A mask of another env, a short or NaN observation, no legal action: one clear ValueError
    from every agent (not an IndexError inside, or an action >= 113)."""
    agent = make_agent(spec, seed=0)
    match = random_state(3, 6)
    obs, mask = encode(match, match.turn), action_mask(match, match.turn)
    assert 0 <= agent.act(obs, mask) < NUM_ACTIONS
    nan = obs.copy()
    nan[5] = np.nan
    for bad_obs, bad_mask, words in [
            (obs, np.ones(200, np.int8), "action mask must have shape"),
            (obs[:100], mask, "observation must be"), (nan, mask, "NaN"),
            (obs.astype(str), mask, "observation must be"),
            (obs, np.zeros_like(mask), "no legal action")]:
        with pytest.raises(ValueError, match=words):
            agent.act(bad_obs, bad_mask)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), moves=st.integers(0, 60))
def test_world_with_the_true_hidden_hands_plays_like_the_match(seed, moves):
    """world_match (built through the validated Match.from_state) with the real hidden hands is
    the real round seen from the seat on turn: same legal actions and points to the round's end."""
    match = random_state(seed, moves)
    if match.over:
        return
    seat = match.turn
    hidden = tuple(match.hands[(seat + k) & 3] for k in (1, 2, 3))
    world = world_match(view_of(match, seat), hidden)
    assert world.history is None and world.end_sum() == (match.end_sum() if match.placements else 0)
    rng = np.random.default_rng(seed)
    round_index = match.round_index
    while not match.over and match.round_index == round_index:
        legal = rules.legal_actions(match)
        assert rules.legal_actions(world) == legal
        action = legal[int(rng.integers(len(legal)))]
        assert rules.apply_action(world, action) == rules.apply_action(match, action)


@pytest.mark.parametrize("seat, extra", [(1, 1), (2, 1), (3, 1), (3, 2), (1, -1)])
def test_hand_sampler_refuses_counts_that_do_not_add_up_to_the_unseen_tiles(seat, extra):
    """R1: no stock, so the three hidden hands hold exactly the unseen tiles.  A view (a decoded,
    tampered observation) whose tile counts disagree is refused, not sampled with a hand short."""
    match = random_state(3, 18)
    view = view_of(match, match.turn)
    unseen = view.unseen.bit_count()
    assert sum(view.tile_counts[1:]) == unseen
    HandSampler(view)  # the true counts are accepted
    counts = list(view.tile_counts)
    counts[seat] += extra
    bad = dataclasses.replace(view, tile_counts=tuple(counts))
    with pytest.raises(ValueError, match=f"{unseen} unseen tiles but the other seats hold "
                                         f"{unseen + extra}"):
        HandSampler(bad)


def test_a_time_limit_cut_gives_the_mean_over_the_worlds_actually_sampled():
    """``action_values``: the mean over the sampled worlds; a ``time_limit`` that is spent after
    the first world stops at that one world ("at least one world"), so the values are that
    world's, the same as ``samples=1`` with the same seed."""
    match, = positions_with_a_choice(1, min_legal=3)
    view, legal = view_of(match, match.turn), rules.legal_actions(match)
    one = SearchAgent(seed=3, samples=1).action_values(view, legal)
    cut = SearchAgent(seed=3, samples=500, time_limit=1e-9).action_values(view, legal)
    assert cut == one
    assert SearchAgent(seed=3, samples=5).action_values(view, legal) != one  # worlds matter


@pytest.mark.parametrize("time_limit", [0, -1.0])
def test_a_time_limit_must_be_positive(time_limit):
    """``time_limit`` must be in (0, MAX_TIME_LIMIT]: zero seconds is refused."""
    with pytest.raises(ValueError, match="time_limit"):
        SearchAgent(time_limit=time_limit)


class _TopDraws:
    """A generator whose every uniform draw rounds ``u * total`` up to ``total`` (what the
    largest draws below 1 can do in float arithmetic): the walk over the seats then fell
    through to the last allowed seat even when that seat was already full."""

    def random(self, size=None):
        return 1.0 if size is None else np.ones(size)


def test_hand_sampler_never_gives_a_full_seat_a_tile_even_at_the_top_draw():
    for seed, moves in ((3, 18), (5, 4), (11, 30)):
        match = random_state(seed, moves)
        view = view_of(match, match.turn)
        sampler = HandSampler(view)
        counts = [view.tile_counts[k] for k in (1, 2, 3)]
        forbidden = [excluded_tiles(view.voids[k]) for k in (1, 2, 3)]
        for hands in [sampler.sample(_TopDraws())] + sampler.sample_many(_TopDraws(), 3):
            assert [bin(h).count("1") for h in hands] == counts, (seed, hands, counts)
            assert not any(h & f for h, f in zip(hands, forbidden))
            assert sum(hands) == view.unseen
