"""The pair log's file, opened once and locked: what :class:`~sevenrocks_env.arena_log.PairLog`
reads, cuts and appends to.

A run opens its ``--log`` file once (made, empty, if missing: never truncated by the opening)
and takes an exclusive ``fcntl.flock`` on it (non-blocking) before it reads a byte; it then
reads the log, cuts a last line cut short and appends its pairs all through that one
descriptor, never by opening the path again, so every byte it reads or writes is in the file
it holds locked.  A second run given the same file is refused with a
:class:`~sevenrocks_env.arena_log.PairLogError` before it reads or writes anything (on a system
without ``fcntl`` there is no lock).

A ``flock`` belongs to the open file, which a forked process shares: the arena's worker
processes, forked while the run holds its log, would keep the log locked after the run itself
was killed (``kill -9``), until they ended.  So in every process forked while a log is held,
the log's descriptor is pointed at ``os.devnull`` at once (``os.register_at_fork``): only the
run that took the lock holds it, and a child that wrote to the log by mistake would write
nothing.  The folder of the log is never made: a path whose folder is missing (a typo) is
refused.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: logs are not locked
    fcntl = None

#: The descriptors of the logs this process holds locked (none in a process forked from it).
_HELD: set[int] = set()


def _error(message: str):
    from .arena_log import PairLogError  # (imported here: arena_log imports this module)
    return PairLogError(message)


def check_log_folder(path) -> None:
    """A :class:`~sevenrocks_env.arena_log.PairLogError` unless the folder ``path`` goes in
    exists: a pair log's folder is not made (a mistyped path would make folders anywhere)."""
    folder = Path(path).parent
    if not folder.is_dir():
        why = "is not a folder" if folder.exists() else "does not exist"
        raise _error(f"{path}: the folder {folder} {why} (the arena makes no folder for its "
                     "log: create it, or correct the path)")


def open_locked(path: Path):
    """``path`` (made, empty, if missing) open in binary for reading and, where the file can
    be written, writing, at its start, holding the log's exclusive ``flock``; a
    :class:`~sevenrocks_env.arena_log.PairLogError` if its folder is missing or another open
    file holds the lock (another arena run).  Release it with :func:`release`."""
    check_log_folder(path)
    try:
        descriptor, mode = os.open(path, os.O_RDWR | os.O_CREAT, 0o666), "r+b"
    except OSError as error:
        try:  # a finished log that cannot be written still reads back
            if error.errno not in (errno.EACCES, errno.EROFS):
                raise
            descriptor, mode = os.open(path, os.O_RDONLY), "rb"
        except OSError:
            raise _error(f"{path}: cannot open the pair log ({error.strerror})") from None
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):  # a FIFO or a device: never a log
        os.close(descriptor)
        raise _error(f"{path}: not a regular file (a pair log is a file of JSON lines)")
    file = os.fdopen(descriptor, mode)
    try:
        if fcntl is not None:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        file.close()
        raise _error(f"{path}: another arena is using this pair log (it is locked); wait for "
                     "that run to end, or give another --log file") from None
    except OSError as error:
        file.close()
        raise _error(f"{path}: cannot lock the pair log ({error.strerror})") from None
    except BaseException:
        file.close()
        raise
    _HELD.add(descriptor)
    return file


def release(file) -> None:
    """Write out what :func:`open_locked`'s ``file`` still buffers, then let its lock go and
    close it (None: nothing to release)."""
    if file is None:
        return
    _HELD.discard(file.fileno())
    try:
        if file.writable():
            file.flush()
    finally:
        try:
            if fcntl is not None:
                fcntl.flock(file.fileno(), fcntl.LOCK_UN)
        finally:
            file.close()


def _held_by_the_parent_only() -> None:
    """In a process just forked: point each held log's descriptor at ``os.devnull``, so this
    process shares no log (nor its lock) with the run that forked it.  The descriptor stays
    open (on the null device): the file object the child inherited may still close it."""
    if not _HELD:
        return
    null = os.open(os.devnull, os.O_RDWR)
    try:
        for descriptor in _HELD:
            os.dup2(null, descriptor, inheritable=False)
    finally:
        os.close(null)
        _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_held_by_the_parent_only)
