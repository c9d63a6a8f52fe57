"""Ctrl-C during a training run (:func:`training.train.train`): the first one lets the current
update finish and a resumable checkpoint be written, the second one stops at once."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading


class Interrupt:
    """Ctrl-C during training: the first one asks the loop to stop after the current update
    (so the checkpoint is consistent); the second one stops at once."""

    def __init__(self):
        self.requested = False
        self._previous = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print("\ninterrupt: finishing this update, then writing a checkpoint "
              "(Ctrl-C again to stop at once)", file=sys.stderr, flush=True)


@contextlib.contextmanager
def ctrl_c_as_keyboard_interrupt():
    """Python's own SIGINT handler (``KeyboardInterrupt``) while a command runs, in the main
    thread, the handler before it put back after: a run started in the background by a script
    (``cmd &``) inherits SIGINT ignored, and ``kill -INT PID`` is how such a run is stopped."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
