"""Finding a test's worker processes through ``/proc`` (Linux): a pool's workers are this
process's children, or a fork server's."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest

needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="finds the workers in /proc")


def _live_processes():
    """``(pid, parent, process group)`` of every live process (a zombie has exited: only its
    parent has not reaped it yet)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if fields[0] != "Z":
            yield int(stat.parent.name), int(fields[1]), int(fields[2])


def descendants() -> dict[int, int]:
    """This process's live children, theirs, and so on, each with its parent."""
    children = {}
    for pid, parent, _ in _live_processes():
        children.setdefault(parent, []).append(pid)
    found, todo = {}, [os.getpid()]
    while todo:
        parent = todo.pop()
        for child in children.get(parent, []):
            found[child] = parent
            todo.append(child)
    return found


def alive_in_group(group: int) -> list[int]:
    """The live processes of process group ``group``."""
    return [pid for pid, _, in_group in _live_processes() if in_group == group]


def pool_workers() -> list[int]:
    """The pools' workers: this process's children when a pool forks them, the fork server's
    when torch is loaded here (``arena_pool.pool_context``); not the fork server itself nor the
    resource tracker, this process's helpers (a fork server's children share its command line)."""
    me = os.getpid()
    return [pid for pid, parent in descendants().items()
            if not (parent == me and _helper(pid))]


def _helper(pid: int) -> bool:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False  # gone meanwhile
    return any(helper in command for helper in (b"multiprocessing.forkserver",
                                                 b"multiprocessing.resource_tracker"))


def wait_until(condition, seconds: float = 30.0) -> bool:
    """Poll ``condition()`` until it holds or ``seconds`` pass; whether it held."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@contextlib.contextmanager
def killed_group(run):
    """Around a test of ``run`` (a ``subprocess.Popen`` started with ``start_new_session=True``,
    so its workers share its process group): afterwards, whatever happened, nothing of the group
    is left running."""
    try:
        yield run
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(10)
        if alive_in_group(run.pid):
            os.killpg(run.pid, signal.SIGKILL)


def kill_9_ends_the_group(run, seconds: float) -> None:
    """SIGKILL ``run`` alone; every process of its group (its workers) must end within
    ``seconds``: nothing of the main process is left to stop them."""
    run.kill()
    run.wait(10)
    assert wait_until(lambda: not alive_in_group(run.pid), seconds), alive_in_group(run.pid)
