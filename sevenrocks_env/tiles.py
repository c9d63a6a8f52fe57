"""Tiles of the double-six set, per-tile bitmask tables and the action codec (R1).

Tiles are indexed in canonical order, low half first (R1):

    0|0 = 0, 0|1 = 1, ..., 0|6 = 6, 1|1 = 7, ..., 5|6 = 26, 6|6 = 27

A set of tiles (a hand, the tiles played) is a 28-bit ``int``: bit ``t`` set means
tile ``t`` is in the set.

Actions: ``action = 4 * tile + slot`` places ``tile`` at ``slot``; ``KNOCK = 112``.

| slot | name  | meaning                                                        |
|------|-------|----------------------------------------------------------------|
| 0    | west  | west end of the straight line; also "open the round with tile" |
| 1    | east  | east end of the straight line                                  |
| 2    | north | spinner branch north (branch A)                                |
| 3    | south | spinner branch south (branch B)                                |
"""

from __future__ import annotations

import numpy as np

from .checks import counted

NUM_NUMBERS = 7  # pips 0..6 on a half
NUM_TILES = 28
NUM_SEATS = 4
HAND_SIZE = 7  # tiles dealt to a seat (R1)
WEST, EAST, NORTH, SOUTH = 0, 1, 2, 3
SLOT_NAMES = ("west", "east", "north", "south")
KNOCK = 4 * NUM_TILES  # 112
NUM_ACTIONS = KNOCK + 1  # 113
ALL_TILES = (1 << NUM_TILES) - 1

#: (low, high) halves of each tile, canonical order.
TILES: tuple[tuple[int, int], ...] = tuple(
    (low, high) for low in range(NUM_NUMBERS) for high in range(low, NUM_NUMBERS)
)
TILE_LOW = tuple(low for low, _ in TILES)
TILE_HIGH = tuple(high for _, high in TILES)
TILE_PIPS = tuple(low + high for low, high in TILES)
TILE_IS_DOUBLE = tuple(low == high for low, high in TILES)
#: ``"low|high"``, the rule book's way of writing a tile (R1), of each tile.
TILE_NAMES = tuple(f"{low}|{high}" for low, high in TILES)
_TILE_INDEX = {tile: index for index, tile in enumerate(TILES)}

#: WITH_NUMBER[n]: bitmask of the tiles showing ``n`` on either half.
WITH_NUMBER = tuple(
    sum(1 << t for t, (low, high) in enumerate(TILES) if n in (low, high))
    for n in range(NUM_NUMBERS)
)
#: DOUBLE_OF[n]: the tile index of the double ``n|n``.
DOUBLE_OF = tuple(t for t, (low, high) in enumerate(TILES) if low == high)


def tiles_showing(numbers: int) -> int:
    """Bitmask of the tiles showing any number in the 7-bit set ``numbers`` (bit ``n``: ``n``)."""
    mask = 0
    for number in range(NUM_NUMBERS):
        if (numbers >> number) & 1:
            mask |= WITH_NUMBER[number]
    return mask


#: OTHER_HALF[t][n]: the half of tile t that is not n (t must show n).
OTHER_HALF = tuple(
    tuple(high if n == low else low if n == high else -1 for n in range(NUM_NUMBERS))
    for low, high in TILES
)

#: TILE_NUMBERS_NP[t, n] = 1 if tile t shows n (a NumPy table, for the policy's action features).
TILE_NUMBERS_NP = np.zeros((NUM_TILES, NUM_NUMBERS), dtype=np.float32)
for _t, (_low, _high) in enumerate(TILES):
    TILE_NUMBERS_NP[_t, _low] = 1.0
    TILE_NUMBERS_NP[_t, _high] = 1.0


def tile_index(low: int, high: int) -> int:
    """Index of tile ``low|high`` (halves in any order)."""
    if low > high:
        low, high = high, low
    try:
        return _TILE_INDEX[(low, high)]
    except KeyError:
        raise ValueError(f"no tile {low}|{high} in a double-six set") from None


def tile_name(tile: int) -> str:
    """``"low|high"``, the rule book's way of writing a tile (R1)."""
    return TILE_NAMES[tile]


_HALVES = frozenset("0123456")  # how parse_tile reads a half: one digit (R1)


def parse_tile(text: str) -> int:
    """Tile index from ``"a|b"`` (also ``"a-b"``, ``"ab"``), each half one ASCII digit 0 to 6
    (not ``"²"``, ``"\u0663"`` or ``"03"``); raises ``ValueError`` naming ``text``."""
    cleaned = text.strip().replace("-", "|").replace(" ", "")
    if "|" not in cleaned and len(cleaned) == 2:
        cleaned = cleaned[0] + "|" + cleaned[1]
    parts = cleaned.split("|")
    if len(parts) != 2 or not all(part in _HALVES for part in parts):
        shown = repr(text[:20]) + ("..." if len(text) > 20 else "")
        raise ValueError(f"not a tile: {shown} (expected 'low|high', each half a digit 0 to 6, "
                         "e.g. '3|5')")
    return tile_index(int(parts[0]), int(parts[1]))


def encode_action(tile: int, slot: int) -> int:
    """Placement action ``4 * tile + slot``."""
    return 4 * tile + slot


def decode_action(action: int) -> tuple[int, int]:
    """``(tile, slot)`` of a placement action (not the knock)."""
    return divmod(action, 4)


def describe_action(action: int) -> str:
    """``"3|5 east"`` or ``"knock"``; ``ValueError`` for anything but an action 0-112 (a
    negative index read as ``6|6 south``)."""
    if not (type(action) is int or isinstance(action, np.integer)) or not 0 <= action <= KNOCK:
        from .checks import shown  # (as below: never an unknown object's own repr)
        raise ValueError(f"not an action 0-{KNOCK}: {shown(action)}")
    if action == KNOCK:
        return "knock"
    tile, slot = decode_action(action)
    return f"{tile_name(tile)} {SLOT_NAMES[slot]}"


def illegal_action_text(action, legal: list[int], who: str) -> str:
    """``"illegal action 5 (0|1 east) for WHO; legal actions: [4 (0|1 west), ...]"``: the
    envs' refusal, in words (any value of ``action``, quoted short when not an action index)."""
    from .checks import array_hint, is_int, shown  # (not a dependency of the tile tables)
    if is_int(action, 0, KNOCK):
        what = f"{int(action)} ({describe_action(int(action))})"
    elif action is None:
        what = "None (None is the step of a terminated or truncated agent only)"
    elif is_int(action):
        what = f"{shown(action)} (outside [0, {KNOCK}])"
    elif array_hint(action):
        what = shown(action) + array_hint(action)
    else:  # 0.0 or True beside a legal 0 read as a contradiction: say what is wrong with it
        what = f"{shown(action)} (a {type(action).__name__}, not an int action index)"
    listed = ", ".join(f"{a} ({describe_action(a)})" for a in legal)
    return f"illegal action {what} for {who}; legal actions: [{listed}]"


def tiles_of(mask: int) -> list[int]:
    """Tile indices in a bitmask, ascending."""
    out = []
    while mask:
        low_bit = mask & -mask
        out.append(low_bit.bit_length() - 1)
        mask ^= low_bit
    return out


def mask_of(tiles) -> int:
    """Bitmask of an iterable of tile indices."""
    mask = 0
    for t in tiles:
        mask |= 1 << t
    return mask


def pips_words(pips: int) -> str:
    """``"1 pip"``, ``"12 pips"``."""
    return counted(pips, "pip")


def pips_of(mask: int) -> int:
    """Total pips of the tiles in a bitmask."""
    return sum(TILE_PIPS[t] for t in tiles_of(mask))
