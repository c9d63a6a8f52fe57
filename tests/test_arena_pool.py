"""The arena's worker processes (``sevenrocks_env.arena_pool``): a worker that dies or cannot
start is an error, not a hang, and stopping early stops the workers at once."""

from __future__ import annotations

import os
import signal
from contextlib import closing

import pytest
from processes import (alive_in_group, kill_9_ends_the_group, killed_group, needs_proc,
                       pool_workers, wait_until)

from sevenrocks_env import arena_pool

#: far more pairs than a test waits for: only an error or a stop ends these runs early
ENDLESS = range(20_000)


@needs_proc
def test_a_killed_worker_is_an_error_and_the_others_are_stopped():
    played = arena_pool.play_pairs_in_pool("random", "greedy", 3, ENDLESS, 250, 100, workers=2)
    with closing(played):
        assert next(played).decisions[0] > 0
        assert wait_until(lambda: len(pool_workers()) == 2)
        os.kill(pool_workers()[0], signal.SIGKILL)
        with pytest.raises(RuntimeError, match="an arena worker died"):
            for _ in played:
                pass
    assert wait_until(lambda: not pool_workers(), 10), pool_workers()


@needs_proc
def test_stopping_early_stops_the_workers_in_the_middle_of_their_spans():
    spans = [(0, 1), (1, 10**5), (10**5 + 1, 10**5)]  # minutes each, one process
    played = arena_pool.play_spans_in_pool("random", "greedy", 3, spans, 250, 100, workers=2)
    with closing(played):
        assert len(next(played)) == 1
    assert wait_until(lambda: not pool_workers(), 10), pool_workers()


@needs_proc
def test_stopping_early_waits_for_the_executors_manager_thread(monkeypatch):
    """Left running, the manager thread races Python 3.11's exit hook for executors (which then
    prints an OSError after a Ctrl-C): a stop joins it before the generator returns."""
    managers = []

    class Pool(arena_pool.ProcessPoolExecutor):
        def submit(self, *args, **kwargs):
            future = super().submit(*args, **kwargs)
            managers.append(self._executor_manager_thread)
            return future

    monkeypatch.setattr(arena_pool, "ProcessPoolExecutor", Pool)
    played = arena_pool.play_pairs_in_pool("random", "greedy", 3, ENDLESS, 250, 100, workers=2)
    with closing(played):
        next(played)
    assert managers and not any(thread.is_alive() for thread in managers)


def test_a_worker_that_cannot_start_is_an_error(tmp_path):
    """A missing file is refused here, before any worker starts (its files' fingerprints are
    taken first); one a worker cannot load is an error here (the worker says why in one line
    on the stderr it has: the fork server's, which pytest may not capture)."""
    played = arena_pool.play_pairs_in_pool("random", "ckpt:no/such/file.pt", 3, range(4), 250,
                                           100, workers=2)
    with closing(played), pytest.raises(ValueError, match="no/such/file.pt"):
        next(played)
    broken = tmp_path / "broken.pt"
    broken.write_bytes(b"not a checkpoint")
    played = arena_pool.play_pairs_in_pool("random", f"ckpt:{broken}", 3, range(4), 250, 100,
                                           workers=2)
    with closing(played), pytest.raises(RuntimeError, match="could not start"):
        next(played)


def test_chunks_are_submitted_a_few_at_a_time(monkeypatch):
    """Not all at once: 3 M pairs took seconds of submitting before the first result, and a
    pool that broke meanwhile raised from ``submit``, outside the error handling."""
    from concurrent.futures import ProcessPoolExecutor

    submitted, submit = [], ProcessPoolExecutor.submit
    monkeypatch.setattr(ProcessPoolExecutor, "submit",
                        lambda pool, *args: submitted.append(1) or submit(pool, *args))
    played = arena_pool.play_pairs_in_pool("random", "greedy", 3, range(3_000_000), 250, 100,
                                           workers=2)
    with closing(played):
        next(played)
        assert len(submitted) <= 17  # a few chunks a worker, whatever CHUNKS_IN_FLIGHT says


@needs_proc
def test_ctrl_c_from_a_terminal_ends_the_cli_and_its_workers_at_once(tmp_path):
    """SIGINT to the whole process group, as a terminal sends it: the workers ignore it, the
    main process ends them mid-pair and exits 130 in one line naming the log."""
    import subprocess
    import sys

    log = tmp_path / "pairs.jsonl"
    command = [sys.executable, "-m", "sevenrocks_env.cli", "arena", "random", "search:samples=2",
               "--pairs", "2000", "--target", "60", "--workers", "2", "--no-progress", "--log",
               str(log)]
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True,  # its own process group, as a shell job
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert wait_until(lambda: log.exists() and log.read_text().count("\n") >= 2, 120)
        os.killpg(run.pid, signal.SIGINT)
        out, _ = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    assert run.returncode == 130, out
    assert "interrupted; the pairs finished so far are in" in out and "Traceback" not in out, out
    assert wait_until(lambda: not alive_in_group(run.pid), 10)


@needs_proc
def test_sigterm_to_the_cli_alone_stops_its_workers_too(tmp_path):
    """``kill PID`` (or ``timeout``) to the main process only: it stops as on Ctrl-C and takes
    its workers with it (they were left running as orphans)."""
    import subprocess
    import sys

    log = tmp_path / "pairs.jsonl"
    command = [sys.executable, "-m", "sevenrocks_env.cli", "arena", "random", "search:samples=2",
               "--pairs", "2000", "--target", "60", "--workers", "2", "--no-progress", "--log",
               str(log)]
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    try:
        assert wait_until(lambda: log.exists() and log.read_text().count("\n") >= 2, 120)
        run.send_signal(signal.SIGTERM)
        out, _ = run.communicate(timeout=60)
        assert wait_until(lambda: not alive_in_group(run.pid), 10), alive_in_group(run.pid)
    finally:
        if alive_in_group(run.pid):
            os.killpg(run.pid, signal.SIGKILL)
    assert run.returncode == 130, out
    assert "interrupted; the pairs finished so far are in" in out and "Traceback" not in out, out


@needs_proc
@pytest.mark.parametrize("arena", [[], ["--batched", "--batch", "16"]], ids=["pairs", "batched"])
def test_kill_9_to_the_cli_ends_its_workers_too(tmp_path, arena):
    """SIGKILL to the main process: nothing of it can stop the workers, so each must end itself
    within seconds (they waited for work for ever, orphans; the batched arena's fork server and
    its workers kept each other running)."""
    import subprocess
    import sys

    log, out = tmp_path / "pairs.jsonl", tmp_path / "out.txt"
    command = [sys.executable, "-m", "sevenrocks_env.cli", "arena", "greedy", "random",
               "--pairs", "200000", "--workers", "2", "--no-progress", "--log", str(log), *arena]
    with out.open("w") as output:
        run = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT,
                               start_new_session=True)  # its group: the CLI and all its workers
    with killed_group(run):
        assert wait_until(lambda: log.exists() and log.read_text().count("\n") >= 2, 120), \
            out.read_text()
        workers = [pid for pid in alive_in_group(run.pid) if pid != run.pid]
        assert len(workers) >= 2, workers  # (the batched arena's: a fork server's children)
        kill_9_ends_the_group(run, 5)


def test_fork_server_workers_ignore_ctrl_c_before_their_initializer_runs():
    """With torch loaded the workers come from a fork server; they must ignore Ctrl-C from their
    first instant, not only once their initializer has run (a Ctrl-C while a worker was still
    importing torch killed it).  The main process keeps its own Ctrl-C handler."""
    import subprocess
    import sys

    code = ("import signal, torch\n"
            "from concurrent.futures import ProcessPoolExecutor\n"
            "from sevenrocks_env.arena_pool import pool_context\n"
            "if __name__ == '__main__':\n"
            "    with ProcessPoolExecutor(1, pool_context()) as pool:\n"
            "        worker = pool.submit(signal.getsignal, signal.SIGINT).result()\n"
            "    print(worker == signal.SIG_IGN,\n"
            "          signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120,  # a Python started with Ctrl-C handled, as from a terminal
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "True"], run.stdout + run.stderr


def test_a_result_cut_short_by_the_stop_does_not_hang_python_at_exit():
    """A worker terminated while it writes a large result (a span's outcomes) leaves part of a
    message in the result pipe.  Here that part is written deterministically (a header that
    promises 1000 bytes, then 10) while the only worker sleeps in its second item; closing the
    run early must still let Python exit (it waited for the rest of the message for ever)."""
    import subprocess
    import sys

    code = ("import os, struct, time\n"
            "from contextlib import closing\n"
            "from sevenrocks_env import arena_pool\n"
            "pools = []\n"
            "class Recording(arena_pool.ProcessPoolExecutor):\n"
            "    def __init__(self, *args):\n"
            "        super().__init__(*args)\n"
            "        pools.append(self)\n"
            "def work(item):\n"
            "    return time.sleep(60 * item)\n"
            "if __name__ == '__main__':\n"
            "    arena_pool.ProcessPoolExecutor = Recording\n"
            "    with closing(arena_pool._in_pool(int, (), work, [0, 1], 1)) as results:\n"
            "        next(results)\n"
            "        writer = pools[0]._result_queue._writer\n"
            "        os.write(writer.fileno(), struct.pack('!i', 1000) + bytes(10))\n"
            "        time.sleep(0.5)  # the manager thread reads the header and waits\n"
            "    print('closed', flush=True)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout == "closed\n", run.stdout + run.stderr


def test_sigterm_as_ctrl_c_nested_and_closed_out_of_order_leaves_the_default_handler():
    """Two pools whose blocks end in the other order left SIGTERM turned into Ctrl-C."""
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    outer, inner = arena_pool.sigterm_as_ctrl_c(), arena_pool.sigterm_as_ctrl_c()
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGTERM)
        signal.sigtimedwait([], 0.1)  # (a handler runs between bytecodes: let it)
    outer.__exit__(None, None, None)
    inner.__exit__(None, None, None)
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
