"""Learning curve picture from a run's TensorBoard logs: eval win rate against wall time.

    python -m training.plot_curve runs/<run> --out docs/learning_curve.png

Reads the ``eval/win_rate_vs_<agent>`` scalars and ``eval/wall_minutes`` (logged at each
evaluation, resume-safe) and draws them with Pillow (no plotting library needed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from PIL import Image, ImageDraw

COLOURS = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189)]
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 900, 520, 70, 170, 40, 60


def read_curves(run_dir) -> tuple[dict[str, list[tuple[float, float]]], str]:
    """``{agent: [(minutes, win_rate), ...]}`` and the run name."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    acc.Reload()
    tags = acc.Tags()["scalars"]
    if "eval/wall_minutes" not in tags:
        raise ValueError(f"{run_dir}: no evaluations logged (eval/wall_minutes missing)")
    minutes = {e.step: e.value for e in acc.Scalars("eval/wall_minutes")}
    curves = {}
    for tag in sorted(t for t in tags if t.startswith("eval/win_rate_vs_")):
        points = [(minutes[e.step], e.value) for e in acc.Scalars(tag) if e.step in minutes]
        curves[tag.removeprefix("eval/win_rate_vs_")] = sorted(points)
    return curves, Path(run_dir).name


def draw(curves: dict, title: str, out) -> Path:
    image = Image.new("RGB", (WIDTH, HEIGHT), "white")
    pen = ImageDraw.Draw(image)
    x_max = max((m for points in curves.values() for m, _ in points), default=1.0) or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def xy(minutes, rate):
        return LEFT + plot_w * minutes / x_max, TOP + plot_h * (1.0 - rate)

    for i in range(11):  # horizontal grid every 10%
        y = TOP + plot_h * i / 10
        pen.line([(LEFT, y), (LEFT + plot_w, y)], fill=(225, 225, 225))
        pen.text((LEFT - 40, y - 6), f"{100 - 10 * i}%", fill="black")
    for i in range(6):
        x = LEFT + plot_w * i / 5
        pen.line([(x, TOP + plot_h), (x, TOP + plot_h + 5)], fill="black")
        pen.text((x - 10, TOP + plot_h + 10), f"{x_max * i / 5:.0f}", fill="black")
    y50 = xy(0, 0.5)[1]
    pen.line([(LEFT, y50), (LEFT + plot_w, y50)], fill=(150, 150, 150), width=2)
    pen.rectangle([LEFT, TOP, LEFT + plot_w, TOP + plot_h], outline="black")
    for k, (agent, points) in enumerate(curves.items()):
        colour = COLOURS[k % len(COLOURS)]
        coords = [xy(m, r) for m, r in points]
        if len(coords) > 1:
            pen.line(coords, fill=colour, width=3)
        for x, y in coords:
            pen.ellipse([x - 3, y - 3, x + 3, y + 3], fill=colour)
        pen.line([(WIDTH - RIGHT + 15, TOP + 20 + 22 * k), (WIDTH - RIGHT + 40, TOP + 20 + 22 * k)],
                 fill=colour, width=3)
        pen.text((WIDTH - RIGHT + 47, TOP + 14 + 22 * k), f"vs {agent}", fill="black")
    pen.text((LEFT, 12), f"{title}: match win rate (duplicate arena) vs wall time", fill="black")
    pen.text((LEFT + plot_w / 2 - 60, HEIGHT - 25), "wall time (minutes)", fill="black")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    image.save(out)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.plot_curve", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", help="runs/<run-name>")
    parser.add_argument("--out", default="docs/learning_curve.png")
    args = parser.parse_args(argv)
    try:
        curves, name = read_curves(args.run_dir)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(draw(curves, name, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
