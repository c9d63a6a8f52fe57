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
    path = Path(path)
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


__all__ = ["atomic_path"]
