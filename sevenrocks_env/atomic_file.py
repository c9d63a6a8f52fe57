"""Writing a file so that an interrupted write never leaves a partial one: the bytes go to a
temporary file beside the target, renamed over it once complete.  Policy checkpoints, labels
files and replay GIFs are written this way."""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path):
    """Yields a temporary path in ``path``'s folder (so the rename is atomic) to write to.  When
    the block ends without an exception the file gets the permissions ``open()`` would give it
    (``mkstemp`` makes it 0600) and replaces ``path``; the temporary file never outlives the
    block, whatever happens in it."""
    path = check_output_file(path)  # never replace /dev/null or a folder
    handle, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    os.close(handle)
    try:
        yield Path(partial)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(partial, 0o666 & ~umask)
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def check_output_file(path, inputs=()) -> Path:
    """``path`` as a file this run may write, checked before any work: it is not something
    other than a regular file (a folder, ``/dev/null``), its folder (made by the caller if
    missing) is not a file, and it is none of ``inputs`` (writing over a file the run reads
    destroys it).  ``ValueError`` says which."""
    path = Path(path)
    if not path.name or path.name in (".", ".."):
        raise ValueError(f"output {str(path)!r}: give a file name")
    if path.parent.exists() and not path.parent.is_dir():
        raise ValueError(f"output {path}: {path.parent} is not a folder")
    if path.exists():
        if not path.is_file():
            raise ValueError(f"output {path} exists and is not a regular file: give a file "
                             "path to write")
        for source in inputs:
            if Path(source).exists() and os.path.samefile(path, source):
                raise ValueError(f"output {path} is the input {source}: writing it would "
                                 "destroy the input; give another --out")
    return path


__all__ = ["atomic_path", "check_output_file"]
