"""The physical layout of a round, rebuilt from its move log (R3, R4, R5).

The engine (:mod:`sevenrocks_env.rules`) keeps only what the rules need: the four open ends.
Pictures and descriptions need more -- every tile, where it lies and which way round -- so
:func:`build_layout` replays a round's placements into a :class:`BoardDrawing`:

* ``line``: the straight line west -> east, each tile with its halves in that direction
  (the opening tile lies with its low half west);
* ``spinner_index``: where the spinner (the first double, R4) sits in the line;
* ``north`` / ``south``: the spinner's side branches (branch A / branch B), each tile with its
  halves from the spinner outwards.

Doubles lie crosswise (R3).  The layout is a pure function of the move list, so it can be
checked against the engine's ends and end sum at every step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..checks import shown
from ..rules import place_tile
from ..scoring import counted_ends, end_sum, matching_tiles
from ..tiles import (
    EAST,
    KNOCK,
    NORTH,
    SLOT_NAMES,
    SOUTH,
    TILE_HIGH,
    TILE_IS_DOUBLE,
    TILE_LOW,
    WEST,
    decode_action,
    parse_tile,
    tile_name,
)


@dataclass(frozen=True)
class PlacedTile:
    """One tile on the table.

    ``halves``: in the line (west half, east half); in a branch (half toward the spinner,
    outer half).  ``move`` is the index of the placement in the round's move list.
    """

    tile: int
    halves: tuple[int, int]
    seat: int
    move: int

    @property
    def crosswise(self) -> bool:
        """Doubles are laid crosswise (R3)."""
        return TILE_IS_DOUBLE[self.tile]

    @property
    def name(self) -> str:
        return tile_name(self.tile)


class _TableEnds:
    """The engine's summary of the layout (what :func:`rules.place_tile` reads and writes)."""

    __slots__ = ("ends", "end_double", "branch_started", "spinner", "placements")

    def __init__(self):
        self.ends = [-1, -1, -1, -1]
        self.end_double = [False, False, False, False]
        self.branch_started = [False, False, False, False]
        self.spinner = -1
        self.placements = 0


@dataclass
class BoardDrawing:
    """Tiles on the table after some placements of a round, for drawing (module docstring).

    Where the rules decide (which slots are open, what they count, the spinner) it asks the
    engine: every placement also goes through :func:`sevenrocks_env.rules.place_tile` on the
    engine's per-slot summary, and counting is :func:`sevenrocks_env.scoring.counted_ends`.
    This class only adds where each tile lies and which way round.
    """

    line: list[PlacedTile] = field(default_factory=list)
    opening_index: int | None = None
    spinner_index: int | None = None
    north: list[PlacedTile] = field(default_factory=list)
    south: list[PlacedTile] = field(default_factory=list)
    #: the spinner's line B side: WEST or EAST (R4); None without a spinner.  An opening
    #: spinner has line A west and line B east.
    spinner_line_b: int | None = None
    table: _TableEnds = field(default_factory=_TableEnds, repr=False)

    # -- the spinner ---------------------------------------------------------------------------

    @property
    def spinner(self) -> int:
        """Number of the spinner, -1 while no double has been played (R4)."""
        return self.table.spinner

    @property
    def spinner_internal(self) -> bool:
        """Both straight continuations filled: the spinner counts nothing, branches open (R4, R5)."""
        return self.table.ends[NORTH] >= 0

    def branch(self, slot: int) -> list[PlacedTile]:
        return self.north if slot == NORTH else self.south

    # -- ends ----------------------------------------------------------------------------------

    @property
    def empty(self) -> bool:
        return not self.line

    def outer_tile(self, slot: int) -> PlacedTile | None:
        """The tile a new tile at ``slot`` would join (the spinner for an unstarted branch)."""
        if not self.line:
            return None
        if slot == WEST:
            return self.line[0]
        if slot == EAST:
            return self.line[-1]
        arm = self.branch(slot)
        if arm:
            return arm[-1]
        return self.line[self.spinner_index] if self.spinner_internal else None

    def continuation_points(self) -> dict[int, int]:
        """Legal continuation points: ``{slot: open number}`` (R3, R4)."""
        return {slot: number for slot, number in enumerate(self.table.ends) if number >= 0}

    def counted_ends(self) -> dict[int, int]:
        """What each counted end adds to the end sum: ``{slot: value}`` (R5).

        The values are :func:`~sevenrocks_env.scoring.counted_ends`; the slots listed are the
        straight ends and the started branches (an unopened branch is a continuation point but
        not counted).  An opening spinner alone is one tile: it is listed once, at the west end.
        """
        if not self.line:
            return {}
        table = self.table
        values = counted_ends(table.ends, table.end_double, table.branch_started)
        lone_spinner = len(self.line) == 1 and self.line[0].crosswise
        slots = [WEST] if lone_spinner else [WEST, EAST]
        slots += [slot for slot in (NORTH, SOUTH) if table.branch_started[slot]]
        return {slot: values[slot] for slot in slots}

    def end_sum(self) -> int:
        """Sum of the counted ends (R5)."""
        table = self.table
        return end_sum(table.ends, table.end_double, table.branch_started) if self.line else 0

    def tiles(self) -> list[PlacedTile]:
        """Every tile on the table, in placement order."""
        return sorted(self.line + self.north + self.south, key=lambda placed: placed.move)

    # -- building ------------------------------------------------------------------------------

    def place(self, seat: int, tile: int, slot: int, move: int) -> None:
        """Lay ``tile`` at ``slot`` (R3, R4).  Raises ``ValueError`` if it does not fit."""
        table = self.table
        if not self.line:
            if slot != WEST:
                raise ValueError(f"move {move}: the opening tile uses slot 0 (west), not {slot}")
            place_tile(table, tile, slot)
            table.placements += 1
            self.line.append(PlacedTile(tile, (TILE_LOW[tile], TILE_HIGH[tile]), seat, move))
            self.opening_index = 0
            if table.spinner >= 0:
                self.spinner_index, self.spinner_line_b = 0, EAST
            return
        joined = table.ends[slot]
        if joined < 0:
            raise ValueError(f"move {move}: slot {SLOT_NAMES[slot]} is not open for {tile_name(tile)}")
        if not (matching_tiles([joined]) >> tile) & 1:
            raise ValueError(f"move {move}: {tile_name(tile)} does not match the "
                             f"{SLOT_NAMES[slot]} end ({joined})")
        had_spinner = table.spinner >= 0
        place_tile(table, tile, slot)
        table.placements += 1
        other = table.ends[slot]
        if slot == WEST:
            self.line.insert(0, PlacedTile(tile, (other, joined), seat, move))
            self.opening_index += 1
            if self.spinner_index is not None:
                self.spinner_index += 1
        elif slot == EAST:
            self.line.append(PlacedTile(tile, (joined, other), seat, move))
        else:
            self.branch(slot).append(PlacedTile(tile, (joined, other), seat, move))
            return
        if table.spinner >= 0 and not had_spinner:  # the first double: the spinner (R4)
            self.spinner_index = 0 if slot == WEST else len(self.line) - 1
            self.spinner_line_b = slot  # attached by line A, line B faces outward



def normalise_moves(moves) -> list[tuple[int, int]]:
    """``[(seat, action)]`` from engine tuples ``(seat, action, end_sum, points)`` or record dicts."""
    out = []
    for index, move in enumerate(moves):
        if isinstance(move, dict):
            try:
                seat, action = int(move["seat"]), int(move["action"])
            except (KeyError, TypeError, ValueError):
                raise ValueError(f"move {index}: needs integer 'seat' and 'action': "
                                 f"{shown(move)}") from None
        else:
            seat, action = int(move[0]), int(move[1])
        out.append((seat, action))
    return out


def moves_of(round_log) -> list[tuple[int, int]]:
    """The (seat, action) list of a :class:`~sevenrocks_env.rules.Round`, a record round dict or a list."""
    if isinstance(round_log, dict):
        return normalise_moves(round_log.get("moves", []))
    if hasattr(round_log, "moves"):
        return normalise_moves(round_log.moves)
    return normalise_moves(round_log)


def last_placement(moves) -> tuple[int, int] | None:
    """``(move index, seat)`` of the last tile laid among ``moves`` (as :func:`moves_of` takes
    them), or ``None`` before the first: the tile the board outlines, also after knocks."""
    pairs = moves_of(moves)
    for index in range(len(pairs) - 1, -1, -1):
        if pairs[index][1] != KNOCK:
            return index, pairs[index][0]
    return None


def build_layout(moves) -> BoardDrawing:
    """Replay the placements of one round (knocks are skipped) into a :class:`BoardDrawing`."""
    layout = BoardDrawing()
    for index, (seat, action) in enumerate(moves_of(moves)):
        if action == KNOCK:
            continue
        if not 0 <= action < KNOCK:
            raise ValueError(f"move {index}: action {action} is out of range 0..112")
        tile, slot = decode_action(action)
        layout.place(seat, tile, slot, index)
    return layout


def layout_from_tiles(sequence) -> BoardDrawing:
    """A layout from ``[("1|4", slot), ...]`` played in turn from seat 0 (tests)."""
    moves = [(i % 4, 4 * parse_tile(tile) + slot) for i, (tile, slot) in enumerate(sequence)]
    return build_layout(moves)


__all__ = ["BoardDrawing", "PlacedTile", "build_layout", "layout_from_tiles", "moves_of",
           "normalise_moves", "EAST", "NORTH", "SOUTH", "WEST"]
