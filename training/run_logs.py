"""The run's TensorBoard logs (``SummaryWriter``), with a write that fails said in one line.

TensorBoard's event file is written by a thread of its own: a write that failed there (the disk
full) was printed by that thread as a traceback, then raised at the writer's next call as a bare
``[Errno 28] No space left on device`` that named neither the logs nor the run's checkpoints.
"""

from __future__ import annotations

import threading
from pathlib import Path


class LogsError(OSError):
    """The run's TensorBoard logs cannot be written (a full disk, a quota): the message names
    their folder and says which checkpoint the run kept."""


class LogWriter:
    """The run's :class:`SummaryWriter`, whose event file a thread of its own writes.  A write
    that failed there (the disk full) was printed by that thread as a traceback, then raised at
    the writer's next call as a bare ``[Errno 28] No space left on device``; here the thread is
    quiet and the call raises :class:`LogsError` with ``stopped(reason)``'s message."""

    def __init__(self, run_dir: Path, purge_step, stopped):
        from torch.utils.tensorboard import SummaryWriter

        self._stopped, self._hook = stopped, threading.excepthook
        threading.excepthook = self._quiet  # from before the first event: the writer writes it
        self._writer = self._call(SummaryWriter, str(run_dir), purge_step=purge_step)

    def __getattr__(self, name):  # add_scalar, add_text, add_image
        if name.startswith("_"):
            raise AttributeError(name)
        method = getattr(self._writer, name)
        return lambda *args, **kwargs: self._call(method, *args, **kwargs)

    def close(self):
        self._call(self._writer.close)
        if threading.excepthook == self._quiet:  # its thread has ended (after a failed write,
            threading.excepthook = self._hook    # it may still be on its way out: kept quiet)

    def _call(self, method, *args, **kwargs):
        try:
            return method(*args, **kwargs)
        except OSError as error:
            raise LogsError(self._stopped(error.strerror or str(error))) from None

    def _quiet(self, args):
        """A thread's error that it keeps for its writer's next call to raise (the event file
        writer's ``exception``) is said there, once; any other thread's goes to the hook."""
        if getattr(args.thread, "exception", None) is not args.exc_value \
                or not isinstance(args.exc_value, OSError):
            self._hook(args)


__all__ = ["LogWriter", "LogsError"]
