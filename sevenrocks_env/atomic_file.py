"""Writing a file so that an interrupted write never leaves a partial one: the bytes go to a
temporary file beside the target, renamed over it once complete.  Policy checkpoints, labels
files and replay GIFs are written this way."""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path, follow_links: bool = True):
    """Yields a temporary path in ``path``'s folder (so the rename is atomic) to write to.  When
    the block ends without an exception the file gets the permissions of the file it replaces,
    or those ``open()`` would give a new one (``mkstemp`` makes it 0600), and replaces ``path``
    (a symbolic link's target, the link kept; with ``follow_links=False`` the link itself, as a
    new file: for names a program chooses in a folder someone else may have filled); the
    temporary file never outlives the block, whatever happens in it.  A write into the temporary
    file that fails (the disk full) is an ``OSError`` naming ``path``: written through a file
    object (numpy, torch), its error named no file, or the temporary one."""
    path = named = check_output_file(path)  # never replace /dev/null or a folder
    replaces_link = False
    if path.is_symlink():
        if follow_links:
            path = Path(os.path.realpath(path))  # write where the link points, as open() would
        else:
            replaces_link = True
    # a short prefix: the temporary name fits wherever the target's does (255 bytes)
    handle, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:64]}.",
                                       suffix=".part")
    os.close(handle)
    try:
        yield Path(partial)
        if path.exists() and not replaces_link:
            mode = path.stat().st_mode & 0o777
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(partial, mode)
        os.replace(partial, path)
    except OSError as error:
        if error.filename not in (None, partial):  # another file's error: as it is
            raise
        raise OSError(error.errno, error.strerror or str(error), str(named)) from None
    finally:
        if os.path.exists(partial):
            os.remove(partial)


class OutputError(ValueError):
    """An output path this run cannot write: ``str()`` is ``"output PATH: REASON"``; ``reason``
    alone is there for callers that name the path their own way."""

    def __init__(self, path, reason: str):
        super().__init__(f"output {path}: {reason}")
        self.path, self.reason = path, reason


def check_output_file(path, inputs=()) -> Path:
    """``path`` as a file this run may write, checked before any work: it is not something
    other than a regular file (a folder, ``/dev/null``), its folder (made by the caller if
    missing) can take a new file (:func:`check_output_folder`), and it is none of ``inputs``
    (writing over a file the run reads destroys it).  :class:`OutputError` says which."""
    path = Path(path)
    if not path.name or path.name in (".", ".."):
        raise OutputError(repr(str(path)), "give a file name")
    try:
        check_output_folder(path.parent)
    except OutputError as error:
        raise OutputError(path, error.reason) from None
    if _exists(path, path):
        if not path.is_file():
            raise OutputError(path, "exists and is not a regular file: give a file path to write")
        for source in inputs:
            if Path(source).exists() and os.path.samefile(path, source):
                raise OutputError(path, f"is the input {source}: writing it would destroy the "
                                        "input; give another --out")
    return path


def check_output_folder(folder) -> Path:
    """``folder`` as one this run can write files in, checked before any work and without
    making anything: the folder, or its nearest ancestor that exists, is a folder in which a
    file can be made (a temporary one is made and removed).  :class:`OutputError` otherwise: a
    run that would fail at its first save fails here, with nothing left behind."""
    folder = Path(folder)
    existing = folder
    while not _exists(existing, folder) and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise OutputError(folder, f"{existing} is not a folder")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        raise OutputError(folder, f"cannot write in {existing}: {error.strerror or error}") \
            from None
    return folder


def _exists(path: Path, named) -> bool:
    """``path.exists()``, an :class:`OutputError` about ``named`` where the file system refuses
    the name itself (too long: ``exists`` raises rather than answers)."""
    try:
        return path.exists()
    except OSError as error:
        raise OutputError(named, error.strerror or str(error)) from None


__all__ = ["OutputError", "atomic_path", "check_output_file", "check_output_folder"]
