"""The ``[B, 238]`` observation of the seat on turn, equal byte for byte to ``observation.encode``.

Every piece is a lookup in a float32 table built as :mod:`sevenrocks_env.observation` builds its
bytes (tile sets by 14-bit halves, counts as ``float32(c / 7)``, the end sum as
``float32(t / 36)``), written into the observation buffer.  See the piece table in
:mod:`sevenrocks_env.observation` (offsets 0-237).

:class:`ObservationWriter` owns the buffer and the scratch tensors the lookups write into, so a
call allocates no multi-megabyte temporaries, and it moves the four slots' pieces into the
vector's order with one column gather (``tables.slot_piece_order``) rather than five strided
copies.  Every call rewrites all 238 columns: a caller that changed the buffer in place gets a
correct observation next time.
"""

from __future__ import annotations

import torch

from ..observation import OBS_SIZE, OFFSETS
from .state import BatchState
from .tables import ALL_TILES, HALF, HALF_MASK, tables

_PIECE = OFFSETS  # piece name -> its slice of the vector
_COUNTS = _PIECE["tile_counts"].start


def slot_codes(state: BatchState) -> torch.Tensor:
    """``[B, 4]`` index of each slot in ``tables.counted_value`` / ``slot_piece``: its end, double
    and started flags and kind (west/east or a branch), + 64 on the east slot of an opening
    spinner (it is counted once, at west, R5)."""
    t = tables(state.turn.device)
    code = state.ends + t.slot_base + 8 * state.end_double + 16 * state.branch_started
    code[:, 1] += 64 * ((state.placements == 1) & (state.spinner >= 0))
    return code


class ObservationWriter:
    """Writes the observation of the seat on turn of ``num_envs`` matches into :attr:`out`
    (``FloatTensor[num_envs, 238]``), rebuilt in place by each call."""

    def __init__(self, num_envs: int, device, target: int):
        n = num_envs
        self.out = torch.empty((n, OBS_SIZE), dtype=torch.float32, device=device)
        self.target = target
        f32 = dict(dtype=torch.float32, device=device)
        self._bits = torch.empty((n * 10, HALF), **f32)       # 5 tile sets x 2 halves
        self._slots = torch.empty((n * 4, 11), **f32)          # 4 slots' pieces
        self._slot_block = torch.empty((n, 44), **f32)         # the same in piece order
        self._spinner = torch.empty((n, 14), **f32)           # spinner + end sum
        self._voids = torch.empty((n * 3, 7), **f32)

    def nbytes(self) -> int:
        """Bytes of the buffer and the scratch tensors."""
        return 4 * sum(x.nelement() for x in (self.out, self._bits, self._slots, self._slot_block,
                                              self._spinner, self._voids))

    def __call__(self, state: BatchState) -> torch.Tensor:
        t = tables(state.turn.device)
        out, n = self.out, state.num_envs
        seat = state.turn
        relative = (seat[:, None] + t.slots) & 3                       # self, left, partner, right
        # own hand, then the tiles each relative seat played this round: 10 halves, 10 lookups
        sets = torch.cat((state.hands.gather(1, seat[:, None]),
                          state.played_by.gather(1, relative)), 1)   # [B, 5]
        halves = (sets[:, :, None] >> t.half_shift) & HALF_MASK          # [B, 5, 2]
        torch.index_select(t.half_bits, 0, halves.view(-1), out=self._bits)
        out[:, _PIECE["hand"].start:_PIECE["played_by"].stop] = self._bits.view(n, 10 * HALF)
        # tiles held: own hand count, 7 - played for the others (set 1, our own plays, unused)
        counts = torch.index_select(t.popcount14, 0, halves.view(-1)).view(n, 5, 2)
        counts = counts[:, :, 0] + counts[:, :, 1]
        held = torch.index_select(t.tile_counts, 0, (counts + t.count_base5).view(-1)).view(n, 5)
        out[:, _COUNTS] = held[:, 0]
        out[:, _COUNTS + 1:_COUNTS + 4] = held[:, 2:]

        # the four slots (R3-R5): open, number one-hot, double, branch started, counted / 12
        code = slot_codes(state)
        torch.index_select(t.slot_piece, 0, code.view(-1), out=self._slots)
        # slot-major [4 x 11] to the observation's piece order: one column gather, one copy
        torch.index_select(self._slots.view(n, 44), 1, t.slot_piece_order, out=self._slot_block)
        out[:, _PIECE["slot_open"].start:_PIECE["slot_counted"].stop] = self._slot_block
        total = torch.index_select(t.slot_counted, 0, code.view(-1)).view(n, 4).sum(1)  # R5
        torch.index_select(t.spinner_end_sum, 0, (state.spinner + 1) * 37 + total,
                           out=self._spinner)
        out[:, _PIECE["spinner"].start:_PIECE["end_sum"].stop] = self._spinner

        voids = state.voids.gather(1, relative[:, 1:])
        torch.index_select(t.void_bits, 0, voids.view(-1), out=self._voids)
        out[:, _PIECE["voids"]] = self._voids.view(n, 21)
        unseen = ALL_TILES & ~(sets[:, 0] | state.played)
        by_number = (torch.index_select(t.number_counts14, 0, unseen & HALF_MASK)
                     + torch.index_select(t.number_counts14_high, 0, unseen >> HALF))  # byte k: k
        out[:, _PIECE["unseen"]] = torch.index_select(
            t.tile_counts, 0, by_number.view(torch.uint8).view(n, 8)[:, :7].reshape(-1).long()
        ).view(n, 7)
        team = seat & 1
        ours_theirs = state.scores.gather(1, torch.stack((team, team ^ 1), 1))
        ours_theirs = ours_theirs.to(torch.float64) / self.target
        out[:, _PIECE["scores"].start:_PIECE["scores"].start + 2] = ours_theirs
        out[:, _PIECE["scores"].start + 2] = self.target / 1000.0
        out[:, _PIECE["turn"]] = t.turn_piece          # the observer is on turn: relative seat 0
        out[:, _PIECE["opening"].start] = state.placements == 0
        return out


__all__ = ["ObservationWriter", "slot_codes"]
