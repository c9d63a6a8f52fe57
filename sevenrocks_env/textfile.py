"""Reading a small text file from an untrusted source: at most ``limit`` bytes are read (a
larger file is refused, not read whole), and the bytes must be UTF-8.  Game records and
training configs are read this way.  A regular file or a pipe is read (``... | sevenrocks replay
/dev/stdin --check``); a device such as ``/dev/zero`` is not a file of text, and a named FIFO is
opened without waiting for a writer (``open()`` would block until one comes: for ever), so one
that nobody writes reads as empty."""

from __future__ import annotations

import os
import stat

#: Opened without waiting: ``open()`` of a FIFO blocks until a writer opens it.
_NO_WAIT = getattr(os, "O_NONBLOCK", 0)


def read_text(path, limit: int, what: str) -> str:
    """The text of ``path``; ``ValueError`` saying why not, naming ``what`` ("game record")."""
    try:
        descriptor = os.open(path, os.O_RDONLY | _NO_WAIT)
    except OSError as error:
        raise ValueError(f"cannot read {what} {path}: {error.strerror or error}") from None
    except ValueError as error:  # "embedded null byte" named no path
        raise ValueError(f"cannot read {what} {str(path)!r}: {error}") from None
    mode = os.fstat(descriptor).st_mode  # the file opened: no race
    problem = None if stat.S_ISFIFO(mode) else not_regular(mode, what)
    if problem:
        os.close(descriptor)
        raise ValueError(f"{path} {problem}")
    if _NO_WAIT:  # reads wait for the writer again (a pipe's data may come slowly)
        os.set_blocking(descriptor, True)
    with os.fdopen(descriptor, "rb") as file:
        try:
            data = file.read(limit + 1)
        except OSError as error:
            raise ValueError(f"cannot read {what} {path}: {error.strerror or error}") from None
    if len(data) > limit:
        size = f"{limit // 2**20} MB" if limit >= 2**20 else f"{limit} bytes"
        raise ValueError(f"{path} is larger than {size}; not a {what}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path} is not UTF-8 text (byte {error.start})") from None


def not_regular(mode: int, what: str) -> str | None:
    """Why a file of ``st_mode`` ``mode`` is not a ``what`` to read ("is a folder, ...", "is
    not a regular file (...)"), or ``None`` for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return f"is a folder, not a {what}"
    return (f"is not a regular file (a device?), not a {what}: save it to a file and give "
            "that file")
