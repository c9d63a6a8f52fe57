"""One step of B matches: a placement or a knock per match, then whatever follows (R3-R8).

:func:`step` mirrors ``rules.apply_action`` line by line, for all rows at once and without
branches: the placement and the knock are both computed and selected with ``torch.where``.  Only
the rare events -- a round ends (domino, block or win), a match ends, a new deal -- work on the
subset of rows that need them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..rewards import team0_reward
from ..tiles import KNOCK, NUM_ACTIONS
from . import layout
from .deal import deal_from_streams
from .state import BatchState
from .tables import ALL_TILES, tables

#: Round results in :class:`StepEvents` (``rules.DOMINO``, ``BLOCKED``, ``WON``).
DOMINO, BLOCKED, WON = 1, 2, 3


@dataclass
class StepEvents:
    """What a step did, for records: every row's move, and the rows whose round ended."""

    seat: torch.Tensor          # [B] the seat that moved
    end_sum: torch.Tensor       # [B] end sum logged with the move (the last one for a knock)
    points: torch.Tensor        # [B]
    rows: torch.Tensor          # [n] rows whose round ended
    result: torch.Tensor        # [n] DOMINO / BLOCKED / WON
    deductions: torch.Tensor    # [n, 4] (0 on a win, R8)
    round_scores: torch.Tensor  # [n, 2] scores after the round
    match_over: torch.Tensor    # [n] bool: the match ended (won or truncated)
    winner: torch.Tensor        # [n] 0, 1, or -1 (truncated / round only)
    new_hands: torch.Tensor     # [n, 4] the next round's (or next match's) deal
    new_opener: torch.Tensor    # [n]
    team_deductions: torch.Tensor | None = None  # [n, 2] of seats 0 + 2 and 1 + 3


@dataclass
class Settings:
    """The env's constants: the deal stream's seed, the target (R8), the round limit, rewards."""

    seed: int
    target: int
    max_rounds: int | None
    points_scale: float
    win_reward: float


def step(state: BatchState, actions: torch.Tensor, settings: Settings, streams: torch.Tensor,
         play=None, target: torch.Tensor | None = None):
    """Apply ``actions`` (all legal) to every match in place; ``streams`` are the envs' deal
    stream keys (``deal.stream_keys``); ``play`` is :func:`place_and_score` or its compiled twin
    (:mod:`.kernels`), given ``target`` (``settings.target`` as a 0-d tensor: a compiled
    kernel would be specialised to an int) if given.

    Returns ``(rewards [B, 4] float32, terminated [B] bool, truncated [B] bool, events)``; a match
    that ends is replaced by the env's next match (auto-reset) before returning.
    """
    play = play or place_and_score
    seat, logged_sum, points, margin, won, outcome = play(
        state, actions, settings.target if target is None else target)
    rows = outcome.nonzero().squeeze(1)
    truncated = torch.zeros_like(won)
    if rows.numel():
        state.last_end_sum = logged_sum.clone()  # the rare path below writes rows in place
        events = end_rounds(state, rows, outcome[rows], seat[rows], settings.max_rounds, streams)
        margin = margin.index_add(0, rows, events.team_deductions[:, 1]
                                  - events.team_deductions[:, 0])
        truncated.index_copy_(0, rows, events.match_over & (events.result != WON))
    else:
        empty = rows
        events = StepEvents(seat, logged_sum, points, empty, empty, empty, empty, empty.bool(),
                            empty, empty, empty)
    events.seat, events.end_sum, events.points = seat, logged_sum, points
    # the AEC env's formula in float64, then rounded once: bit for bit its reward (in float32,
    # 0.01 * 5 was 0.049999997 where the AEC env's 0.05 rounds to 0.050000001); the winner's
    # sign (+1 team 0, -1 team 1, 0 no win) looked up by (seat + 1) * won
    t = tables(seat.device)
    winner_sign = layout.lookup(t.winner_sign, (seat + 1) * won)
    team0 = team0_reward(margin.to(torch.float64), winner_sign, settings.points_scale,
                         settings.win_reward).to(torch.float32)
    # + 0.0: a zero reward is 0.0 for every seat (0.0 * -1 is -0.0, which prints as "-0")
    return team0[:, None] * t.seat_signs + 0.0, won, truncated, events


def place_and_score(state: BatchState, actions: torch.Tensor, target: int):
    """The common part of :func:`step`: the move of every row, its points and the round-end
    tests, with no data-dependent control flow (one fused kernel under ``torch.compile``).

    Eager, each torch operation costs a few microseconds whatever it does at B = 4,096, so the
    move is decoded by table lookups (:mod:`.tables`: the action's row, the (seat, action) and
    (action, joined number) rows) rather than elementwise chains, and the state is updated in
    place.  Returns ``(seat, logged_sum, points, margin, won, outcome)``: ``margin`` team 0's
    points minus team 1's, ``outcome`` how the round ended (DOMINO, BLOCKED, WON; 0: not).
    """
    t = tables(state.turn.device)
    seat = state.turn
    # the action's numbers (a knock: placed 0, no tile bit); an action outside [0, 112] fails
    # this first lookup, before anything changes
    placed, bit, slot, pips, opening_spinner, joined_rows = torch.index_select(
        t.act_ints, 0, actions).unbind(1)
    place = actions != KNOCK
    seat_bit = layout.rows_of(t.seat_bits, torch.add(actions, seat, alpha=NUM_ACTIONS))
    state.hands ^= seat_bit
    state.played_by |= seat_bit
    state.played |= bit

    # R3, R4: the layout after a placement, by the number it joins (a closed slot: the opening;
    # an illegal one makes an end that a lookup below refuses, tables.ILLEGAL_END)
    opening = state.placements == 0
    # a row's slots (or seats) in the flat [4 B] view of a [B, 4] field start at row_starts
    row_starts = torch.arange(0, 4 * seat.shape[0], 4, device=seat.device)
    joined = state.ends.view(-1).index_select(0, row_starts + slot)
    joined_rows = joined_rows + joined
    ends = state.ends
    ends += layout.rows_of(t.end_delta, joined_rows)
    # the [B, 4] bool flags as one int32 a row (four bytes): three 1-d lookups and [B] ops
    end_double, started = state.end_double.view(torch.int32), state.branch_started.view(torch.int32)
    end_double &= layout.lookup(t.end_keep, joined_rows)[:, None]
    end_double |= layout.lookup(t.end_put, joined_rows)[:, None]
    started |= layout.lookup(t.end_started, joined_rows)[:, None]
    # the branches open once neither straight end shows the spinner as a double (R4)
    spinner = state.spinner
    exposed = state.end_double & (ends == spinner[:, None])
    covered = exposed.view(torch.int16)[:, 0] == 0        # west and east's bools as one word
    branches_open = place & covered & (spinner >= 0) & (ends[:, 2] < 0)
    ends[:, 2:] += ((spinner + 1) * branches_open)[:, None]   # closed branches are -1
    # the spinner: the opening's double, or the round's first double at west or east
    first_double = opening | ((spinner < 0) & layout.lookup(t.act_straight_double, actions))
    state.spinner = torch.where(first_double, opening_spinner, spinner)
    state.placements += placed

    # R6: a knock shows the seat lacks every open number (the open ends also decide a block)
    shown = ends + 1
    code = layout.lookup(t.end_code, shown)
    code = code[:, 0] | code[:, 1] | code[:, 2] | code[:, 3]
    at_seat = row_starts + seat                                      # the seat's column, flat
    voids = state.voids.view(-1)
    shown_void = torch.where(place, 0, code >> 28)
    voids.index_copy_(0, at_seat, voids.index_select(0, at_seat) | shown_void)

    # R5: score the placement (the opening: its pips, an opening spinner counted once); R8:
    # the win is checked right after it
    counted = t.straight | state.branch_started
    value = layout.lookup(t.end_value, torch.add(shown, torch.add(
        state.end_double.view(torch.uint8), counted.view(torch.uint8), alpha=2), alpha=8))
    total = torch.where(opening, pips, value.sum(1))
    logged_sum = torch.where(place, total, state.last_end_sum)  # a knock logs the last sum
    state.last_end_sum = logged_sum
    scored = torch.add(total * placed, seat, alpha=64)
    team_points = layout.rows_of(t.team_points, scored)
    state.scores += team_points
    # (the two teams' bools as one 16-bit word: nonzero if either)
    won = ((state.scores >= target) & (team_points > 0)).view(torch.int16)[:, 0] != 0
    # R6, R7: how the round ends after a placement: DOMINO (the seat's hand is empty), else
    # BLOCKED (every tile showing an open number was played); R8: WON first; 0: it goes on
    empty = state.hands.view(-1).index_select(0, at_seat) == 0
    blocked = (ALL_TILES & ~state.played & code) == 0
    outcome = torch.where(won, WON, torch.where(empty, DOMINO, blocked * BLOCKED) * place)
    state.turn = (seat + 1) & 3
    return seat, logged_sum, layout.lookup(t.points, scored), layout.lookup(t.margin, scored), \
        won, outcome


def end_rounds(state: BatchState, rows, result, seat, max_rounds: int | None, streams):
    """Close the rounds of ``rows`` (their ``result``: DOMINO, BLOCKED or WON; ``seat``: the
    seat that moved) (R7, R8), then deal the next round or the next match."""
    won = result == WON
    hands = state.hands.index_select(0, rows)
    deductions = torch.where(won[:, None], 0, layout.deductions(hands))
    team_deductions = deductions.view(-1, 2, 2).sum(1)       # seats 0 + 2, 1 + 3   (R8: none
    scores = state.scores.index_select(0, rows) - team_deductions          # on a win)
    round_index = state.round_index.index_select(0, rows) + (~won)
    over = won
    if max_rounds is not None:
        over = over | (round_index >= max_rounds)
    winner = torch.where(won, seat & 1, -1)
    matches = state.matches.index_select(0, rows) + over
    round_index = torch.where(over, 0, round_index)
    state.scores.index_copy_(0, rows, torch.where(over[:, None], 0, scores))
    state.round_index.index_copy_(0, rows, round_index)
    state.matches.index_copy_(0, rows, matches)
    new_hands, drawn = deal_from_streams(streams.index_select(0, rows), matches, round_index)
    # R2: the player who dominoed opens the next round; after a block (or a new match) a draw
    opener = torch.where((result == DOMINO) & ~over, seat, drawn)
    state.start_rounds(rows, new_hands, opener)
    return StepEvents(seat, None, None, rows, result, deductions, scores, over, winner,
                      new_hands, opener, team_deductions)


__all__ = ["BLOCKED", "DOMINO", "Settings", "StepEvents", "WON", "end_rounds", "place_and_score",
           "step"]
