"""The per-seat observation: what one seat may know, as named pieces over one flat vector.

One implementation serves the env, the agents and the trainer.  Everything is seat-relative:
relative seat ``k`` of an observer at seat ``s`` is seat ``(s + k) % 4`` -- 0 self, 1 left
opponent (plays next), 2 partner, 3 right opponent (played last).

| piece             | offset | size | meaning                                                              |
|-------------------|-------:|-----:|----------------------------------------------------------------------|
| `hand`            |      0 |   28 | 1 for each tile in the observer's hand (tile index order)            |
| `played_by`       |     28 |  112 | 4 x 28: tile played this round by relative seat 0 (self), 1, 2, 3    |
| `slot_open`       |    140 |    4 | slot (west, east, north, south) is a legal place to play             |
| `slot_number`     |    144 |   28 | 4 x 7 one-hot: the open number at each slot                          |
| `slot_double`     |    172 |    4 | the slot's outer tile is a double (0 on an unstarted branch: R5)     |
| `branch_started`  |    176 |    4 | a tile has been played on the branch (north/south only)              |
| `slot_counted`    |    180 |    4 | what the slot adds to the end sum, / 12 (R5)                         |
| `spinner`         |    184 |    8 | [spinner played, one-hot of its number (7)]                          |
| `end_sum`         |    192 |    6 | [end sum / 36, one-hot of end sum mod 5 (5)]                         |
| `tile_counts`     |    198 |    4 | tiles in hand of relative seat 0..3, / 7                             |
| `voids`           |    202 |   21 | 3 x 7: numbers relative seats 1..3 showed they lack by knocking      |
| `unseen`          |    223 |    7 | per number: tiles showing it not in own hand and not played, / 7     |
| `scores`          |    230 |    3 | [ours / target, theirs / target, target / 1000]                      |
| `turn`            |    233 |    4 | one-hot: relative seat to move (all 0: no one moves, see below)      |
| `opening`         |    237 |    1 | no tile placed yet this round (any tile may open)                    |

Total size ``OBS_SIZE = 238``.  Hidden tiles of other seats never enter the vector.  ``turn``
is all 0 when no seat moves: the match is over, a seedless match awaits its next deal, or (the
envs' last observations, :func:`without_turn`) an illegal move ended the match.
:func:`decode` turns a vector back into a :class:`SeatView`, so agents that want structure
(search, heuristics) work from exactly the same information as a network.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from .checks import checked_int
from .rules import Match, end_sum, legal_moves, matching_tiles, not_a_match
from .scoring import counted_ends
from .tiles import KNOCK, NUM_ACTIONS, NUM_NUMBERS, NUM_TILES, WITH_NUMBER

OBS_VERSION = 1
#: (name, size) in vector order: the layout above.
PIECES: tuple[tuple[str, int], ...] = (
    ("hand", 28), ("played_by", 112), ("slot_open", 4), ("slot_number", 28),
    ("slot_double", 4), ("branch_started", 4), ("slot_counted", 4), ("spinner", 8),
    ("end_sum", 6), ("tile_counts", 4), ("voids", 21), ("unseen", 7), ("scores", 3),
    ("turn", 4), ("opening", 1),
)
OFFSETS: dict[str, slice] = {}
_offset = 0
for _name, _size in PIECES:
    OFFSETS[_name] = slice(_offset, _offset + _size)
    _offset += _size
OBS_SIZE = _offset

_BITS = 1 << np.arange(NUM_TILES, dtype=np.int64)
_VOID_BITS = 1 << np.arange(NUM_NUMBERS, dtype=np.int64)
_SLOT_OPEN = OFFSETS["slot_open"].start
_SLOT_NUMBER = OFFSETS["slot_number"].start
_SLOT_DOUBLE = OFFSETS["slot_double"].start
_BRANCH = OFFSETS["branch_started"].start
_SPINNER = OFFSETS["spinner"].start
_COUNTS = OFFSETS["tile_counts"].start
_VOIDS = OFFSETS["voids"].start
_SCORES = OFFSETS["scores"].start
_TURN = OFFSETS["turn"].start
_OPENING = OFFSETS["opening"].start
_ALL = (1 << NUM_TILES) - 1

# encode() builds the vector as little-endian float32 bytes from precomputed pieces and joins
# them once: a 28-bit tile set is two 14-bit halves, each one table lookup.
_FLOAT32 = np.dtype("<f4")
_INT8 = np.dtype(np.int8)
_HALF = 14
_HALF_MASK = (1 << _HALF) - 1
_BITS_OF_HALF = tuple(
    np.unpackbits(np.array([v], dtype="<u2").view(np.uint8), bitorder="little")[:_HALF]
    .astype(_FLOAT32).tobytes() for v in range(1 << _HALF))
_BITS_OF_NUMBERS = tuple(
    np.array([(v >> n) & 1 for n in range(NUM_NUMBERS)], _FLOAT32).tobytes()
    for v in range(1 << NUM_NUMBERS))
_SEVENTHS = tuple(np.array([c / 7.0], _FLOAT32).tobytes() for c in range(8))
_PLAYED_TO_HELD = tuple(np.array([1.0 - c / 7.0], _FLOAT32).tobytes() for c in range(8))
_TURN_BYTES = tuple(np.eye(4, dtype=_FLOAT32)[k].tobytes() for k in range(4)) + (bytes(16),)
_OPENING_BYTES = (np.zeros(1, _FLOAT32).tobytes(), np.ones(1, _FLOAT32).tobytes())
_PACK_SCORES = struct.Struct("<3f").pack
# The layout block (slot_open .. end_sum, R4/R5) from per-slot pieces: flags of four slots as
# one lookup of a 4-bit set, a slot's number one-hot by the number (index number + 1: -1 is a
# closed slot, all zeros), the counted pips by their count.
_FLAGS = tuple(np.array([(bits >> slot) & 1 for slot in range(4)], _FLOAT32).tobytes()
               for bits in range(16))
_NUMBER = tuple(np.array([n == number for n in range(NUM_NUMBERS)], _FLOAT32).tobytes()
                for number in range(-1, NUM_NUMBERS))
_TWELFTHS = tuple(np.array([c / 12.0], _FLOAT32).tobytes() for c in range(13))
_SPINNER_BYTES = tuple(np.array([number >= 0, *(n == number for n in range(NUM_NUMBERS))],
                                _FLOAT32).tobytes() for number in range(-1, NUM_NUMBERS))
_END_SUM_BYTES = tuple(np.array([total / 36.0, *(total % 5 == k for k in range(5))],
                                _FLOAT32).tobytes() for total in range(4 * 12 + 1))


def _layout_bytes(ends, end_double, started, spinner: int) -> bytes:
    """``slot_open`` .. ``end_sum`` (offsets 140-197): a function of the layout alone (R4, R5)."""
    e0, e1, e2, e3 = ends
    c0, c1, c2, c3 = counted_ends(ends, end_double, started)
    return b"".join((
        _FLAGS[(e0 >= 0) | (e1 >= 0) << 1 | (e2 >= 0) << 2 | (e3 >= 0) << 3],
        _NUMBER[e0 + 1], _NUMBER[e1 + 1], _NUMBER[e2 + 1], _NUMBER[e3 + 1],
        _FLAGS[(e0 >= 0 and end_double[0]) | (e1 >= 0 and end_double[1]) << 1
               | (e2 >= 0 and end_double[2]) << 2 | (e3 >= 0 and end_double[3]) << 3],
        _FLAGS[started[0] | started[1] << 1 | started[2] << 2 | started[3] << 3],
        _TWELFTHS[c0], _TWELFTHS[c1], _TWELFTHS[c2], _TWELFTHS[c3],
        _SPINNER_BYTES[spinner + 1],
        _END_SUM_BYTES[c0 + c1 + c2 + c3],
    ))


def encode(match: Match, seat: int, out: np.ndarray | None = None) -> np.ndarray:
    """Observation vector (float32, ``OBS_SIZE``) of ``seat`` (see the module table).

    Built without Python loops over tiles: every piece is a precomputed float32 byte string
    (tile sets by 14-bit halves, the layout block by slot), joined once.
    ``out``, if given, is filled in place and returned.  ``seat``: an int 0-3 (``TypeError`` /
    ``ValueError`` naming it otherwise: -1 indexed as seat 3, ``True`` as seat 1); ``match``: a
    :class:`~sevenrocks_env.rules.Match` (``TypeError`` naming it otherwise).
    """
    if type(seat) is not int or not 0 <= seat <= 3:
        seat = checked_seat(seat)
    try:
        played_by = match.played_by
    except AttributeError:  # no isinstance on the good path: this is called millions of times
        if not isinstance(match, Match):
            raise not_a_match(match) from None
        raise
    hand = match.hands[seat]
    mine = played_by[seat]
    left, partner, right = played_by[(seat + 1) & 3], played_by[(seat + 2) & 3], played_by[(seat + 3) & 3]
    layout = _layout_bytes(match.ends, match.end_double, match.branch_started, match.spinner)
    voids = match.voids
    unseen = _ALL & ~(hand | match.played)
    bits, sevenths = _BITS_OF_HALF, _SEVENTHS
    target = match.target
    team = seat & 1
    turn = match.turn
    data = b"".join((
        bits[hand & _HALF_MASK], bits[hand >> _HALF],
        bits[mine & _HALF_MASK], bits[mine >> _HALF],
        bits[left & _HALF_MASK], bits[left >> _HALF],
        bits[partner & _HALF_MASK], bits[partner >> _HALF],
        bits[right & _HALF_MASK], bits[right >> _HALF],
        layout,
        sevenths[hand.bit_count()], _PLAYED_TO_HELD[left.bit_count()],
        _PLAYED_TO_HELD[partner.bit_count()], _PLAYED_TO_HELD[right.bit_count()],
        _BITS_OF_NUMBERS[voids[(seat + 1) & 3]], _BITS_OF_NUMBERS[voids[(seat + 2) & 3]],
        _BITS_OF_NUMBERS[voids[(seat + 3) & 3]],
        sevenths[(unseen & WITH_NUMBER[0]).bit_count()], sevenths[(unseen & WITH_NUMBER[1]).bit_count()],
        sevenths[(unseen & WITH_NUMBER[2]).bit_count()], sevenths[(unseen & WITH_NUMBER[3]).bit_count()],
        sevenths[(unseen & WITH_NUMBER[4]).bit_count()], sevenths[(unseen & WITH_NUMBER[5]).bit_count()],
        sevenths[(unseen & WITH_NUMBER[6]).bit_count()],
        _PACK_SCORES(match.scores[team] / target, match.scores[team ^ 1] / target, target / 1000.0),
        _TURN_BYTES[(turn - seat) & 3 if turn >= 0 and not match.over else 4],
        _OPENING_BYTES[match.placements == 0],
    ))
    if out is None:
        return np.frombuffer(bytearray(data), _FLOAT32)  # a dtype object, positional: fastest
    out[:] = np.frombuffer(data, _FLOAT32)
    return out


def checked_seat(seat) -> int:
    """``seat`` as a plain int 0-3 (a NumPy integer too; a bool or a float is no seat)."""
    return checked_int("seat", seat, 0, 3)


def tile_sets(masks, out: np.ndarray | None = None) -> np.ndarray:
    """Tile sets (28-bit masks) as one float32 vector of 28 bits each, tile index order: the
    encoding of the observation's ``hand`` and ``played_by`` pieces."""
    bits = _BITS_OF_HALF
    data = b"".join(bits[half] for mask in masks for half in (mask & _HALF_MASK, mask >> _HALF))
    if out is None:
        return np.frombuffer(bytearray(data), _FLOAT32)
    out[:] = np.frombuffer(data, _FLOAT32)
    return out


def action_mask(match: Match, seat: int) -> np.ndarray:
    """int8 mask over the 113 actions: the legal set if ``seat`` is on turn, else all zeros.
    ``seat``: an int 0-3 (``TypeError``/``ValueError`` naming it otherwise: any other value was
    a seat not on turn, all zeros, and ``True`` or ``1.0`` seat 1)."""
    if type(seat) is not int or not 0 <= seat <= 3:
        seat = checked_seat(seat)
    mask = bytearray(NUM_ACTIONS)
    try:
        if seat == match.turn and not match.over:  # (so turn >= 0, as legal_actions checks)
            for action in legal_moves(match.hands[seat], match.ends, match.placements == 0):
                mask[action] = 1
    except AttributeError:
        if not isinstance(match, Match):
            raise not_a_match(match) from None
        raise
    return np.frombuffer(mask, _INT8)


@dataclass(frozen=True)
class SeatView:
    """One seat's knowledge, decoded from an observation vector.  Relative seats as above."""

    hand: int                       # tile bitmask
    played_by: tuple[int, int, int, int]  # tile bitmasks per relative seat
    ends: tuple[int, int, int, int]       # open number per slot, -1 if not open
    end_double: tuple[bool, bool, bool, bool]
    branch_started: tuple[bool, bool, bool, bool]
    spinner: int                    # -1 if none yet
    tile_counts: tuple[int, int, int, int]
    voids: tuple[int, int, int, int]      # 7-bit number sets per relative seat (self = 0)
    scores: tuple[int, int]         # (ours, theirs)
    target: int
    turn: int                       # relative seat to move, -1 if none (match over, or a
                                    # replayed round awaiting its deal)
    opening: bool

    @property
    def played(self) -> int:
        return self.played_by[0] | self.played_by[1] | self.played_by[2] | self.played_by[3]

    @property
    def unseen(self) -> int:
        """Tiles held by the other three seats (bitmask)."""
        return ((1 << NUM_TILES) - 1) & ~self.played & ~self.hand

    @property
    def end_sum(self) -> int:
        return 0 if self.opening else end_sum(self.ends, self.end_double, self.branch_started)

    def matching(self) -> int:
        """Bitmask of the tiles that would fit an open end."""
        return matching_tiles(self.ends)


def _bits_to_mask(bits: np.ndarray) -> int:
    return int(np.dot(bits.astype(np.int64) != 0, _BITS[: len(bits)]))


def _ends(obs: np.ndarray) -> tuple[int, int, int, int]:
    """The open number of each slot (-1 where closed) written in an observation."""
    numbers = obs[_SLOT_NUMBER:_SLOT_NUMBER + 28].reshape(4, 7).argmax(1)
    return tuple(np.where(obs[_SLOT_OPEN:_SLOT_OPEN + 4] > 0.5, numbers, -1).tolist())


def checked_inputs(obs, mask) -> tuple[np.ndarray, np.ndarray]:
    """An agent's ``(observation, action_mask)`` as ``float32[OBS_SIZE]`` and ``bool[113]``;
    ``ValueError`` for a wrong shape, a non-finite observation, a mask with no legal action, one
    no position of this game has (knock (112) legal beside a placement: R6, a seat knocks exactly
    when it cannot place), an observation of a seat not on turn, or a mask marking a move the
    observation's seat cannot make (a tile it does not hold, a slot not open to it: the mask and
    the observation of two different seats).  The agents would fail inside or play something."""
    if isinstance(obs, dict) and "observation" in obs:
        raise ValueError("observation must be the observation vector, got the env's dict: pass "
                         "obs['observation'] (and obs['action_mask'] as the mask)")
    obs = np.asarray(obs)
    if obs.shape != (OBS_SIZE,) or not np.issubdtype(obs.dtype, np.number):
        raise ValueError(f"observation must be a number array of shape ({OBS_SIZE},), got "
                         f"{obs.dtype} {obs.shape}")
    obs = obs.astype(np.float32, copy=False)  # first: 1e300 as float64 is inf as float32
    if not np.isfinite(obs).all():
        raise ValueError("observation has NaN or infinite entries (as float32)")
    mask = np.asarray(mask)
    if mask.shape != (NUM_ACTIONS,):
        raise ValueError(f"action mask must have shape ({NUM_ACTIONS},), got {mask.shape}")
    if mask.dtype != bool and not (np.issubdtype(mask.dtype, np.number)
                                   and ((mask == 0) | (mask == 1)).all()):
        raise ValueError(f"action mask must hold 0/1 or booleans, got {mask.dtype} values "
                         "other than 0 and 1")  # -1, NaN or "0" would have counted as legal
    mask = mask.astype(bool)
    if not mask.any():
        raise ValueError("action mask has no legal action (is it this seat's turn?)")
    if mask[KNOCK] and mask[:KNOCK].any():
        raise ValueError(f"action mask is not a mask of this game: it marks knock ({KNOCK}) "
                         f"legal beside {int(mask[:KNOCK].sum())} placement(s), but knock is "
                         "legal only when no tile can be placed (R6)")
    if obs[_TURN] != 1:
        raise ValueError("observation is not of the seat on turn (its turn piece is "
                         f"{obs[_TURN:_TURN + 4].tolist()}, not [1, 0, 0, 0]): pass the "
                         "observation of the seat whose action mask this is")
    legal = legal_moves(_bits_to_mask(obs[0:28]), _ends(obs), bool(obs[_OPENING] > 0.5))
    foreign = [action for action in np.flatnonzero(mask).tolist() if action not in legal]
    if foreign:
        raise ValueError(f"action mask marks {foreign[:8]}{' ...' if len(foreign) > 8 else ''} "
                         f"legal, but the observation's seat can play only {legal[:8]}"
                         f"{' ...' if len(legal) > 8 else ''}: are the observation and the mask "
                         "of the same seat and position?")
    return obs, mask


def decode(obs: np.ndarray) -> SeatView:
    """Inverse of :func:`encode` for everything a seat knows (structure for rule-based agents)."""
    obs = np.asarray(obs)
    if obs.shape != (OBS_SIZE,):
        raise ValueError(f"observation must have shape ({OBS_SIZE},), got {obs.shape}")
    hand = _bits_to_mask(obs[0:28])
    played = obs[28:140].reshape(4, 28)
    played_by = tuple(_bits_to_mask(row) for row in played)
    end_double, started = [], []
    for slot in range(4):
        end_double.append(bool(obs[_SLOT_DOUBLE + slot] > 0.5))
        started.append(bool(obs[_BRANCH + slot] > 0.5))
    spinner = int(np.argmax(obs[_SPINNER + 1:_SPINNER + 8])) if obs[_SPINNER] > 0.5 else -1
    counts = tuple(int(round(c * 7)) for c in obs[_COUNTS:_COUNTS + 4])
    void_bits = obs[_VOIDS:_VOIDS + 21].reshape(3, 7)
    voids = (0,) + tuple(int(np.dot(row > 0.5, _VOID_BITS)) for row in void_bits)
    target = int(round(obs[_SCORES + 2] * 1000))
    scores = (int(round(obs[_SCORES] * target)), int(round(obs[_SCORES + 1] * target)))
    turn = int(np.argmax(obs[_TURN:_TURN + 4])) if obs[_TURN:_TURN + 4].any() else -1
    return SeatView(hand, played_by, _ends(obs), tuple(end_double), tuple(started), spinner,
                    counts, voids, scores, target, turn, bool(obs[_OPENING] > 0.5))


def without_turn(vector: np.ndarray) -> np.ndarray:
    """``vector`` (an :func:`encode` result, changed in place) with no seat to move: the last
    observation of a match ended by an illegal move, which leaves the match as it was, the
    mover on turn (env()'s wrapper, the Gymnasium and RLlib views), as at every other end."""
    vector[_TURN:_TURN + 4] = 0
    return vector


def view(obs: np.ndarray, piece: str) -> np.ndarray:
    """The named piece of an observation vector (a view, reshaped where it is a table); an
    unknown name is a ``KeyError`` listing the pieces."""
    if piece not in OFFSETS:
        raise KeyError(f"no observation piece {piece!r}; the pieces are {', '.join(OFFSETS)}")
    part = np.asarray(obs)[..., OFFSETS[piece]]
    shapes = {"played_by": (4, 28), "slot_number": (4, 7), "voids": (3, 7)}
    return part.reshape(part.shape[:-1] + shapes[piece]) if piece in shapes else part
