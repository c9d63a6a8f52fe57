"""Seats, partnerships and the rules engine's deal (``docs/rules.md`` R1, R2).

Seats 0-3 sit clockwise; seats 0 and 2 are team 0, seats 1 and 3 team 1.  A round's deal is a
pure function of the match seed and the round's index, so a match replays from its seed alone
(the batched engine draws its deals from its own per-match stream, ``batched/deal.py``).
"""

from __future__ import annotations

import numpy as np

from .checks import checked_int, checked_seed
from .tiles import HAND_SIZE, NUM_SEATS, NUM_TILES, mask_of

#: The largest deal seed the batched engine, the arenas and the web page take: seeds are mixed
#: as signed 64-bit integers on every device (``batched/deal.py``).
MAX_SEED = (1 << 63) - 1


def team_of(seat: int) -> int:
    """Partnership of a seat: seats 0 and 2 are team 0, seats 1 and 3 team 1 (R1)."""
    return seat & 1


def partner_of(seat: int) -> int:
    """The seat opposite (R1)."""
    return (seat + 2) & 3


def next_seat(seat: int) -> int:
    """Play is clockwise 0 -> 1 -> 2 -> 3 -> 0 (R1)."""
    return (seat + 1) & 3


def deal(seed: int, round_index: int) -> tuple[list[int], int]:
    """Round ``round_index``'s deal and drawn opener, a function of ``(seed, round_index)`` only (R1, R2).

    Returns four 7-tile hands as bitmasks and a uniformly drawn seat (a fair draw where ties are
    re-drawn makes every seat equally likely).  ``seed`` and ``round_index``: non-negative ints
    (``TypeError``/``ValueError`` naming them; NumPy's seeding took ``"1"``, ``True`` and ``[1]``
    as 1, and ``[]`` or ``{}`` as nothing: the deal of another seed).
    """
    if type(seed) is not int or type(round_index) is not int or seed < 0 or round_index < 0:
        if seed is None:
            raise TypeError("seed must be a non-negative int, got None")
        seed = checked_seed(seed)
        round_index = checked_int("round_index", round_index, 0, float("inf"))
    rng = np.random.default_rng([seed, round_index])
    order = rng.permutation(NUM_TILES).tolist()
    hands = [mask_of(order[HAND_SIZE * seat:HAND_SIZE * (seat + 1)]) for seat in range(NUM_SEATS)]
    return hands, int(rng.integers(NUM_SEATS))
