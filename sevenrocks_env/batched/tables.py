"""Constant lookup tables of the batched engine, built once from :mod:`sevenrocks_env.tiles`.

Every table is built in numpy from the scalar tables and rules (:mod:`sevenrocks_env.scoring`'s
functions: a value is computed exactly as the scalar code computes it, e.g. ``float32(c / 7.0)``
in float64 first) and copied once per device.
The engine never loops over tiles: a 28-bit tile set is two 14-bit halves, each one lookup.
"""

from __future__ import annotations

import numpy as np
import torch

from ..scoring import placement_points, round_to_five
from ..tiles import KNOCK, NUM_NUMBERS, NUM_TILES, TILE_HIGH, TILE_LOW, TILE_PIPS, WITH_NUMBER

HALF = 14
HALF_MASK = (1 << HALF) - 1
ALL_TILES = (1 << NUM_TILES) - 1
#: Sign of each seat's share of team 0's reward: seats 0, 2 are team 0, seats 1, 3 team 1 (R1).
SEAT_SIGNS = (1.0, -1.0, 1.0, -1.0)


#: What the joined tables add to an end an illegal placement joins (a closed slot, or an end
#: the tile does not show): the step's later lookups of that end fail (on the CPU an IndexError,
#: Inductor's "index out of bounds" RuntimeError under compile; a GPU's device-side assert).
ILLEGAL_END = 64


def _joined_tables(placed, slot, low, high, double) -> dict[str, np.ndarray]:
    """The layout change of each action, by the number at the slot it joins (R3, R4), at row
    ``8 action + joined + 1`` (``joined`` -1: the slot is closed, the round's opening at
    west): ``end_delta`` what each slot's end gains; per slot, ``end_keep`` keeps its double
    flag, ``end_put`` sets it, ``end_started``: the branch starts."""
    delta = np.zeros((len(placed), 8, 4), np.int64)
    flags = np.zeros((len(placed), 8, 3, 4), bool)
    flags[:, :, 0] = True                                  # keep every flag (the knock)
    for a in np.flatnonzero(placed):
        k, lo, hi, d = slot[a], low[a], high[a], double[a]
        for joined in range(-1, 7):
            row, keep, put = delta[a, joined + 1], flags[a, joined + 1, 0], flags[a, joined + 1, 1]
            if joined < 0 and k == 0:               # the opening: low half west, high east
                row[:2] = lo + 1, hi + 1
                keep[:2], put[:2] = False, d
            elif joined in (lo, hi):                # the other half now shows at the slot
                row[k] = lo + hi - 2 * joined
                keep[k], put[k] = False, d
                flags[a, joined + 1, 2, k] = k >= 2     # a tile on a branch starts it (R5)
            else:
                row[k] = ILLEGAL_END
    # each row's 4 flags (bools, one byte each) read as one int32: a 1-d lookup, whose result
    # viewed as bool is the [N, 4] flags (a [N, 4] bool lookup is several times slower)
    words = np.ascontiguousarray(flags.reshape(-1, 3, 4)).view(np.int32)[..., 0]
    return {"end_delta": delta.reshape(-1, 4), "end_keep": words[:, 0].copy(),
            "end_put": words[:, 1].copy(), "end_started": words[:, 2].copy()}


def _numpy_tables() -> dict[str, np.ndarray]:
    f32 = np.float32
    halves = np.arange(1 << HALF, dtype=np.int64)
    bits14 = (halves[:, None] >> np.arange(HALF)) & 1
    # spread14[x]: bit t of x moved to bit 4 t (the action layout 4 * tile + slot)
    spread14 = (bits14 << (4 * np.arange(HALF))).sum(1)
    tables = {
        "tile_low": np.array(TILE_LOW, np.int64),
        "tile_high": np.array(TILE_HIGH, np.int64),
        "tile_pips": np.array(TILE_PIPS, np.int64),
        # indexed by an end + 1 (0 = closed slot, matches nothing)
        "with_number": np.array((0,) + WITH_NUMBER, np.int64),
        "popcount14": bits14.sum(1).astype(np.int64),
        "spread14": spread14.astype(np.int64),
        "pips14": (bits14 * np.array(TILE_PIPS[:HALF])).sum(1).astype(np.int64),
        "pips14_high": (bits14 * np.array(TILE_PIPS[HALF:])).sum(1).astype(np.int64),
        # byte_bits64[v]: an int64 whose 8 bytes (in memory order) are the bits of v
        "byte_bits64": np.ascontiguousarray(
            ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.uint8)).view(np.int64)[:, 0],
        # observation pieces, float32 exactly as observation.encode builds them
        "half_bits": bits14.astype(f32),                               # [16384, 14]
        "number_onehot": np.vstack([np.zeros((1, 7)), np.eye(7)]).astype(f32),   # end + 1
        "spinner_piece": np.hstack([np.r_[0, np.ones(7)][:, None],
                                    np.vstack([np.zeros((1, 7)), np.eye(7)])]).astype(f32),
        "counted": np.array([v / 12.0 for v in range(13)] + [0.0], f32),  # 13: not counted
        "end_sum_piece": np.array([[t / 36.0] + [float(t % 5 == k) for k in range(5)]
                                   for t in range(37)], f32),
        # tile counts: 0..7 sevenths (own hand), 8..15 1 - played/7 (others' hands held)
        "tile_counts": np.array([c / 7.0 for c in range(8)] + [1.0 - c / 7.0 for c in range(8)],
                                f32),
        "void_bits": ((np.arange(128)[:, None] >> np.arange(NUM_NUMBERS)) & 1).astype(f32),
    }
    # per action 4 t + slot (112 = the knock): what the step needs of it (engine.place_and_score)
    actions = np.arange(KNOCK + 1)
    placed = actions < KNOCK
    tile = np.where(placed, actions >> 2, 0)
    slot = np.where(placed, actions & 3, 0)
    low = np.where(placed, np.array(TILE_LOW)[tile], 0)
    high = np.where(placed, np.array(TILE_HIGH)[tile], 0)
    double = placed & (low == high)
    bit = np.where(placed, 1 << tile, 0)
    tables.update(
        # act_ints[a] = (placed, tile bit, slot, pips, the spinner it makes at the opening (its
        # number if a double, else -1), 8 a + 1: its rows of the joined tables below)
        act_ints=np.stack([placed, bit, slot, low + high, np.where(double, low, -1),
                           8 * actions + 1], 1).astype(np.int64),
        # a double at west or east: the round's first one (not the opening) is the spinner
        act_straight_double=double & (slot < 2),
        # seat_bits[113 seat + a]: the tile's bit in the seat's column (its hand, played_by)
        seat_bits=np.concatenate([np.where(np.arange(4) == seat, bit[:, None], 0)
                                  for seat in range(4)]).astype(np.int64),
        **_joined_tables(placed, slot, low, high, double),
        # team_points[64 seat + end sum]: the points a placement with that end sum scores (R5),
        # in the column of the seat's team (row 64 seat: a knock, no points); points: either
        team_points=np.array([[points if team == seat & 1 else 0 for team in range(2)]
                              for seat in range(4) for total in range(64)
                              for points in [placement_points(total)]],
                             np.int64),
        # end_code[end + 1]: the tiles showing that number, and bit 28 + n for the number itself
        end_code=np.array([0] + [WITH_NUMBER[n] | 1 << (NUM_TILES + n) for n in range(NUM_NUMBERS)],
                          np.int64),
        # counted_value[32 slot_kind + 16 started + 8 double + end + 1]: what a slot adds to the
        # end sum (R5); slot_kind 0 = west/east (always counted), 1 = a branch (once started)
        counted_value=np.array([(e * (1 + d) if e >= 0 and (kind == 0 or st) else 0)
                                for kind in range(2) for st in range(2) for d in range(2)
                                for e in range(-1, NUM_NUMBERS)], np.int64),
    )
    # end_value[end + 1 + 8 (double + 2 counted)]: what a slot adds to the end sum (R5), counted
    # = west/east, or a branch once started: 0 if not counted, else counted_value's west/east row
    tables["end_value"] = np.concatenate([np.zeros(16, np.int64), tables["counted_value"][:16]])
    tables["points"] = tables["team_points"].sum(1)
    tables["margin"] = tables["team_points"][:, 0] - tables["team_points"][:, 1]
    # deduction[pips]: a hand's pips rounded to the nearest 5, 1-2 down, 3-4 up (R7)
    tables["deduction"] = np.array([round_to_five(pips) for pips in range(169)], np.int64)
    # winner_sign[(seat + 1) * won]: +1 when team 0 won, -1 team 1, 0 no win (float64: rewards)
    tables["winner_sign"] = np.array([0.0, 1.0, -1.0, 1.0, -1.0])
    # observation: slot_piece[code] for code = counted_value's index, + 64 on the east slot of an
    # opening spinner (counted once, R5): [open, number one-hot (7), double, branch, counted / 12]
    counted = tables["counted_value"]
    slot_piece = np.zeros((128, 11), f32)
    for code in range(128):
        c = code & 63
        e, d, st = (c & 7) - 1, (c >> 3) & 1, (c >> 4) & 1
        value = 0 if code >= 64 else counted[c]
        slot_piece[code, 0] = e >= 0
        slot_piece[code, 1:8] = tables["number_onehot"][e + 1]
        slot_piece[code, 8] = e >= 0 and d
        slot_piece[code, 9] = st
        slot_piece[code, 10] = tables["counted"][value]
    tables["slot_piece"] = slot_piece
    # the legal words (layout.legal_words): a hand's tiles t at all four bits 4 t + slot, the
    # low half in word 0, the high half as [word 0 part, word 1 part] (bits 56 + 4 t + slot on)
    spread4 = (spread14 * 15).astype(np.uint64)
    tables["hand_bits_low"] = spread4.view(np.int64)
    tables["hand_bits_high"] = np.stack([spread4 << np.uint64(56), spread4 >> np.uint64(8)],
                                        1).view(np.int64)
    # slot_allowed[4096 opening + sum 8**slot (end + 1)]: the actions 4 t + slot whose tile t
    # shows the number open at the slot, as two words; at the opening every tile fits slot 0
    code = np.arange(2 << 12)
    allowed = np.zeros((len(code), 2), np.uint64)
    for slot in range(4):
        fits = tables["with_number"][(code >> 3 * slot) & 7] | np.where((code >> 12) & (slot == 0),
                                                                ALL_TILES, 0)
        low = spread14[fits & HALF_MASK].astype(np.uint64) << np.uint64(slot)
        high = spread14[fits >> HALF].astype(np.uint64) << np.uint64(slot)
        allowed[:, 0] |= low | (high << np.uint64(56))
        allowed[:, 1] |= high >> np.uint64(8)
    tables["slot_allowed"] = allowed.view(np.int64)
    tables["slot_counted"] = np.where(np.arange(128) >= 64, 0, np.tile(counted, 2)).astype(np.int64)
    # [spinner piece (8), end sum piece (6)] at (spinner + 1) * 37 + end sum
    tables["spinner_end_sum"] = np.array(
        [np.r_[tables["spinner_piece"][s], tables["end_sum_piece"][t]]
         for s in range(8) for t in range(37)], f32)
    # per 14-bit half: byte n counts the half's tiles showing number n (for the unseen piece)
    numbers = np.zeros(NUM_TILES, np.int64)
    for tile in range(NUM_TILES):
        numbers[tile] = (1 << 8 * TILE_LOW[tile]) | (1 << 8 * TILE_HIGH[tile])
    tables["number_counts14"] = (bits14 * numbers[:HALF]).sum(1)
    tables["number_counts14_high"] = (bits14 * numbers[HALF:]).sum(1)
    for name in ("spread14", "number_onehot", "spinner_piece", "counted", "end_sum_piece"):
        del tables[name]  # only built from: not copied to the devices
    return tables


_NUMPY = _numpy_tables()
_CACHE: dict[str, "Tables"] = {}


class Tables:
    """The tables as tensors on one device (attributes named as in :func:`_numpy_tables`)."""

    def __init__(self, device: torch.device):
        self.device = device
        for name, array in _NUMPY.items():
            setattr(self, name, torch.from_numpy(array).to(device))
        long = dict(dtype=torch.long, device=device)
        self.slots = torch.arange(4, **long)
        self.first = (self.slots == 0).long()
        self.second = (self.slots == 1).long()
        self.open_ends_base = -(self.slots >= 2).long()      # north, south closed: -1
        self.straight = self.slots < 2                       # west, east vs the branches
        self.branch = ~self.straight
        self.seat_signs = torch.tensor(SEAT_SIGNS, dtype=torch.float32, device=device)
        self.slot_base = torch.tensor([1, 1, 33, 33], **long)    # counted_value: end + 1, kind
        self.slot_code = torch.tensor([1, 8, 64, 512], **long)   # slot_allowed: 8**slot (end + 1)
        self.count_base5 = torch.tensor([0, 0, 8, 8, 8], **long)
        self.half_shift = torch.tensor([0, HALF], **long)          # a tile set's two halves
        # slot_piece rows of the 4 slots side by side (slot-major, 4 x 11) -> the observation's
        # slot_open (4), slot_number (4 x 7), slot_double, branch_started, slot_counted (4 each)
        self.slot_piece_order = torch.tensor(
            [11 * s for s in range(4)] + [11 * s + 1 + k for s in range(4) for k in range(7)]
            + [11 * s + j for j in (8, 9, 10) for s in range(4)], **long)
        # the observer is always the seat on turn: relative seat 0 (observation piece `turn`)
        self.turn_piece = torch.tensor([[1.0, 0.0, 0.0, 0.0]], device=device)


def tables(device) -> Tables:
    """The cached :class:`Tables` of ``device``."""
    device = torch.device(device)
    key = str(device)
    if key not in _CACHE:
        _CACHE[key] = Tables(device)
    return _CACHE[key]
