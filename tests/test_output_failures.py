"""A write that fails part way (the disk full, a quota, a file size limit) is one clear error
naming the file, and leaves the file that was there whole, with no partial file beside it.

The failure is real: the process's file size limit (``RLIMIT_FSIZE``, ``SIGXFSZ`` ignored)
makes the kernel refuse the write past it (``EFBIG``), as a full disk refuses with ``ENOSPC``.
"""

from __future__ import annotations

import errno
import signal
from contextlib import contextmanager

import pytest

resource = pytest.importorskip("resource")
torch = pytest.importorskip("torch")
from policy_files import save_policy  # noqa: E402
from sevenrocks_env.policy import PolicyNet, load_policy  # noqa: E402
from training.checkpoint import policy_entries, save_checkpoint  # noqa: E402


@contextmanager
def writes_fail_past(size: int):
    """Every write of this process past ``size`` bytes of a file fails (``EFBIG``)."""
    limits = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, limits[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
        signal.signal(signal.SIGXFSZ, handler)


def test_a_checkpoint_that_cannot_be_written_is_an_os_error_naming_it(tmp_path):
    """torch.save reported a full disk as ``RuntimeError: [enforce fail at
    inline_container.cc:672] . unexpected pos 62016 vs 61904``, which ``sevenrocks train``,
    ``training.distill`` and ``training.ship`` showed as a traceback (after hours of work)."""
    path = tmp_path / "latest.pt"
    save_checkpoint(path, policy_entries(PolicyNet([8]), 1))
    before = path.read_bytes()
    with writes_fail_past(len(before) + 100), pytest.raises(OSError) as error:
        save_checkpoint(path, policy_entries(PolicyNet([64, 64]), 2))
    assert error.value.errno == errno.EFBIG and error.value.filename == str(path)
    assert error.value.strerror == "File too large"
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == [path.name]
    load_policy(path)


def test_the_training_command_says_which_checkpoint_it_could_not_write(tmp_path, capsys):
    """What a user of ``sevenrocks train`` sees: one line naming the file (the shell's
    ``guarded`` shows an ``OSError``; the ``RuntimeError`` was a traceback)."""
    from sevenrocks_env.cli import guarded

    def save():
        save_checkpoint(tmp_path / "step_256.pt", policy_entries(PolicyNet([64, 64]), 2))
        return 0
    with writes_fail_past(2000):
        assert guarded("sevenrocks train", save) == 2
    assert capsys.readouterr().err == (
        "error: sevenrocks train: File too large "
        f"({tmp_path / 'step_256.pt'})\n")


def test_labels_that_cannot_be_written_are_an_os_error_naming_the_file(tmp_path):
    """numpy, given a file object, raised an ``OSError`` naming no file: ``training.distill``
    printed ``error: [Errno 28] No space left on device`` after the whole collection."""
    import numpy as np

    from training.distill_labels import load_labels_files, save_labels

    def labels(n):
        mask = np.zeros((n, 113), bool)
        mask[:, 0] = True
        return {"observation": np.zeros((n, 238), np.float32), "action_mask": mask,
                "action": np.zeros(n, np.int64)}
    path = tmp_path / "run.labels.npz"
    save_labels(path, labels(2), "search")
    before = path.read_bytes()
    with writes_fail_past(len(before) + 50), pytest.raises(OSError) as error:
        save_labels(path, labels(4000), "search")
    assert error.value.filename == str(path) and error.value.errno == errno.EFBIG
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == [path.name]
    load_labels_files([str(path)])


def test_a_ship_that_cannot_write_is_one_line_and_leaves_the_shipped_files(tmp_path, capsys):
    """After its whole arena, ship's failed write of the policy or its card was a traceback."""
    from training.ship import main as ship

    out = tmp_path / "shipped" / "policy.pt"
    common = ["--out", str(out), "--pairs", "1", "--search-pairs", "0", "--agents", "random"]
    assert ship([str(save_policy(tmp_path / "plain.pt")), *common]) == 0
    before = {path.name: path.read_bytes() for path in out.parent.iterdir()}
    other = save_policy(tmp_path / "other.pt", PolicyNet([64, 64]))
    capsys.readouterr()
    with writes_fail_past(out.stat().st_size + 100):
        assert ship([str(other), *common]) == 1
    err = capsys.readouterr().err
    assert err == (f"error: cannot write {out} and its card: File too large; nothing was "
                   f"written ({out} and its card are as they were)\n"), err
    assert {path.name: path.read_bytes() for path in out.parent.iterdir()} == before


@pytest.mark.parametrize("engine", [[], ["--batched", "--batch", "1"]])
def test_an_arena_log_that_cannot_grow_keeps_its_pairs_and_says_the_command_resumes(
        tmp_path, capsys, engine):
    """A full disk under ``--log`` printed ``[Errno 28] No space left on device``, naming
    neither the log nor that the same command plays the rest (what Ctrl-C's message says)."""
    from sevenrocks_env import arena_cli

    log = tmp_path / "a_vs_b.jsonl"
    command = ["greedy", "random", "--seed", "3", "--no-progress", "--log", str(log), *engine]
    assert arena_cli.main([*command, "--pairs", "2"]) == 0
    two = log.read_bytes()
    capsys.readouterr()
    with writes_fail_past(len(two) + 10):  # not a third pair's line
        assert arena_cli.main([*command, "--pairs", "6"]) == 1
    assert capsys.readouterr().err == (
        f"sevenrocks arena: error: [Errno {errno.EFBIG}] File too large: '{log}'; the pairs "
        f"finished before it are in {log}, and the same command plays the rest\n")
    assert log.read_bytes().startswith(two)
    # and the same run resumes from the log to the numbers of a run without one
    from sevenrocks_env.arena import evaluate
    from sevenrocks_env.arena_batched import evaluate_batched

    def play(log=None):
        if engine:
            return evaluate_batched("greedy", "random", 6, seed=3, batch=1, log=log)
        return evaluate("greedy", "random", 6, seed=3, log=log)
    assert play(log).as_dict(timing=False) == play().as_dict(timing=False)
    assert len(log.read_text().splitlines()) == 1 + 6


def test_training_whose_logs_cannot_grow_stops_in_one_line_naming_them(tmp_path, capsys,
                                                                       monkeypatch):
    """A full disk under ``log_dir`` (the checkpoints elsewhere) was TensorBoard's writer
    thread's traceback, then ``error: ... No space left on device``, naming neither the logs'
    folder nor that the checkpoints are whole.  Here the limit (over a checkpoint's size) is
    passed by the event file alone: about 45 kB an update with its evaluation picture."""
    import re
    import threading
    from pathlib import Path

    from training.train import main as train

    smoke = Path(__file__).resolve().parents[1] / "configs" / "smoke.yaml"
    runs, ckpts = tmp_path / "runs", tmp_path / "ck"
    threads = []  # what a thread's error would print (pytest's own hook turns it to a warning)
    monkeypatch.setattr(threading, "excepthook", threads.append)
    with writes_fail_past(400_000):
        status = train(["--config", str(smoke), "--set", f"log_dir={runs}", "--set",
                        f"checkpoint_dir={ckpts}", "--set", "opponents=[greedy]",
                        "--set", "total_steps=8192"])
    out = capsys.readouterr()
    assert status == 1 and not threads, [(args.thread, args.exc_value) for args in threads]
    found = re.fullmatch(
        r"error: training stopped at update (\d+) \(step \d+\): cannot write the TensorBoard "
        rf"logs in {re.escape(str(runs / 'smoke'))}: File too large; the last checkpoint is "
        r"(\S+), intact \(free space there, or --set log_dir=\.\.\. to write them elsewhere, "
        r"and continue with --resume \2 --set log_dir=\S+ --set checkpoint_dir=\S+\)\n", out.err)
    assert found, out.err
    last = ckpts / "smoke" / f"step_{256 * (int(found[1]) - 1)}.pt"
    assert found[2] == str(last) and last.read_bytes() == (last.parent / "latest.pt").read_bytes()
    assert [path.stat().st_size for path in (runs / "smoke").iterdir()] == [400_000]
    from training.checkpoint import load_training_checkpoint
    assert load_training_checkpoint(last)["update"] == int(found[1]) - 1
