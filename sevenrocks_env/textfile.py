"""Reading a small text file from an untrusted source: at most ``limit`` bytes are read (a
larger file is refused, not read whole), and the bytes must be text in an encoding JSON
readers detect (:func:`decoded`: UTF-8, with or without a BOM, UTF-16, UTF-32).  Game records
and training configs are read this way.  A regular file or a pipe is read (``... | sevenrocks
replay /dev/stdin --check``, or a named FIFO a writer opens later); a device such as
``/dev/zero`` is not a file of text.  A FIFO is opened without waiting (``open()`` blocks until a writer comes: for
ever if none does), then waits at most :data:`PIPE_WAIT_S` for its first bytes."""

from __future__ import annotations

import codecs
import json
import os
import select
import stat

#: Opened without waiting: ``open()`` of a FIFO blocks until a writer opens it.
_NO_WAIT = getattr(os, "O_NONBLOCK", 0)
#: Seconds a pipe or FIFO may take to send its first bytes (or to close) before it is refused.
PIPE_WAIT_S = 60.0


def shown_path(path) -> str:
    """``path`` as text for a message: quoted when it holds characters a terminal would act on
    (an escape sequence in a file name from an archive)."""
    return str(path) if str(path).isprintable() else repr(str(path))


def decoded(data: bytes, name: str) -> str:
    """``data`` as text in the encoding ``json.loads(bytes)`` detects: UTF-8 with or without a
    byte order mark (Notepad writes one), UTF-16 or UTF-32 (PowerShell's ``>`` writes UTF-16).
    One rule for every reader of a record or a config, the web page's too; ``ValueError``
    naming ``name`` and the first bad byte otherwise."""
    encoding = json.detect_encoding(data)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as error:
        what = "UTF-8" if encoding.startswith("utf-8") else encoding.upper()
        # the byte's offset in the file: utf-8-sig counts its positions after the BOM it drops
        start = error.start + (len(codecs.BOM_UTF8) if encoding == "utf-8-sig" else 0)
        raise ValueError(f"{name} is not {what} text (byte {start})") from None


def open_without_waiting(path, refused) -> tuple[int, int]:
    """``(descriptor, st_mode)`` of ``path`` opened read-only without waiting for a FIFO's
    writer (``open()`` blocks until one comes), the mode that of the file opened (no race
    between a check and the read); ``refused(path as text, reason)`` is raised when it cannot
    be opened (a NUL byte in the path too: Python's "embedded null byte" named no path)."""
    text = shown_path(path)
    try:
        descriptor = os.open(path, os.O_RDONLY | _NO_WAIT)
    except OSError as error:
        raise refused(text, error.strerror or str(error)) from None
    except ValueError as error:
        raise refused(text, str(error)) from None
    return descriptor, os.fstat(descriptor).st_mode


def read_text(path, limit: int, what: str) -> str:
    """The text of ``path``; ``ValueError`` saying why not, naming ``what`` ("game record")."""
    descriptor, mode = open_without_waiting(
        path, lambda where, why: ValueError(f"cannot read {what} {where}: {why}"))
    problem = None if stat.S_ISFIFO(mode) else not_regular(mode, what)
    name = shown_path(path)
    if problem:
        os.close(descriptor)
        raise ValueError(f"{name} {problem}")
    if stat.S_ISFIFO(mode) and _NO_WAIT:
        if not _ready(descriptor, PIPE_WAIT_S):  # (a FIFO no writer opened: no event at all)
            os.close(descriptor)
            raise ValueError(f"{name} is a pipe nothing was written to in {PIPE_WAIT_S:g} s; "
                             f"not {a(what)}")
        os.set_blocking(descriptor, True)  # then read on as from any pipe
    with os.fdopen(descriptor, "rb") as file:
        try:
            data = file.read(limit + 1)
        except OSError as error:
            raise ValueError(f"cannot read {what} {name}: {error.strerror or error}") from None
    if len(data) > limit:
        size = f"{limit // 2**20} MB" if limit >= 2**20 else f"{limit} bytes"
        raise ValueError(f"{name} is larger than {size}; not {a(what)}")
    return decoded(data, name)


def a(what: str) -> str:
    """``what`` with its article: "a game record", "an arena result"."""
    return f"{'an' if what[:1].lower() in 'aeiou' else 'a'} {what}"


def _ready(descriptor: int, seconds: float) -> bool:
    """Whether the pipe ``descriptor`` has bytes to read, or its writer closed it, within
    ``seconds``."""
    if not hasattr(select, "poll"):  # (not on Windows, which has no FIFOs in the file system)
        return True
    poller = select.poll()
    poller.register(descriptor, select.POLLIN)
    return bool(poller.poll(seconds * 1000))


def not_regular(mode: int, what: str) -> str | None:
    """Why a file of ``st_mode`` ``mode`` is not a ``what`` to read ("is a folder, ...", "is
    not a regular file (...)"), or ``None`` for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return f"is a folder, not {a(what)}"
    return (f"is not a regular file (a device?), not {a(what)}: save it to a file and give "
            "that file")
