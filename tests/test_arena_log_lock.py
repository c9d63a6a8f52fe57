"""The pair log's lock: a run holds an exclusive ``flock`` on its ``--log`` file from reading it
to its last line, so a second run given the same file is refused instead of interleaving its
lines with the first's; the lock goes with the run, however it ends."""

import json
import os
import signal
import subprocess
import sys

import pytest
from processes import alive_in_group, needs_proc, wait_until

from sevenrocks_env import arena, arena_cli
from sevenrocks_env.agents import make_agent
from sevenrocks_env.arena_log import PairLog, PairLogError

fcntl = pytest.importorskip("fcntl")

A, B = "greedy", "random"
IN_USE = "another arena is using this pair log"


def _free(path) -> bool:
    """Whether another open file of ``path`` could take its lock now."""
    with open(path, "rb") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(file, fcntl.LOCK_UN)
        return True


def _holding(log, pairs: int = 3):
    """A run's writer of ``log`` (locked), as while that run plays."""
    first = PairLog(log, A, B, 3, 250, 100, "python")
    first.load(pairs)
    return first.writer()


@pytest.mark.parametrize("logged", [None, 0, 1])  # new (no header yet, a header), resumed
def test_a_second_run_on_a_log_in_use_is_refused_and_writes_nothing(tmp_path, capsys, logged):
    """A new log the first run has locked but not written yet is not taken by the second for a
    log whose header was cut short, and started again under the first."""
    log = tmp_path / "l.jsonl"
    if logged:
        arena.evaluate(A, B, logged, seed=3, log=log)
    if logged is None:
        writer = PairLog(log, A, B, 3, 250, 100, "python")
        assert writer.load(3) == [] and log.read_bytes() == b""
    else:
        writer = _holding(log)
    before = log.read_bytes()
    try:
        assert not _free(log)
        with pytest.raises(PairLogError, match=IN_USE):
            arena.evaluate(A, B, 3, seed=3, log=log)
        assert arena_cli.main([A, B, "--pairs", "3", "--seed", "3", "--log", str(log),
                               "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert IN_USE in err and str(log) in err and err.count("\n") == 1, err
        assert log.read_bytes() == before
    finally:
        writer.close()
    assert _free(log)
    again = arena.evaluate(A, B, 3, seed=3, log=log)
    assert again.as_dict(timing=False) == arena.evaluate(A, B, 3, seed=3).as_dict(timing=False)
    assert [json.loads(line)["pair"] for line in log.read_text().splitlines()[1:]] == [0, 1, 2]


def test_another_process_is_refused_while_a_run_holds_the_log(tmp_path):
    log = tmp_path / "l.jsonl"
    writer = _holding(log)
    try:
        run = subprocess.run([sys.executable, "-m", "sevenrocks_env.cli", "arena", A, B,
                              "--pairs", "3", "--seed", "3", "--log", str(log), "--no-progress"],
                             capture_output=True, text=True, timeout=120)
    finally:
        writer.close()
    assert run.returncode == 2 and IN_USE in run.stderr and run.stderr.count("\n") == 1, \
        run.stderr[-500:]
    assert len(log.read_text().splitlines()) == 1  # the first run's header, nothing else


def _kept_in(kept: list, base: type) -> type:
    """``base``, every object of which is appended to ``kept``."""
    class Kept(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            kept.append(self)
    return Kept


def test_the_lock_is_released_however_the_run_ends(tmp_path, monkeypatch, capsys):
    """Every way out lets the lock go itself: the log objects are kept alive here (as by a
    garbage collector that runs late), so none is released by being collected."""
    from sevenrocks_env import arena_log

    kept = []
    for name in ("PairLog", "_Writer"):
        monkeypatch.setattr(arena_log, name, _kept_in(kept, getattr(arena_log, name)))
    log = tmp_path / "l.jsonl"
    # Ctrl-C mid-run (the CLI's exit 130): the pairs finished are kept, the lock is not
    play_pair = arena.play_pair

    def interrupted(*args, **kwargs):
        if args[3] == 1:
            raise KeyboardInterrupt
        return play_pair(*args, **kwargs)
    monkeypatch.setattr(arena, "play_pair", interrupted)
    assert arena_cli.main([A, B, "--pairs", "3", "--seed", "3", "--log", str(log),
                           "--no-progress"]) == 130
    assert "interrupted" in capsys.readouterr().err
    assert _free(log) and len(log.read_text().splitlines()) == 2
    monkeypatch.setattr(arena, "play_pair", play_pair)
    arena.evaluate(A, B, 2, seed=3, log=log)  # a run to its end
    assert _free(log)
    arena.evaluate(A, B, 1, seed=3, log=log)  # nothing left to play: read and let go at once
    assert _free(log)
    log.write_text(log.read_text() + "junk\n")  # a log refused while it is read
    with pytest.raises(PairLogError, match="not JSON"):
        arena.evaluate(A, B, 3, seed=3, log=log)
    assert _free(log)
    # the class itself: a load that fails lets go; one that succeeds holds until close()
    unused = arena_log.PairLog(log, A, B, 3, 250, 100, "python")
    with pytest.raises(PairLogError, match="not JSON"):
        unused.load(3)
    assert _free(log)
    log.write_text(log.read_text().replace("junk\n", ""))
    unused.load(3)
    assert not _free(log)
    unused.close()
    assert _free(log)
    writer = _holding(log)
    writer.close()
    assert _free(log) and len(kept) > 5


def test_a_run_writes_only_to_the_file_it_locked(tmp_path):
    """The log is read, cut and appended through the one file the run locked, never by opening
    its path again: a log moved away while its run starts keeps every line of that run, and no
    new, unlocked file appears at the path for a second run to take and start again."""
    log, moved = tmp_path / "l.jsonl", tmp_path / "moved.jsonl"
    first = PairLog(log, A, B, 3, 250, 100, "python")
    assert first.load(3) == []
    log.rename(moved)
    writer = first.writer()
    try:
        writer.write([arena.play_pair([make_agent(A)] * 2, [make_agent(B)] * 2, 3, 0, 250, 100)])
        assert not log.exists() and not _free(moved)
    finally:
        writer.close()
    lines = moved.read_text().splitlines()
    assert json.loads(lines[0])["agent_a"] == A and json.loads(lines[1])["pair"] == 0
    assert len(lines) == 2 and _free(moved)


def test_a_read_only_log_reads_back_and_is_refused_only_when_pairs_remain(tmp_path):
    log = tmp_path / "l.jsonl"
    arena.evaluate(A, B, 2, seed=3, log=log)
    log.chmod(0o444)
    before = log.read_bytes()
    try:
        assert arena.evaluate(A, B, 2, seed=3, log=log).pairs == 2  # all logged: read only
        if os.access(log, os.W_OK):  # (root writes anyway)
            return
        with pytest.raises(PairLogError, match="read-only"):
            arena.evaluate(A, B, 3, seed=3, log=log)
        assert _free(log) and log.read_bytes() == before
    finally:
        log.chmod(0o644)


@needs_proc
def test_the_workers_of_a_killed_run_do_not_keep_its_log_locked(tmp_path):
    """``kill -9`` ends the main process alone (nothing of it runs); its workers, forked while
    it held the log, end a moment later (``arena_pool.end_with_parent``, switched off here so
    that they live on).  A flock belongs to the open file, which a fork shares: the workers
    must not hold it, or the log stays locked until they end."""
    log = tmp_path / "pairs.jsonl"
    arguments = ["arena", A, B, "--pairs", "1000000", "--workers", "2", "--no-progress",
                 "--log", str(log)]
    command = [sys.executable, "-c",
               "import sys; from sevenrocks_env import arena_pool, cli; "
               "arena_pool.end_with_parent = lambda: None; sys.exit(cli.main(sys.argv[1:]))",
               *arguments]
    run = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)  # its own process group: its workers' too
    try:
        assert wait_until(lambda: log.exists() and log.read_text().count("\n") >= 2, 120)
        assert not _free(log)
        run.kill()
        run.wait(timeout=10)
        assert alive_in_group(run.pid), "the workers were expected to outlive their run"
        assert wait_until(lambda: _free(log), 5)
    finally:
        if alive_in_group(run.pid):
            os.killpg(run.pid, signal.SIGKILL)
