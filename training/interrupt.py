"""Ctrl-C during a training run (:func:`training.train.train`): the first one lets the current
update finish and a resumable checkpoint be written, the second one stops at once."""

from __future__ import annotations

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
