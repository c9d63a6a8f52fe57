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
from ..tiles import KNOCK
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
    seat, place, logged_sum, points, team_points, won, domino, blocked = play(
        state, actions, settings.target if target is None else target)
    margin = team_points[:, 0] - team_points[:, 1]

    ended = won | domino | blocked
    rows = ended.nonzero().squeeze(1)
    truncated = torch.zeros_like(won)
    if rows.numel():
        state.last_end_sum = logged_sum.clone()  # the rare path below writes rows in place
        events = end_rounds(state, rows, won, domino, seat, settings.max_rounds, streams)
        lost = events.deductions[:, 0] + events.deductions[:, 2] - events.deductions[:, 1] \
            - events.deductions[:, 3]
        margin = margin.index_add(0, rows, -lost)
        truncated[rows] = events.match_over & ~won[rows]
    else:
        empty = rows
        events = StepEvents(seat, logged_sum, points, empty, empty, empty, empty, empty.bool(),
                            empty, empty, empty)
    events.seat, events.end_sum, events.points = seat, logged_sum, points
    # the AEC env's formula in float64, then rounded once: bit for bit its reward (in float32,
    # 0.01 * 5 was 0.049999997 where the AEC env's 0.05 rounds to 0.050000001)
    winner_sign = won * (1 - 2 * (seat & 1))
    team0 = team0_reward(margin.to(torch.float64), winner_sign.to(torch.float64),
                         settings.points_scale, settings.win_reward).to(torch.float32)
    # + 0.0: a zero reward is 0.0 for every seat (0.0 * -1 is -0.0, which prints as "-0")
    return team0[:, None] * tables(seat.device).seat_signs + 0.0, won, truncated, events


def place_and_score(state: BatchState, actions: torch.Tensor, target: int):
    """The common part of :func:`step`: the move of every row, its points and the round-end
    tests, with no data-dependent control flow (one fused kernel under ``torch.compile``).

    Returns ``(seat, place, logged_sum, points, team_points, won, domino, blocked)``.
    """
    t = tables(state.turn.device)
    seat = state.turn
    # the action, decoded by two row lookups (a knock: placed 0, no tile bit, no slot)
    placed, bit, slot, low, high = torch.index_select(t.act_ints, 0, actions).unbind(1)
    flags = torch.index_select(t.act_flags, 0, actions)                    # [B, 10] bool
    at_slot, on_branch, double, straight = flags[:, :4], flags[:, 4:8], flags[:, 8], flags[:, 9]
    place = actions != KNOCK
    at_seat = torch.index_select(t.onehot4, 0, seat)                       # [B, 4] int one-hot
    seat_bit = at_seat * bit[:, None]
    state.hands ^= seat_bit
    state.played_by |= seat_bit
    state.played |= bit

    # R3, R4: the layout after a placement (a knock changes no slot)
    opening = state.placements == 0
    spinner = state.spinner
    joined = state.ends.gather(1, slot[:, None]).squeeze(1)
    other = torch.where(opening, low, low + high - joined)
    # the joined slot now shows ``other`` (arithmetic: torch.where broadcasting a column over
    # [B, 4] is several times slower on CPU than these elementwise ops)
    state.ends = ends = state.ends + at_slot * (other - joined)[:, None]
    state.end_double = end_double = (state.end_double & ~at_slot) | (at_slot & double[:, None])
    state.branch_started = state.branch_started | on_branch
    # the opening: low half west, high half east, both a double if the tile is one
    ends[:, 1] = torch.where(opening, high, ends[:, 1])
    end_double[:, 1] |= opening & double
    straight = straight & ~opening
    # the first double of the round (not the opening) is the spinner, joined by line A
    first_double = straight & double & (spinner < 0)
    # the branches open once neither straight end shows the spinner as a double (R4)
    exposed = (end_double[:, 0] & (ends[:, 0] == spinner)) | (
        end_double[:, 1] & (ends[:, 1] == spinner))
    branches_open = straight & (spinner >= 0) & (ends[:, 2] < 0) & ~exposed
    ends[:, 2:] += ((spinner + 1) * branches_open)[:, None]   # closed branches are -1
    new_spinner = layout.select(first_double, joined, spinner)
    state.spinner = layout.select(opening, torch.where(double, low, -1), new_spinner)
    state.placements += placed

    # R6: a knock shows the seat lacks every open number (the open ends also decide a block)
    code = layout.lookup(t.end_code, ends + 1)
    code = code[:, 0] | code[:, 1] | code[:, 2] | code[:, 3]
    state.voids |= at_seat * ((code >> 28) * (1 - placed))[:, None]

    # R5: score the placement; R8: the win is checked right after it
    value = layout.lookup(t.counted_value, ends + t.slot_base + 8 * end_double
                       + 16 * state.branch_started)
    alone = (state.placements == 1) & (state.spinner >= 0)   # an opening spinner counts once
    total = value.sum(1) - value[:, 1] * alone
    logged_sum = layout.select(place, total, state.last_end_sum)  # a knock logs the last sum
    state.last_end_sum = logged_sum
    points = layout.placement_points(total) * placed
    team = seat & 1
    team_points = layout.rows_of(t.onehot2, team) * points[:, None]        # [B, 2]
    state.scores += team_points
    scores = state.scores
    team_score = scores[:, 0] + team * (scores[:, 1] - scores[:, 0])
    won = (points > 0) & (team_score >= target)
    # R6, R7: domino or blocked
    domino = place & ~won & (state.hands.gather(1, seat[:, None]).squeeze(1) == 0)
    blocked = place & ~won & ~domino & ((ALL_TILES & ~state.played & code) == 0)
    state.turn = (seat + 1) & 3
    return seat, place, logged_sum, points, team_points, won, domino, blocked


def end_rounds(state: BatchState, rows, won, domino, seat, max_rounds: int | None, streams):
    """Close the rounds of ``rows`` (R7, R8), then deal the next round or the next match."""
    won, domino, seat = won[rows], domino[rows], seat[rows]
    hands = state.hands[rows]
    deductions = torch.where(won[:, None], 0, layout.deductions(hands))       # R8: none on a win
    scores = state.scores[rows]
    scores[:, 0] -= deductions[:, 0] + deductions[:, 2]
    scores[:, 1] -= deductions[:, 1] + deductions[:, 3]
    result = torch.where(won, WON, torch.where(domino, DOMINO, BLOCKED))
    round_index = state.round_index[rows] + (~won)
    over = won
    if max_rounds is not None:
        over = over | (round_index >= max_rounds)
    winner = torch.where(won, seat & 1, -1)
    matches = state.matches[rows] + over
    round_index = torch.where(over, 0, round_index)
    state.scores[rows] = torch.where(over[:, None], 0, scores)
    state.round_index[rows] = round_index
    state.matches[rows] = matches
    new_hands, drawn = deal_from_streams(streams[rows], matches, round_index)
    # R2: the player who dominoed opens the next round; after a block (or a new match) a draw
    opener = torch.where(domino & ~over, seat, drawn)
    state.start_rounds(rows, new_hands, opener)
    return StepEvents(seat, None, None, rows, result, deductions, scores, over, winner,
                      new_hands, opener)


__all__ = ["BLOCKED", "DOMINO", "Settings", "StepEvents", "WON", "end_rounds", "place_and_score",
           "step"]
