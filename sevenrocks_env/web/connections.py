"""How many connections ``sevenrocks serve`` holds, and for how long (see ``docs/web.md``).

uvicorn starts no timer on a connection before it has answered a request on it (its keep-alive
timeout counts from a response: Kludex/uvicorn#1192).  A client that opens sockets and sends
part of a request head (``GET / HTTP/1.1``, a header, never the blank line), or nothing at
all, held them for ever: a few hundred used up the process's file descriptors, and every other
request failed.  So:

* :class:`HeadDeadline`, uvicorn's h11 protocol with two timers more: a connection must deliver
  a request's whole head (request line and headers) within :data:`HEAD_SECONDS` of its opening,
  or of the first byte of that request after an earlier one was answered, and then its body
  within :data:`BODY_SECONDS`, else it is closed.  The app answers 408 to a body not all there
  within ``api.BODY_SECONDS``, a little earlier; but uvicorn times nothing while a body is on
  its way, also after an early answer (413, 408, a GET that ignores its body), so a byte sent
  now and then held a connection for ever.  A client that reads no answer (one waits to be sent)
  has :data:`WRITE_SECONDS` to start.  The time between requests is uvicorn's keep-alive
  timeout (``timeout_keep_alive``, 5 s);
* :func:`raise_open_files_limit` lifts the soft limit on open files towards the hard one, and
  :func:`connection_limit` bounds the connections served at once (uvicorn's
  ``limit_concurrency``: past it a request is answered 503 at once).
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from . import api

#: Seconds a connection has to deliver a request's head (the test suite sets less).
HEAD_SECONDS = 10.0
#: Seconds it then has for the body: the app's own limit and a little more for its 408 to go.
BODY_SECONDS = api.BODY_SECONDS + 5.0
#: Seconds an answer may wait for a client that reads none of it (its buffers full).
WRITE_SECONDS = 30.0
#: Connections served at once, at most: a LAN of players' browsers (six connections each) and
#: scripts stay well under it; past it (or past half the open-files limit), a request is 503.
MAX_CONNECTIONS = 512
#: The soft open-files limit asked for, when the hard limit allows it.
OPEN_FILES = 8192


class HeadDeadline(H11Protocol):
    """uvicorn's ``H11Protocol``, closing a connection whose request head is not all there
    :data:`HEAD_SECONDS` after the connection opened or that head's first byte came, or whose
    body is not all there :data:`BODY_SECONDS` after its head."""

    timer: asyncio.TimerHandle | None = None
    timing: object = None  # what the timer waits for: "head", or the cycle whose body
    write_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        # pause_writing as soon as anything waits to be sent, not past asyncio's 64 KiB: under
        # that, an unread answer made uvicorn's close wait for ever, with no timer left
        transport.set_write_buffer_limits(high=0)
        self._time("head", HEAD_SECONDS)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        state = self.conn.their_state
        if state is h11.IDLE:  # a request head on its way (counted from its first byte)
            if self.timing != "head":  # (a refused request's body timer ends here)
                self._time("head", HEAD_SECONDS)
        elif state is h11.SEND_BODY:  # its body on its way (counted from the head's end)
            if self.timing is not self.cycle:  # this request's, not an earlier one's
                self._time(self.cycle, BODY_SECONDS)
        else:  # the whole request in, or the connection over: the answer is the app's
            self._stop_timing()

    def pause_writing(self) -> None:
        """An answer waits to be sent (the client reads nothing, its buffers full): it has
        :data:`WRITE_SECONDS` to start reading (pipelined requests never read held a
        connection for ever)."""
        super().pause_writing()
        if self.write_timer is None:
            self.write_timer = self.loop.call_later(WRITE_SECONDS, self.transport.abort)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self.write_timer is not None:
            self.write_timer.cancel()
            self.write_timer = None

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timing()
        if self.write_timer is not None:
            self.write_timer.cancel()
        super().connection_lost(exc)

    def _time(self, what, seconds: float) -> None:
        self._stop_timing()
        if not self.transport.is_closing():
            self.timer, self.timing = self.loop.call_later(seconds, self._too_late), what

    def _stop_timing(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.timer = self.timing = None

    def _too_late(self) -> None:
        self.timer = self.timing = None
        if not self.transport.is_closing():
            self.transport.abort()  # a client this slow is not waiting for an answer


def raise_open_files_limit() -> int | None:
    """Lift the soft ``RLIMIT_NOFILE`` to :data:`OPEN_FILES`, or the hard limit if lower (many
    systems start a process at 256 or 1024); the soft limit now, ``None`` where there is none
    to read (Windows)."""
    try:
        import resource
    except ImportError:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = OPEN_FILES if hard == resource.RLIM_INFINITY else min(OPEN_FILES, hard)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):  # macOS may refuse past its kern.maxfilesperproc
            pass
    return None if soft == resource.RLIM_INFINITY else soft


def connection_limit(open_files: int | None) -> int:
    """:data:`MAX_CONNECTIONS`, or half the open-files limit if that is less: the other half
    is left to the listening socket, connections accepted past the limit (answered 503) and
    the files the server opens."""
    return MAX_CONNECTIONS if open_files is None else max(1, min(MAX_CONNECTIONS, open_files // 2))


__all__ = ["BODY_SECONDS", "HEAD_SECONDS", "HeadDeadline", "MAX_CONNECTIONS", "OPEN_FILES",
           "WRITE_SECONDS", "connection_limit", "raise_open_files_limit"]
