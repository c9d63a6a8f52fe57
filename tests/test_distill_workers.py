"""``training.distill --workers N`` (``training/distill_collect.py``): a collection cut into spans
of the matches, each in its own process, labels the same decisions as one process.

* every label is a function of ``(seed, step, env)`` alone: a span of the envs collected on its
  own gives, env by env, the labels the whole collection gives (the student's sampled moves
  included, and whatever the batch they are drawn in);
* the student's counter-based draw follows its distribution and never picks an illegal move;
* worker processes: the same labels, part files while collecting, Ctrl-C keeps what they
  labelled; the run joins the parts into one labels file.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from distill_stand_ins import Highest, tiny_student  # noqa: E402
from processes import descendants, needs_proc, pool_workers, wait_until  # noqa: E402

from sevenrocks_env.policy import PolicyNet  # noqa: E402
from training import distill, distill_collect, distill_labels  # noqa: E402
from training.checkpoint import policy_entries, save_checkpoint  # noqa: E402

KEYS = ("observation", "action_mask", "action", "values", "match")


def by_env(labels: dict) -> dict:
    """Each env's labels, in the order it made them."""
    envs = labels["match"] >> 32
    return {int(env): {key: labels[key][envs == env] for key in KEYS} for env in np.unique(envs)}


def assert_same_per_env(part: dict, whole: dict) -> None:
    """Env by env, ``part``'s labels are ``whole``'s (the shorter one a prefix of the longer)."""
    whole_envs = by_env(whole)
    for env, mine in by_env(part).items():
        theirs = whole_envs[env]
        n = min(len(mine["action"]), len(theirs["action"]))
        assert n > 0
        for key in KEYS:
            np.testing.assert_array_equal(mine[key][:n], theirs[key][:n], err_msg=f"env {env}")


def quiet(*_):
    pass


def test_a_span_of_the_envs_labels_what_the_whole_collection_labels():
    """Envs 5..7 collected on their own, from another batch size, make the same decisions."""
    whole = distill_collect.collect(tiny_student(), Highest(), 400, num_envs=8, seed=9, log=quiet)
    part = distill_collect.collect(tiny_student(), Highest(), 150, num_envs=3, seed=9, log=quiet,
                                   first_env=5)
    assert set(by_env(part)) == {5, 6, 7}
    assert_same_per_env(part, whole)
    # the student's moves differ between envs and between seeds: it samples, not copies
    other = distill_collect.collect(tiny_student(), Highest(), 150, num_envs=3, seed=10,
                                    log=quiet, first_env=5)
    assert not np.array_equal(other["observation"], part["observation"])


def test_the_games_follow_the_student_s_moves():
    """Two students, the same deals: the first decisions are the same states, later ones are
    not (the moves played are the student's draws, not a fixed rule)."""
    torch.manual_seed(1)
    other_student = PolicyNet((32, 32)).eval()
    with torch.no_grad():  # far from uniform: untrained students both sample near uniformly,
        for parameter in other_student.parameters():  # and the same draws pick the same moves
            parameter.mul_(4)
    labels = [distill_collect.collect(student, Highest(), 160, num_envs=8, seed=9, log=quiet)
              for student in (tiny_student(), other_student)]
    first = [part["observation"][:8] for part in labels]  # step 0: one decision an env
    np.testing.assert_array_equal(*first)
    assert not np.array_equal(labels[0]["observation"], labels[1]["observation"])


def test_a_span_stopped_before_its_first_label_returns_empty_arrays_that_join():
    stop = threading.Event()
    stop.set()
    empty = distill_collect.collect(tiny_student(), Highest(), 50, num_envs=4, seed=1, log=quiet,
                                    stop=stop)
    some = distill_collect.collect(tiny_student(), Highest(), 50, num_envs=4, seed=1, log=quiet)
    for key in KEYS:
        assert len(empty[key]) == 0 and empty[key].dtype == some[key].dtype
        assert empty[key].shape[1:] == some[key].shape[1:]
        np.testing.assert_array_equal(np.concatenate([empty[key], some[key]]), some[key])


def test_the_spans_cover_the_envs_and_share_the_decisions():
    assert distill_collect.spans(256, 1000, 2) == [(0, 128, 500), (128, 128, 500)]
    assert distill_collect.spans(5, 10, 3) == [(0, 1, 2), (1, 2, 4), (3, 2, 4)]
    assert distill_collect.spans(4, 10, 8) == [(0, 1, 2), (1, 1, 3), (2, 1, 2), (3, 1, 3)]
    for envs, decisions, workers in ((7, 100, 3), (64, 12_345, 5), (3, 2, 2)):
        parts = distill_collect.spans(envs, decisions, workers)
        assert sum(p[1] for p in parts) == envs and sum(p[2] for p in parts) == decisions
        assert [p[0] for p in parts] == [0, *np.cumsum([p[1] for p in parts])[:-1]]
    assert len(distill_collect.spans(8, 3, 5)) == 3  # no more workers than decisions
    # the part files are named as the messages and docs say: <stem>.part<index>.npz
    assert distill_collect.part_path("runs/s.labels.npz", 1) == Path("runs/s.labels.part1.npz")


@pytest.fixture(scope="module")
def student_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("student") / "tiny.pt"
    return save_checkpoint(path, policy_entries(tiny_student(), 1))


TEACHER = "search:samples=2"


def test_workers_label_what_one_process_labels(student_file, tmp_path):
    labels_path = tmp_path / "s.labels.npz"
    pooled = distill_collect.collect_in_pool(str(student_file), TEACHER, 48, num_envs=6, seed=4,
                                             workers=2, labels_path=labels_path, log=quiet)
    assert len(pooled["action"]) == 48
    assert set(by_env(pooled)) == set(range(6))
    one = distill_collect.collect(tiny_student(), distill_collect.make_teacher(TEACHER), 48,
                                  num_envs=6, seed=4, log=quiet)
    assert_same_per_env(pooled, one)
    # each span saved its labels to its own part file
    for index, envs in enumerate(({0, 1, 2}, {3, 4, 5})):
        part, teacher = distill_labels.load_labels(distill_collect.part_path(labels_path, index))
        assert set(by_env(part)) == envs and len(part["action"]) == 24
        assert teacher == TEACHER and part["seed"] == 4, "the collection's seed not recorded"
    # one collection's part files (one seed, one teacher, other envs) train together
    joined, _ = distill_labels.load_labels_files(
        [str(distill_collect.part_path(labels_path, index)) for index in (0, 1)])
    assert len(joined["action"]) == 48


def when_every_span_has_saved(labels_path: Path, spans: int, action) -> None:
    """``action()`` on a thread once every span has saved its part file: every worker is then
    past its start, where it begins to ignore Ctrl-C (a worker still importing torch dies of
    it, like any process)."""
    parts = [distill_collect.part_path(labels_path, index) for index in range(spans)]

    def watch():
        wait_until(lambda: all(part.exists() for part in parts), 120)
        action()
    threading.Thread(target=watch, daemon=True).start()


@needs_proc
@pytest.mark.parametrize("stop", ["ctrl_c", "sigterm"])
def test_ctrl_c_keeps_what_the_workers_labelled(student_file, tmp_path, stop):
    """Ctrl-C (SIGINT to the main process and every worker, as a terminal sends it) stops every
    span after its step; their labels come back (a long collection would otherwise lose hours
    of search).  The fork server and the resource tracker ignore SIGINT themselves.  SIGTERM to
    the main process alone (``kill PID``) does the same (it ended the main process at once and
    left the workers running)."""
    labels_path = tmp_path / "s.labels.npz"

    def ctrl_c():
        for pid in [os.getpid(), *descendants()]:
            os.kill(pid, signal.SIGINT)

    def sigterm():
        os.kill(os.getpid(), signal.SIGTERM)

    when_every_span_has_saved(labels_path, 2, ctrl_c if stop == "ctrl_c" else sigterm)
    seen = []
    pooled = distill_collect.collect_in_pool(str(student_file), TEACHER, 100_000, num_envs=4,
                                             seed=2, workers=2, labels_path=labels_path,
                                             save_every=8, log=seen.append)
    n = len(pooled["action"])
    assert 8 <= n < 100_000 and "interrupted" in seen[-1]
    one = distill_collect.collect(tiny_student(), distill_collect.make_teacher(TEACHER), n,
                                  num_envs=4, seed=2, log=quiet)
    assert_same_per_env(pooled, one)
    # the part files of a stopped collection are never overwritten
    with pytest.raises(ValueError, match="s.labels.part0.npz is there already"):
        distill_collect.collect_in_pool(str(student_file), TEACHER, 10, num_envs=4, seed=2,
                                        workers=2, labels_path=labels_path, log=quiet)


@needs_proc
def test_sigterm_to_the_whole_group_is_an_interruption_not_a_dead_worker(student_file, tmp_path):
    """kill -TERM -PGID (a job scheduler) ends the workers too: that is the interruption, not
    'a collection worker died'; the spans' part files keep what they saved."""
    labels_path = tmp_path / "s.labels.npz"

    def sigterm_everyone():  # (not the fork server and resource tracker: later tests use them)
        for pid in [*pool_workers(), os.getpid()]:
            os.kill(pid, signal.SIGTERM)

    when_every_span_has_saved(labels_path, 2, sigterm_everyone)
    with pytest.raises(KeyboardInterrupt):
        distill_collect.collect_in_pool(str(student_file), TEACHER, 100_000, num_envs=4, seed=2,
                                        workers=2, labels_path=labels_path, save_every=8,
                                        log=quiet)
    assert len(list(tmp_path.glob("s.labels.part*.npz"))) == 2


@needs_proc
def test_a_worker_that_dies_or_fails_is_an_error_not_a_hang(student_file, tmp_path):

    for which in (0, -1):  # the last worker started could go unwatched by the executor
        labels_path = tmp_path / f"s{which}.labels.npz"

        def kill_a_worker():
            os.kill(sorted(pool_workers())[which], signal.SIGKILL)

        when_every_span_has_saved(labels_path, 2, kill_a_worker)
        with pytest.raises(RuntimeError, match="a collection worker died"):
            distill_collect.collect_in_pool(str(student_file), TEACHER, 100_000, num_envs=4,
                                            seed=2, workers=2, labels_path=labels_path,
                                            save_every=8, log=quiet)
    # a span that cannot start (here: no such checkpoint) raises its own error at once
    with pytest.raises((ValueError, OSError), match="nothing.pt"):
        distill_collect.collect_in_pool(str(tmp_path / "nothing.pt"), TEACHER, 100_000,
                                        num_envs=4, seed=2, workers=2,
                                        labels_path=tmp_path / "t.labels.npz", log=quiet)


def test_a_run_with_workers_joins_the_parts_into_one_labels_file(student_file, tmp_path):
    out = tmp_path / "student.pt"
    args = distill.Args(init=str(student_file), teacher=TEACHER, decisions=20, num_envs=4,
                        workers=2, epochs=1, out=str(out), log_dir=str(tmp_path / "runs"),
                        seed=6)
    info = distill.run(args, log=quiet)
    assert info["labels"] == 20 and out.exists()
    labels, _ = distill_labels.load_labels(tmp_path / "student.labels.npz")
    assert len(labels["action"]) == 20 and set(by_env(labels)) == {0, 1, 2, 3}
    assert labels["seed"] == 6, "the collection's seed not recorded"
    assert not list(tmp_path.glob("*.part*.npz")), "the part files are left behind"


def test_more_workers_than_matches_is_refused_when_the_settings_are_made(student_file, tmp_path,
                                                                           capsys):
    with pytest.raises(ValueError, match="--workers 3 is more than --num-envs 2"):
        distill.Args(init=str(student_file), teacher=TEACHER, decisions=20, num_envs=2,
                     workers=3, out=str(tmp_path / "s.pt"), log_dir=str(tmp_path / "runs"))
    args = distill.Args(num_envs=2, workers=2)
    with pytest.raises(ValueError, match="--workers 3 is more than --num-envs 2"):
        args.workers = 3
    for argv in (["--workers", "0"], ["--workers", "3", "--num-envs", "2"]):
        with pytest.raises(SystemExit):
            distill.main(argv)
    assert "error: --workers 3 is more than --num-envs 2" in capsys.readouterr().err


def test_kill_int_stops_a_collection_started_in_the_background(student_file, tmp_path):
    """A shell starts ``... &`` with SIGINT ignored: ``kill -INT`` must still stop the
    collection with its labels saved (the CLI restores Python's handler)."""
    import subprocess
    import sys
    out = tmp_path / "bg.pt"
    command = [sys.executable, "-m", "training.distill", "--init", str(student_file),
               "--teacher", TEACHER, "--decisions", "1000000", "--num-envs", "64",
               "--epochs", "0", "--out", str(out), "--log-dir", str(tmp_path / "runs")]
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           cwd=Path(__file__).resolve().parents[1],
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        for line in run.stdout:  # the first progress line: 1,000 labels collected
            if line.startswith("collect:"):
                break
        run.send_signal(signal.SIGINT)
        rest, _ = run.communicate(timeout=120)
    finally:
        run.kill()
    assert run.returncode == 0, rest
    assert "interrupted at" in rest
    labels, _ = distill_labels.load_labels(tmp_path / "bg.labels.npz")
    assert 1000 <= len(labels["action"]) < 1_000_000


@needs_proc
def test_kill_9_to_a_collection_ends_its_workers_too(student_file, tmp_path):
    """SIGKILL to the main process: its workers must end themselves (they collected on, orphans,
    for as long as --decisions allowed)."""
    import subprocess
    import sys

    from processes import alive_in_group, kill_9_ends_the_group, killed_group
    out = tmp_path / "k9.pt"
    command = [sys.executable, "-m", "training.distill", "--init", str(student_file),
               "--teacher", TEACHER, "--decisions", "1000000", "--num-envs", "64",
               "--workers", "2", "--epochs", "0", "--out", str(out),
               "--log-dir", str(tmp_path / "runs")]
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           cwd=Path(__file__).resolve().parents[1], start_new_session=True)
    with killed_group(run):
        for line in run.stdout:  # a worker's first progress line: "[envs 0-31] collect: ..."
            if "collect:" in line:
                break
        assert len(alive_in_group(run.pid)) >= 3  # the main process and its two workers
        kill_9_ends_the_group(run, 10)
