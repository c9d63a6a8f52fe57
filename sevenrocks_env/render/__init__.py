"""Rendering: text board (:mod:`.text`), board picture (:mod:`.picture`), replays (:mod:`.replay`).

:mod:`.layout` rebuilds the physical layout of a round (line, spinner, branches) from its moves;
every view draws from it.
"""

from .layout import BoardDrawing, PlacedTile, build_layout
from .text import describe_move, render_text

__all__ = ["BoardDrawing", "PlacedTile", "build_layout", "describe_move", "render_text"]
