"""``sevenrocks`` command line: one subcommand per module (arena, replay, play, train, ...)."""

from __future__ import annotations

import importlib
import os
import re
import sys

SUBCOMMANDS = {
    "arena": ("sevenrocks_env.arena", "duplicate-deal matches and round robins between agents"),
    "replay": ("sevenrocks_env.render.replay", "turn a game record into a GIF or PNG frames"),
    "play": ("sevenrocks_env.play", "play a seat yourself in the terminal"),
    "serve": ("sevenrocks_env.web", "play against the bots in a web page (needs the [web] extra)"),
    "train": ("training.train", "PPO self-play training (same as python -m training.train)"),
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    return guarded("sevenrocks", lambda: _dispatch(argv))  # its own usage text too (| head)


def escape_unwritable_characters() -> None:
    """Characters stdout's encoding lacks are written as escapes (``\\xe9``), as stderr's are:
    on a Latin-1 or ASCII terminal, an answer typed with an accent, or the help's dash, was a
    ``UnicodeEncodeError`` traceback (``sevenrocks play`` then saved no record)."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        try:
            reconfigure(errors="backslashreplace")
        except (ValueError, OSError):  # a closed or odd stream: left as it is
            pass


def _dispatch(argv: list[str]) -> int:
    if argv[:1] == ["--version"]:
        from . import __version__
        print(f"sevenrocks {__version__}")
        return 0
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in SUBCOMMANDS:
        print("usage: sevenrocks [--version] {" + ",".join(SUBCOMMANDS) + "} ...\n")
        for name, (_, text) in SUBCOMMANDS.items():
            print(f"  {name:<8} {text}")
        if not argv:  # a usage error, as argparse says for a missing argument
            print("\nerror: give a subcommand", file=sys.stderr)
            return 2
        if argv[0] not in ("-h", "--help"):
            print(f"\nerror: unknown subcommand {argv[0]!r}", file=sys.stderr)
            return 2
        return 0
    try:
        module = importlib.import_module(SUBCOMMANDS[argv[0]][0])
    except ImportError as error:  # an optional extra is missing (torch for train, ...)
        hider = hiding_package(SUBCOMMANDS[argv[0]][0].split(".")[0])
        if hider:
            print(f"error: sevenrocks {argv[0]}: {hider} is named 'training' too, and it hides "
                  f"sevenrocks' trainer ({error}); run from another folder, or rename that one",
                  file=sys.stderr)
        else:
            print(f"error: sevenrocks {argv[0]} needs a package that is not installed ({error});"
                  f" install the matching extra from the checkout, e.g. pip install -e "
                  "'.[train]'", file=sys.stderr)
        return 2
    return guarded(f"sevenrocks {argv[0]}", lambda: module.main(argv[1:]))


def hiding_package(name: str) -> str | None:
    """The folder (or file) of the module ``name`` that was imported if it is not ours
    (installed beside ``sevenrocks_env``): a user's own ``training/`` or ``training.py`` in the
    working folder hides our trainer, whose top-level name is that common."""
    module = sys.modules.get(name)
    if module is None:
        return None
    where = [os.path.realpath(p) for p in getattr(module, "__path__", [])] or [
        os.path.realpath(f) for f in [getattr(module, "__file__", None)] if f]  # training.py
    ours = os.path.realpath(os.path.join(os.path.dirname(__file__), os.pardir, name))
    return None if not where or ours in where else where[0]


def silence_stdout() -> None:
    """Point stdout at ``/dev/null``: its reader went away (``| head``), and the interpreter's
    flush at exit must not fail with "Exception ignored ... BrokenPipeError" (exit status 120)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no stdout, or not a file
        pass


def guarded(command: str, run) -> int:
    """``run()``'s exit status, with a closed or full stdout handled as a command line should:
    a reader that went away (``| head``) stops it quietly, as cat and grep do; any other
    ``OSError`` that reaches here is one line naming ``command``, not a traceback.  A Ctrl-C
    that no subcommand handles (while ``train`` imports torch: seconds) is one line and
    status 130, as the subcommands' own handlers say it.  Characters stdout's encoding lacks
    are escaped (:func:`escape_unwritable_characters`)."""
    escape_unwritable_characters()
    try:
        return run()
    except KeyboardInterrupt:
        print(f"{command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        silence_stdout()
        return 1
    except OSError as error:  # stdout full (/dev/full) or gone
        where = f" ({str(error.filename)[:80]})" if error.filename else ""
        print(f"error: {command}: {error.strerror or error}{where}", file=sys.stderr)
        return 2


def help_text(doc: str) -> str:
    """A docstring as ``--help`` prints it: reStructuredText's ``code`` and :mod:`name` marks
    dropped (the terminal shows them as they are typed)."""
    return re.sub(r"``([^`]+)``|:[a-z]+:`([^`]+)`", lambda found: found[1] or found[2], doc)


def run_as(subcommand: str) -> int:
    """``python -m MODULE ARGS`` as ``sevenrocks SUBCOMMAND ARGS``: the same handling of a
    closed or full stdout (one line, not a traceback)."""
    return main([subcommand, *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
