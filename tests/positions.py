"""Random positions for tests: a match after some uniformly random legal moves."""

import itertools
import random

import numpy as np

from sevenrocks_env import rules
from sevenrocks_env.agents.belief import excluded_tiles
from sevenrocks_env.observation import action_mask, encode
from sevenrocks_env.tiles import EAST, KNOCK, WEST, encode_action, mask_of, parse_tile, tiles_of


def random_state(seed: int, moves: int, target: int = rules.DEFAULT_TARGET,
                 max_rounds: int | None = None, in_play: bool = False) -> rules.Match:
    """A match after ``moves`` uniformly random legal actions (possibly across rounds); with
    ``in_play``, the position before the move that would end the match, if one does (a small
    target ends most matches within a few dozen moves)."""
    rng = np.random.default_rng(seed)
    match = rules.Match.new(seed, target=target, max_rounds=max_rounds)
    for _ in range(moves):
        if match.over:
            break
        legal = rules.legal_actions(match)
        before = match.clone(keep_history=True) if in_play else None
        rules.apply_action(match, legal[int(rng.integers(len(legal)))])
        if before is not None and match.over:
            return before
    return match


MAX_MATCH_ACTIONS = 20_000
"""More actions than any match to 250 takes (random play's longest in 300 seeds: 758): a loop
that plays on past it is a rules regression (e.g. rounds that score nothing), which should fail
the test at once rather than hang it until pytest's timeout."""


def until_over(match: rules.Match):
    """Yields until ``match`` is over (R8), for ``for _ in until_over(match):`` where a test
    plays a match to its end; fails with an ``AssertionError`` after :data:`MAX_MATCH_ACTIONS`
    turns."""
    for _ in range(MAX_MATCH_ACTIONS):
        if match.over:
            return
        yield
    raise AssertionError(f"the match is not over after {MAX_MATCH_ACTIONS} actions "
                         f"(scores {match.scores}, round {match.round_index})")


def played_to_the_end(match: rules.Match, seed: int | None = None, choose=None) -> rules.Match:
    """``match`` played until it is over (:func:`until_over`), in place, and returned: each
    action is ``choose(match, legal)``, or a uniformly random legal one
    (``random.Random(seed)``)."""
    rng = random.Random(seed)
    for _ in until_over(match):
        legal = rules.legal_actions(match)
        rules.apply_action(match, choose(match, legal) if choose else rng.choice(legal))
    return match


def positions_with_a_choice(count: int, min_legal: int = 2) -> list[rules.Match]:
    """``count`` random positions (:func:`random_state`) whose seat on turn has at least
    ``min_legal`` legal actions."""
    found = []
    for seed in range(500):
        match = random_state(seed, 3 + seed % 20)
        if not match.over and not match.awaiting_deal \
                and len(rules.legal_actions(match)) >= min_legal:
            found.append(match)
            if len(found) == count:
                return found
    raise AssertionError(f"fewer than {count} positions with {min_legal} legal actions")


def choices(agent, positions, seeded: bool = False) -> list[int]:
    """``agent``'s moves at each of ``positions`` (rules.Match), in order; with ``seeded`` the
    agent is seeded with the position's index first."""
    out = []
    for k, match in enumerate(positions):
        if seeded:
            agent.seed(k)
        out.append(agent.act(encode(match, match.turn), action_mask(match, match.turn)))
    return out


def knock_inputs() -> tuple[np.ndarray, np.ndarray]:
    """``(observation, action_mask)`` of a seat that can only knock (R6), for the tests of
    forced moves that no model or search may be asked about."""
    for seed in range(500):
        match = rules.Match.new(seed)
        rng = random.Random(seed)
        for _ in until_over(match):
            legal = rules.legal_actions(match)
            if legal == [KNOCK]:
                return encode(match, match.turn), action_mask(match, match.turn)
            rules.apply_action(match, rng.choice(legal))
    raise AssertionError("no forced knock in 500 random matches")


def round_played_out(seed: int, target: int = rules.DEFAULT_TARGET) -> rules.Match:
    """Round 0 of ``seed``'s deal played to its end by uniformly random moves, in a seedless
    match: it waits for its next deal, so ``history[-1]`` is the finished round."""
    hands, opener = rules.deal(seed, 0)
    match = rules.Match.from_deal(hands, opener, target=target)
    rng = random.Random(seed)
    while match.history[-1].result is None:
        rules.apply_action(match, rng.choice(rules.legal_actions(match)))
    return match


def finished_round(won: bool = False, target: int = rules.DEFAULT_TARGET,
                   accept=lambda log: True) -> rules.Match:
    """The first :func:`round_played_out` (seeds 0, 1, ...) that was won (R8) or not, as asked,
    and whose round log ``accept`` takes."""
    for seed in range(300):
        match = round_played_out(seed, target)
        log = match.history[-1]
        if (log.result == rules.WON) == won and accept(log):
            return match
    raise AssertionError("no such round in 300 deals")


def hand(*names: str) -> int:
    """A hand as a tile set, from tile names (``"0|1"``)."""
    return mask_of(parse_tile(n) for n in names)


def opponent_wins_next_position(scores=(0, 245), opener: int = 0) -> rules.Match:
    """With ``opener=0``: seat 0 (team 0) to open; whatever it opens with, seat 1 (team 1) then
    has exactly one legal move.  After 0|1 that move is 1|5 east: ends 0 and 5, end sum 5 (R5),
    so team 1 reaches 250 and wins (R8) on seat 1's move.  Another ``opener`` gives the same
    hands with that seat to open (for tests that only need the hands and scores)."""
    hands = [
        hand("0|1", "0|0", "0|2", "0|3", "0|4", "0|5", "0|6"),
        hand("1|5", "2|2", "2|3", "2|4", "2|5", "2|6", "3|3"),
        hand("1|1", "1|2", "1|3", "1|4", "1|6", "3|4", "3|5"),
        hand("3|6", "4|4", "4|5", "4|6", "5|5", "5|6", "6|6"),
    ]
    return rules.Match.from_deal(hands, opener=opener, scores=scores, seed=7)


def won_at_exactly_the_target() -> rules.Match:
    """:func:`opponent_wins_next_position` played out: team 1 wins at exactly 250 (R8)."""
    match = opponent_wins_next_position()
    rules.apply_action(match, encode_action(parse_tile("0|1"), WEST))
    rules.apply_action(match, encode_action(parse_tile("1|5"), EAST))
    assert match.winner == 1 and match.scores == [0, 250]
    return match


def twin_with_other_hidden_tiles(match: rules.Match) -> rules.Match:
    """Same match, one tile swapped between two other seats' hands (same counts, same view)."""
    twin = match.clone()
    seat = match.turn
    for a, b in itertools.combinations([s for s in range(4) if s != seat], 2):
        forbidden_a = excluded_tiles(match.voids[a])
        forbidden_b = excluded_tiles(match.voids[b])
        for ta in tiles_of(match.hands[a] & ~forbidden_b):
            for tb in tiles_of(match.hands[b] & ~forbidden_a):
                twin.hands[a] ^= (1 << ta) | (1 << tb)
                twin.hands[b] ^= (1 << ta) | (1 << tb)
                return twin
    raise AssertionError("no swap keeps the knocks consistent")


def two_deals_one_view(seed: int, moves: int) -> tuple[rules.Match, rules.Match]:
    """``(match, twin)``: a random position and another deal of its round, one tile swapped
    between two other seats, played through the same public moves.  The seat on turn cannot
    tell them apart (checked: the same observation and the same public round), while their
    hands, dealt and held, and their round logs differ: for tests that an agent, driven as every
    driver drives it (:func:`sevenrocks_env.driver.agent_action`), sees only its view."""
    from sevenrocks_env.public_round import public_round

    match = random_state(seed, moves)
    log, held = match.history[-1], twin_with_other_hidden_tiles(match).hands
    dealt = list(held)
    for seat, action, _, _ in log.moves:
        if action != KNOCK:
            dealt[seat] |= 1 << (action >> 2)
    twin = rules.Match.from_deal(dealt, log.opener, target=match.target,
                                 scores=public_round(match).scores)
    twin.round_index, twin.seed = match.round_index, match.seed
    for _, action, _, _ in log.moves:
        rules.apply_action(twin, action)
    seat = match.turn
    assert twin.turn == seat and twin.hands == held != match.hands
    assert twin.history[-1].hands != log.hands
    assert np.array_equal(encode(twin, seat), encode(match, seat))
    assert np.array_equal(action_mask(twin, seat), action_mask(match, seat))
    assert public_round(twin) == public_round(match)
    return match, twin


def choices_grouped_and_alone(choose_many, matches: list[rules.Match]):
    """``choose_many(observations, masks, rngs)`` on all ``matches`` at once and on each alone,
    decision ``k`` always sampling from ``default_rng(k)``: ``(together, alone)`` choice lists."""
    from sevenrocks_env.observation import action_mask, encode
    observations = [encode(m, m.turn) for m in matches]
    masks = [action_mask(m, m.turn) for m in matches]
    together = choose_many(observations, masks,
                           [np.random.default_rng(k) for k in range(len(matches))])
    alone = [choose_many([o], [mk], [np.random.default_rng(k)])[0]
             for k, (o, mk) in enumerate(zip(observations, masks))]
    return together, alone


def vector_positions(num_envs: int, steps: int, seed: int, target: int = rules.DEFAULT_TARGET):
    """Yield a batched ``VectorEnv`` after each of ``steps`` random legal moves in ``num_envs``
    matches (needs torch)."""
    import torch

    from sevenrocks_env.batched import VectorEnv
    env = VectorEnv(num_envs, target=target)
    env.reset(seed=seed)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        yield env
        env.step(torch.multinomial(env.action_mask.float(), 1, generator=generator).squeeze(1))


def sampled_decisions(target: int, count: int, samples: int):
    """``count`` search decisions (``world_rollouts.Decision``, ``samples`` worlds each, seeded by
    position) at random positions of matches to ``target`` with at least two legal actions."""
    from sevenrocks_env.agents.layout import view_of
    from sevenrocks_env.agents.world_rollouts import Decision
    decisions = []
    for seed in range(200):
        match = random_state(seed, seed % 30, target=target)
        if match.over or match.awaiting_deal or len(rules.legal_actions(match)) < 2:
            continue
        decisions.append(Decision.sample(view_of(match, match.turn), rules.legal_actions(match),
                                         samples, np.random.default_rng(seed)))
        if len(decisions) == count:
            return decisions
    raise AssertionError("too few positions")
