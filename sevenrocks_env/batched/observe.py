"""The ``[B, 238]`` observation of the seat on turn, equal byte for byte to ``observation.encode``.

Every piece is a lookup in a float32 table built as :mod:`sevenrocks_env.observation` builds its
bytes (tile sets by 14-bit halves, counts as ``float32(c / 7)``, the end sum as ``float32(t / 36)``),
and the pieces are joined by one ``torch.cat`` into a preallocated buffer.  See the piece table in
:mod:`sevenrocks_env.observation` (offsets 0-237).
"""

from __future__ import annotations

import torch

from ..observation import OBS_SIZE
from . import layout
from .state import BatchState
from .tables import ALL_TILES, HALF, HALF_MASK, tables


def encode(state: BatchState, target: int, out: torch.Tensor | None = None) -> torch.Tensor:
    """Observation of the seat on turn in every match (R1's seat-relative view)."""
    t = tables(state.turn.device)
    n = state.num_envs
    seat = state.turn
    relative = (seat[:, None] + t.slots) & 3                       # self, left, partner, right
    hand = state.hands.gather(1, seat[:, None])                     # [B, 1]
    played = state.played_by.gather(1, relative)                    # [B, 4]
    sets = torch.cat((hand, played), 1)                             # [B, 5]
    halves = torch.stack((sets & HALF_MASK, sets >> HALF), 2)
    tile_bits = layout.rows_of(t.half_bits, halves).view(n, 140)

    ends, end_double, started = state.ends, state.end_double, state.branch_started
    open_ = ends >= 0
    slot_open = open_.to(torch.float32)
    slot_number = layout.rows_of(t.number_onehot, ends + 1).view(n, 28)
    slot_double = (open_ & end_double).to(torch.float32)
    branch = started.to(torch.float32)
    counts = open_ & (t.straight | started)
    counts[:, 1] &= ~layout.opening_spinner(ends, end_double)     # counted once (R5)
    counted = torch.take(t.counted, layout.select(counts, ends + end_double * ends, 13))
    spinner = layout.rows_of(t.spinner_piece, state.spinner + 1)
    total = layout.end_sum(ends, end_double, started)
    end_sum = layout.rows_of(t.end_sum_piece, total)

    held = torch.cat((hand, played[:, 1:]), 1)                      # own hand, others' played
    tile_counts = torch.take(t.tile_counts, layout.popcount(held) + t.count_base)
    voids = layout.rows_of(t.void_bits, state.voids.gather(1, relative[:, 1:])).view(n, 21)
    unseen = ALL_TILES & ~(hand | state.played[:, None])            # [B, 1]
    unseen_counts = torch.take(t.tile_counts, layout.popcount(unseen & t.with_number_7))
    team = seat & 1
    ours_theirs = state.scores.gather(1, torch.stack((team, team ^ 1), 1))
    scores = torch.cat((ours_theirs.to(torch.float64) / target,
                        torch.full((n, 1), target / 1000.0, dtype=torch.float64,
                                   device=seat.device)), 1).to(torch.float32)
    turn = t.turn_piece.expand(n, 4)
    opening = (state.placements == 0).to(torch.float32)[:, None]
    pieces = (tile_bits, slot_open, slot_number, slot_double, branch, counted, spinner, end_sum,
              tile_counts, voids, unseen_counts, scores, turn, opening)
    if out is None:
        out = torch.empty((n, OBS_SIZE), dtype=torch.float32, device=seat.device)
    return torch.cat(pieces, 1, out=out)


__all__ = ["encode"]
