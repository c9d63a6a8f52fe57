"""Worker processes for the arena: duplicate pairs played in parallel, results in pair order.

Each worker builds its own agents from the spec strings once and plays what it is sent: single
pairs with :func:`sevenrocks_env.arena.play_pair` (the unbatched arena; agents re-seeded per
match from ``(seed, pair, match, seat)``), or spans of pairs stepped together with
:func:`sevenrocks_env.arena_batched.play_pairs_batched` (the batched arena; every agent a
function of the env's own coordinates).  Either way the outcome does not depend on the number
of workers or on which worker plays what.

The workers ignore Ctrl-C: the main process stops them.  A worker that dies (killed, out of
memory) or cannot start is a :class:`WorkerDied` error in the main process, not a hang (a
``multiprocessing.Pool`` would wait for the lost task for ever), and the other workers are
stopped at once when the generator is closed before its end (Ctrl-C, an error: the callers
read it inside ``contextlib.closing``).  A worker whose main process is killed outright
(``kill -9``) ends at once too (:func:`end_with_parent`).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
from collections import deque
from contextlib import contextmanager
from itertools import islice
from concurrent.futures import ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import forkserver

from .agents import make_agent
from .fingerprints import check_files, run_fingerprints

_WORKER: dict = {}
#: Chunks submitted ahead per worker: enough to keep every worker busy while the chunk read
#: next is still being played, few enough that a dead worker is seen early.
CHUNKS_IN_FLIGHT = 4


class WorkerDied(RuntimeError):
    """An arena worker process died (killed, out of memory) or could not start."""


def _pair_init(spec_a: str, spec_b: str, seed: int, target: int, max_rounds: int,
               files: tuple) -> None:
    _WORKER.update(a=[make_agent(spec_a), make_agent(spec_a)],
                   b=[make_agent(spec_b), make_agent(spec_b)],
                   seed=seed, target=target, max_rounds=max_rounds)
    check_files((spec_a, spec_b), files)


def _play_pair(pair: int):
    from .arena import play_pair
    w = _WORKER
    return play_pair(w["a"], w["b"], w["seed"], pair, w["target"], w["max_rounds"])


def _span_init(spec_a: str, spec_b: str, seed: int, target: int, max_rounds: int,
               threads: int, files: tuple) -> None:
    import torch

    from .batched_agents import batched_agent
    torch.set_num_threads(threads)
    _WORKER.update(a=batched_agent(spec_a), b=batched_agent(spec_b), seed=seed, target=target,
                   max_rounds=max_rounds)
    check_files((spec_a, spec_b), files)


def _play_span(span: tuple[int, int]):
    from .arena_batched import play_pairs_batched
    w, (first, count) = _WORKER, span
    return play_pairs_batched(w["a"], w["b"], w["seed"], first, count, w["target"],
                              w["max_rounds"])


def pool_context():
    """Fork, unless torch is loaded here: a forked child of a process whose torch thread pool
    has started can hang, so then use a fork server (the caller needs the usual
    ``if __name__ == "__main__":`` guard, as with any non-fork start method), started with
    Ctrl-C ignored (:func:`_start_fork_server_ignoring_ctrl_c`)."""
    if "torch" not in sys.modules:
        return multiprocessing.get_context("fork")
    _start_fork_server_ignoring_ctrl_c()
    return multiprocessing.get_context("forkserver")


def _start_fork_server_ignoring_ctrl_c() -> None:
    """Start this process's fork server, if it is not running yet, with SIGINT ignored.

    Every process the fork server forks starts with the Ctrl-C handler the server itself
    started with, and a fresh Python keeps an inherited SIG_IGN.  So the workers ignore Ctrl-C
    from their first instant, not only once their initializer runs: a Ctrl-C while a worker is
    still importing torch (a second or two) would otherwise kill it (a traceback in the arena,
    ``WorkerDied`` in a distillation collection).  A Ctrl-C to this process in the few
    milliseconds the server takes to start is lost.  Signal handlers can only be set from the
    main thread; from another thread, or when SIGINT's handler was not set from Python, the
    fork server starts as it is (the workers' initializers still ignore Ctrl-C)."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous is None:
        forkserver.ensure_running()
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        forkserver.ensure_running()
    finally:
        signal.signal(signal.SIGINT, previous)


_SIGTERM_OWNER = [0]  # the process whose SIGTERM becomes Ctrl-C (not a worker forked from it)


def _sigterm_as_interrupt(signum, frame):
    if os.getpid() != _SIGTERM_OWNER[0]:  # a worker forked meanwhile: ends, as by default
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return
    raise KeyboardInterrupt


@contextmanager
def sigterm_as_ctrl_c():
    """While in the block, SIGTERM (``kill PID``, ``timeout``, a job scheduler) stops this
    process as Ctrl-C does (``KeyboardInterrupt``), so the code that stops the workers on
    Ctrl-C runs: by default SIGTERM ended the main process at once and left its workers running
    as orphans.  Signal handlers can only be set from the main thread; elsewhere, and inside
    another such block (which restores the handler when it ends), a no-op."""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGTERM) is _sigterm_as_interrupt:
        yield
        return
    _SIGTERM_OWNER[0] = os.getpid()
    previous = signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def start_worker(initializer, settings: tuple) -> None:
    """A pool worker's start (``ProcessPoolExecutor``'s initializer): it ignores Ctrl-C, ends
    with its parent (:func:`end_with_parent`), then runs ``initializer(*settings)``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    end_with_parent()
    try:
        initializer(*settings)
    except ValueError as error:  # an agent that cannot be built: one line, not a traceback
        print(f"error: {error}", file=sys.stderr, flush=True)
        os._exit(2)


def end_with_parent() -> None:
    """In a worker process (a ``multiprocessing`` child): end it as soon as the process that
    started it ends, however that ends.  Killed outright (``kill -9``, out of memory), the main
    process cannot stop its workers, and each would wait for work for ever, an orphan.

    A daemon thread waits on the parent's sentinel (``parent_process().join()``: a pipe at its
    end of file once the parent is gone, even if it died before this ran) and exits the worker;
    it works for any start method and platform, and for a fork server's children (their parent
    is the server, which they would otherwise keep running)."""
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_when_ended, args=(parent,), name="end-with-parent",
                         daemon=True).start()


def _exit_when_ended(parent) -> None:
    parent.join()
    os._exit(1)


def _run_chunk(work, chunk) -> list:
    return [work(item) for item in chunk]


def _in_pool(initializer, settings: tuple, work, items, workers: int, chunksize: int = 1):
    """``work(item)`` for each of ``items`` (a sequence), from ``workers`` processes started by
    ``initializer(*settings)``, in order, each as soon as it and those before it are ready.
    At most :data:`CHUNKS_IN_FLIGHT` chunks a worker are submitted ahead of the one read."""
    pool = ProcessPoolExecutor(workers, pool_context(), start_worker, (initializer, settings))
    chunks = (items[start:start + chunksize] for start in range(0, len(items), chunksize))
    finished = False
    with sigterm_as_ctrl_c():  # kill PID stops the workers too
        try:
            pending = deque(pool.submit(_run_chunk, work, chunk)
                            for chunk in islice(chunks, CHUNKS_IN_FLIGHT * workers))
            while pending:
                future = pending.popleft()
                while not wait([future], timeout=1.0).done:  # (a timed wait: a_worker_died)
                    if a_worker_died(pool):
                        raise BrokenProcessPool
                results = future.result()
                if (chunk := next(chunks, None)) is not None:  # one in for each one out
                    pending.append(pool.submit(_run_chunk, work, chunk))
                yield from results
            finished = True
        except BrokenProcessPool:  # from submit or result, whichever comes first
            raise WorkerDied("an arena worker died or could not start (its own error, if it "
                             "had one, is printed above: an agent it could not build, a file "
                             "changed since the run began; else killed, out of memory? run from "
                             "a script, is its work under if __name__ == '__main__':?)") from None
        finally:
            if finished:
                pool.shutdown()
            else:  # stop the workers now rather than after their current chunk
                stop_workers(pool)


def stop_workers(pool: ProcessPoolExecutor, timeout: float = 5.0) -> None:
    """Terminate the workers in the middle of their chunks and shut the pool down, without
    waiting for its pending work.

    A worker terminated while it was writing a large result (a span's outcomes) leaves part of
    a message in the result pipe, and the executor's manager thread would wait for the rest for
    ever (Python then hangs at exit): with this process's own write end of that pipe closed as
    well, it reads an end of file instead once the workers are gone, and gives up.  Then the
    manager thread is waited for (at most ``timeout`` seconds): left running, it closes its
    wakeup pipe while the interpreter exits, and Python 3.11's exit hook for executors can
    write to that pipe in the same instant ("Exception ignored ... OSError: Bad file
    descriptor" after a Ctrl-C: the hook checks that the pipe is open, then writes, without a
    lock).  This reaches into the executor's private attributes (stable from Python 3.8 to
    3.14) and skips what is not there."""
    # read first: a shutdown (Python 3.14's terminate_workers makes one) forgets both
    writer = getattr(getattr(pool, "_result_queue", None), "_writer", None)
    manager = getattr(pool, "_executor_manager_thread", None)
    if hasattr(pool, "terminate_workers"):  # Python 3.14
        pool.terminate_workers()
    else:
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
    if writer is not None:
        writer.close()
    pool.shutdown(wait=False, cancel_futures=True)
    if manager is not None and manager is not threading.current_thread():
        manager.join(timeout)


def a_worker_died(pool: ProcessPoolExecutor) -> bool:
    """Whether one of the pool's worker processes has ended (killed, out of memory) while the
    pool is in use.  The executor notices a dead worker only among the processes it watched
    when it last woke up: CPython starts workers one per submitted task, after waking its
    manager, so the last one started can go unwatched until another task is submitted, and a
    pool with one long task a worker (the distillation's spans) then waits for ever.  Reads
    the executor's private ``_processes`` (as :func:`stop_workers` does)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    return any(process.exitcode is not None for process in processes)


def play_pairs_in_pool(spec_a: str, spec_b: str, seed: int, pairs: range, target: int,
                       max_rounds: int, workers: int, files: tuple | None = None):
    """Yield the :class:`~sevenrocks_env.arena.PairOutcome` of each pair in ``pairs`` from
    ``workers`` processes, in pair order, as each is ready; each worker checks that the specs'
    files are ``files`` (their fingerprints at the run's start; None: taken now)."""
    workers = max(1, min(workers, len(pairs)))  # no idle processes for a short run
    chunk = max(1, min(8, len(pairs) // (4 * workers)))
    files = files or run_fingerprints((spec_a, spec_b))
    yield from _in_pool(_pair_init, (spec_a, spec_b, seed, target, max_rounds, files),
                        _play_pair, pairs, workers, chunk)


def play_spans_in_pool(spec_a: str, spec_b: str, seed: int, spans: list[tuple[int, int]],
                       target: int, max_rounds: int, workers: int, threads: int = 1,
                       files: tuple | None = None):
    """Yield the outcome list of each ``(first pair, count)`` span, played on the batched
    engine (CPU, ``threads`` torch threads a worker) by ``workers`` processes, in span order,
    as each is ready."""
    workers = max(1, min(workers, len(spans)))
    files = files or run_fingerprints((spec_a, spec_b))
    yield from _in_pool(_span_init, (spec_a, spec_b, seed, target, max_rounds, threads, files),
                        _play_span, spans, workers)


__all__ = ["WorkerDied", "a_worker_died", "end_with_parent", "play_pairs_in_pool",
           "play_spans_in_pool", "pool_context", "sigterm_as_ctrl_c", "start_worker",
           "stop_workers"]
