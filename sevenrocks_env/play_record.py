"""Where ``sevenrocks play`` saves its game record: checked before the game (a folder, a file
an agent loads, a symbolic link, a path that cannot take files are refused), and never over an
existing file."""

from __future__ import annotations

import os
from pathlib import Path

from .agents import spec_files
from .atomic_file import OutputError, check_output_folder


def existing_file_problem(path: Path, specs) -> str | None:
    """Why ``path`` must not take the record: it is a file one of the agent ``specs`` loads
    (writing the record would destroy a checkpoint), or any other file (a record never
    replaces one; a device such as /dev/null is written into), or ``None``."""
    if not path.is_file():
        return None
    for spec in set(specs):
        try:
            sources = spec_files(spec)
        except ValueError:  # an incomplete spec: make_agent says what is wrong with it
            continue
        for source in sources:
            if Path(source).is_file() and os.path.samefile(path, source):
                return f"is the file {source} of agent {spec!r}: the record would destroy it"
    return "exists already: give a new file name (the record would replace it)"


def unused_path(path: Path) -> Path:
    """``path``, or with ``-2``, ``-3``, ... before its suffix while a file is there: a record
    never replaces a file (the default name of a seed played again, a file made during a game)."""
    candidate, copy = path, 1
    while os.path.lexists(candidate):  # a link to nothing too: the save would follow it
        copy += 1
        candidate = path.with_name(f"{path.stem}-{copy}{path.suffix}")
    return candidate


def record_path_problem(path: Path, default: bool) -> str | None:
    """Why ``path`` cannot take the game record (checked before the game), or ``None``."""
    try:
        if path.is_symlink():  # to nothing too: exists() says no, and the save would follow it
            return ("is a symbolic link: give a new file name (a record is never written "
                    "where a link points)")
        if path.is_dir():
            return "is a folder; give a file name"
        folder = path.parent if str(path.parent) else Path(".")
        if not folder.exists() and os.path.lexists(folder):  # a link to nothing: mkdir fails
            return f"folder {folder} is a symbolic link to nothing"
        if not folder.exists() and not default:
            return f"folder {folder} does not exist"
        if not path.exists() or path.is_file():  # a device (/dev/null) is written into
            check_output_folder(folder)  # it (or the folder it goes in) takes files: /proc not
        if path.exists() and not os.access(path, os.W_OK):
            return "not writable"
    except OutputError as error:
        return error.reason
    except OSError as error:  # a name too long for the file system, say
        return f"cannot be used ({error.strerror or type(error).__name__})"
    return None
