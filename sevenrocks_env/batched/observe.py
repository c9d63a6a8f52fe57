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


def slot_codes(state: BatchState) -> torch.Tensor:
    """``[B, 4]`` index of each slot in ``tables.counted_value`` / ``slot_piece``: its end, double
    and started flags and kind (west/east or a branch), + 64 on the east slot of an opening
    spinner (it is counted once, at west, R5)."""
    t = tables(state.turn.device)
    code = state.ends + t.slot_base + 8 * state.end_double + 16 * state.branch_started
    code[:, 1] += 64 * ((state.placements == 1) & (state.spinner >= 0))
    return code


def encode(state: BatchState, target: int, out: torch.Tensor | None = None) -> torch.Tensor:
    """Observation of the seat on turn in every match (R1's seat-relative view), written piece by
    piece into ``out`` (allocated if not given) from table lookups."""
    t = tables(state.turn.device)
    n = state.num_envs
    seat = state.turn
    if out is None:
        out = torch.empty((n, OBS_SIZE), dtype=torch.float32, device=seat.device)
    relative = (seat[:, None] + t.slots) & 3                       # self, left, partner, right
    sets = torch.cat((state.hands.gather(1, seat[:, None]), state.played_by.gather(1, relative)), 1)
    halves = torch.stack((sets & HALF_MASK, sets >> HALF), 2)       # [B, 5, 2]
    out[:, :140].view(n, 10, 14).copy_(layout.rows_of(t.half_bits, halves).view(n, 10, 14))
    counts = layout.lookup(t.popcount14, halves).sum(2)                # [B, 5]
    tile_counts = layout.lookup(t.tile_counts, counts + t.count_base5)  # own hand, others' played
    out[:, 198] = tile_counts[:, 0]
    out[:, 199:202] = tile_counts[:, 2:]

    code = slot_codes(state)
    pieces = layout.rows_of(t.slot_piece, code)                     # [B, 4, 11]
    out[:, 140:144] = pieces[:, :, 0]
    out[:, 144:172].view(n, 4, 7).copy_(pieces[:, :, 1:8])
    out[:, 172:176] = pieces[:, :, 8]
    out[:, 176:180] = pieces[:, :, 9]
    out[:, 180:184] = pieces[:, :, 10]
    total = layout.lookup(t.slot_counted, code).sum(1)                 # the end sum (R5)
    out[:, 184:198] = layout.rows_of(t.spinner_end_sum, (state.spinner + 1) * 37 + total)

    voids = state.voids.gather(1, relative[:, 1:])
    out[:, 202:223].view(n, 3, 7).copy_(layout.rows_of(t.void_bits, voids))
    unseen = ALL_TILES & ~(sets[:, 0] | state.played)
    by_number = layout.lookup(t.number_counts14, unseen & HALF_MASK) + layout.lookup(
        t.number_counts14_high, unseen >> HALF)                     # byte k: tiles showing k
    out[:, 223:230] = layout.lookup(t.tile_counts, by_number.view(torch.uint8).view(n, 8)[:, :7].long())
    team = seat & 1
    ours_theirs = state.scores.gather(1, torch.stack((team, team ^ 1), 1))
    out[:, 230:232] = ours_theirs.to(torch.float64) / target
    out[:, 232] = target / 1000.0
    out[:, 233:237] = t.turn_piece
    out[:, 237] = state.placements == 0
    return out


__all__ = ["encode", "slot_codes"]
