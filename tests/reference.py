"""An independent, slow reference model of the layout, for property tests.

It keeps the physical layout as placed tiles with free sides (R3, R4) instead of the engine's
per-slot summary, and recomputes legal moves and counted ends (R5) from that graph.  The two
implementations share nothing but the tile table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sevenrocks_env.tiles import KNOCK, TILES


@dataclass
class Side:
    number: int
    label: int        # 0 west, 1 east, 2 north, 3 south
    branch: bool = False  # a spinner's side arm


@dataclass
class Placed:
    tile: int
    free: list = field(default_factory=list)  # free Sides
    spinner: bool = False
    line_sides_joined: int = 0


class ReferenceLayout:
    def __init__(self):
        self.placed: list[Placed] = []
        self.spinner: Placed | None = None

    def _double(self, tile):
        low, high = TILES[tile]
        return low == high

    def open_sides(self):
        """(placed, side) pairs that are legal continuation points."""
        out = []
        for p in self.placed:
            for side in p.free:
                if side.branch and p.line_sides_joined < 2:
                    continue  # both straight continuations first (R4)
                out.append((p, side))
        return out

    def legal(self, hand_tiles):
        if not self.placed:
            return sorted(4 * t for t in hand_tiles)
        actions = set()
        for _, side in self.open_sides():
            for t in hand_tiles:
                if side.number in TILES[t]:
                    actions.add(4 * t + side.label)
        return sorted(actions) or [KNOCK]

    def place(self, tile, slot):
        low, high = TILES[tile]
        double = low == high
        if not self.placed:
            p = Placed(tile)
            if double:
                p.spinner = True
                self.spinner = p
                p.free = [Side(low, 0), Side(low, 1), Side(low, 2, True), Side(low, 3, True)]
            else:
                p.free = [Side(low, 0), Side(high, 1)]
            self.placed.append(p)
            return
        matches = [(q, s) for q, s in self.open_sides() if s.label == slot]
        assert len(matches) == 1, "one open side per slot"
        q, side = matches[0]
        assert side.number in (low, high)
        q.free.remove(side)
        if q.spinner and not side.branch:
            q.line_sides_joined += 1
        other = high if side.number == low else low
        p = Placed(tile)
        if double and self.spinner is None:
            p.spinner = True
            self.spinner = p
            p.line_sides_joined = 1  # attached by its line A side
            p.free = [Side(other, slot), Side(other, 2, True), Side(other, 3, True)]
        else:
            p.free = [Side(other, slot)]
        self.placed.append(p)

    def counted_by_slot(self):
        """What each slot (west, east, north, south) adds to the end sum (R5), read off the
        free sides; a spinner with an open straight side counts once, at its lowest free label."""
        counted = [0, 0, 0, 0]
        for p in self.placed:
            low, high = TILES[p.tile]
            if p.spinner:
                line_free = [s for s in p.free if not s.branch]
                if line_free:  # a spinner with an open straight side: both halves, once
                    counted[min(s.label for s in line_free)] += low + high
                continue  # internal spinner counts nothing; unopened branches count 0
            for side in p.free:
                counted[side.label] += low + high if low == high else side.number
        return tuple(counted)

    def counted_sum(self):
        return sum(self.counted_by_slot())
