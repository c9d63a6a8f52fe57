"""Draw the worked-example pictures of docs/rules.md with the project's own renderer.

    .venv/bin/python docs/make_rule_pictures.py            # writes docs/rules_example_*.png
    .venv/bin/python docs/make_rule_pictures.py --out DIR  # somewhere else

Each picture is the board right after one step of an example, as read from the package's data
file (``sevenrocks_env/data/worked_examples.json``) and played through the engine; nobody's hand
is shown (the examples only fix the tiles placed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from PIL import Image

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent / "tests"))  # rules_examples: the one loader of the example data

from rules_examples import EXAMPLES, example_match  # noqa: E402

from sevenrocks_env.render.picture import board_box, draw_picture  # noqa: E402

#: (example, step) pictured in docs/rules.md
PICTURES = [("A", 5), ("A", 9), ("B", 1), ("C", 2), ("C", 4), ("D", 2), ("D", 3)]
#: felt kept above and below the layout, in pixels (the rest of the empty board is cut away)
MARGIN = 40


def picture_name(example: str, step: int) -> str:
    return f"rules_example_{example.lower()}_step{step}.png"


def draw(example: str, step: int) -> Image.Image:
    """The board after ``step`` placements of ``example``: the renderer's picture, with the empty
    felt above and below the layout cut away (scores on top and seats below are kept)."""
    image, geometry = draw_picture(example_match(EXAMPLES[example], steps=step))
    _, board_top, width, board_bottom = board_box(image.size)
    tops = [t.box[1] for t in geometry.tiles] + [m.center[1] - m.radius for m in geometry.markers]
    bottoms = [t.box[3] for t in geometry.tiles] + [m.center[1] + m.radius for m in geometry.markers]
    top, bottom = max(board_top, min(tops) - MARGIN), min(board_bottom, max(bottoms) + MARGIN)
    parts = [(0, board_top), (top, bottom), (board_bottom, image.size[1])]
    out = Image.new("RGB", (width, sum(b - a for a, b in parts)))
    y = 0
    for a, b in parts:
        out.paste(image.crop((0, a, width, b)), (0, y))
        y += b - a
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DOCS, help="folder for the PNG files (default: docs/)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for example, step in PICTURES:
        path = args.out / picture_name(example, step)
        draw(example, step).save(path, optimize=True)
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
