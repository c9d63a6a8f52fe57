"""``sevenrocks`` command line: one subcommand per module (arena, replay, play)."""

from __future__ import annotations

import importlib
import sys

SUBCOMMANDS = {
    "arena": ("sevenrocks_env.arena", "duplicate-deal matches and round robins between agents"),
    "replay": ("sevenrocks_env.render.replay", "turn a game record into a GIF or PNG frames"),
    "play": ("sevenrocks_env.play", "play a seat yourself in the terminal"),
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in SUBCOMMANDS:
        print("usage: sevenrocks {" + ",".join(SUBCOMMANDS) + "} ...\n")
        for name, (_, text) in SUBCOMMANDS.items():
            print(f"  {name:<8} {text}")
        if argv and argv[0] not in ("-h", "--help"):
            print(f"\nerror: unknown subcommand {argv[0]!r}", file=sys.stderr)
            return 2
        return 0
    module = importlib.import_module(SUBCOMMANDS[argv[0]][0])
    return module.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
