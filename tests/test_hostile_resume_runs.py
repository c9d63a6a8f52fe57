"""Hostile run folders and interrupted runs (issues 14, 15): Ctrl-C leaves a resumable
checkpoint and a hint that resumes it, a complete run is not resumed twice, run folders are not
reused by accident, output folders that cannot take files are refused before training, and the
generators a checkpoint keeps come back.  Bad pieces of a ``--resume`` file and the checkpoint
never choosing the output folders: test_hostile_resume.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tensorboard")

from training.checkpoint import load_training_checkpoint  # noqa: E402
from training.config import load_config  # noqa: E402
from training.train import main  # noqa: E402

from test_hostile_resume import ROOT, SMOKE  # noqa: E402


def test_ctrl_c_in_the_final_evaluation_says_the_checkpoint_is_written(tmp_path, capsys,
                                                                       monkeypatch):
    import training.train as train_module

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(train_module, "evaluate_and_log", interrupted)
    code = main(["--config", str(SMOKE), "--set", f"log_dir={tmp_path / 'runs'}", "--set",
                 f"checkpoint_dir={tmp_path / 'ckpt'}", "--set", "total_steps=256",
                 "--set", "eval_every=0"])
    err = capsys.readouterr().err
    assert code == 130 and "interrupted at step 256: checkpoint" in err, err
    assert (tmp_path / "ckpt" / "smoke" / "latest.pt").exists()


def test_a_complete_evaluated_run_is_not_resumed_but_an_unevaluated_one_is(tmp_path, capsys,
                                                                          monkeypatch):
    """Resuming a run whose updates are done logged its final evaluation a second time at the
    same step; a run stopped during that evaluation still resumes to run it."""
    import training.train as train_module

    args = ["--set", f"log_dir={tmp_path / 'runs'}", "--set", f"checkpoint_dir={tmp_path / 'ckpt'}"]
    done = main(["--config", str(SMOKE), *args, "--set", "total_steps=256", "--set",
                 "eval_every=0", "--set", "final_eval_pairs=1"])
    latest = tmp_path / "ckpt" / "smoke" / "latest.pt"
    assert done == 0 and (latest.parent / "evaluated.json").is_file()
    capsys.readouterr()
    assert main(["--resume", str(latest), *args]) == 2
    err = capsys.readouterr().err
    assert "the run is complete" in err and "--set total_steps=N" in err, err
    # an update adds a whole batch (256 here): the hint names the smallest N that adds one,
    # and one step less adds none (refused alike)
    assert "(N at least 512: one more update)" in err, err
    assert main(["--resume", str(latest), *args, "--set", "total_steps=511"]) == 2
    assert "the run is complete" in capsys.readouterr().err
    # resumed into other folders: the mark beside the file still says so (the default
    # checkpoint folder was looked in, and the evaluation was logged again)
    elsewhere = ["--set", f"log_dir={tmp_path / 'runs2'}", "--set",
                 f"checkpoint_dir={tmp_path / 'ckpt2'}"]
    assert main(["--resume", str(latest), *elsewhere]) == 2
    assert "the run is complete" in capsys.readouterr().err
    assert not (tmp_path / "ckpt2").exists()
    assert main(["--resume", str(latest), *args, "--set", "total_steps=512",
                 "--set", "final_eval_pairs=1"]) == 0  # more steps: trains on

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(train_module, "evaluate_and_log", interrupted)
    # the same run again into the same folder (--force), stopped during its final evaluation:
    # the first run's mark must not make it look evaluated
    assert main(["--config", str(SMOKE), *args, "--set", "total_steps=256", "--set",
                 "eval_every=0", "--force"]) == 130
    evaluated = []
    monkeypatch.setattr(train_module, "evaluate_and_log",
                        lambda *a, **k: evaluated.append(1) or {})
    assert main(["--resume", str(latest), *args]) == 0 and evaluated == [1]
    assert main(["--resume", str(latest), *args]) == 2  # and now it is complete


def test_an_existing_run_folder_needs_resume_or_force(tmp_path, capsys):
    args = ["--config", str(SMOKE), "--set", f"log_dir={tmp_path / 'runs'}",
            "--set", f"checkpoint_dir={tmp_path / 'ckpt'}", "--set", "total_steps=256",
            "--set", "final_eval_pairs=1", "--set", "eval_every=0"]
    (tmp_path / "runs" / "smoke").mkdir(parents=True)  # a run stopped before its first checkpoint
    assert main(args) == 2
    err = capsys.readouterr().err  # it said "continue it with --resume .../latest.pt": no such file
    latest = tmp_path / "ckpt" / "smoke" / "latest.pt"
    assert "exists already: no checkpoint of it to continue" in err and "--force" in err
    assert f"({latest} is missing" in err and "--resume" not in err
    assert not (tmp_path / "ckpt").exists()
    assert main(args + ["--force"]) == 0
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "exists already" in err and f"--resume {latest}" in err and "--force" in err
    assert f"--set log_dir={tmp_path / 'runs'}" in err  # resumed as said, into these folders
    # complete (evaluated): the hint says to train on, since a plain --resume is refused
    assert "it is complete (its final evaluation is logged, step 256): train it on with " \
        f"--resume {latest}" in err and "--set total_steps=N (N at least 512: " in err
    # the run's batch (its mark's), not the new config's: --resume keeps num_matches
    assert main(args + ["--set", "num_matches=8"]) == 2
    assert "--set total_steps=N (N at least 512: " in capsys.readouterr().err
    (latest.parent / "evaluated.json").unlink()  # as if stopped in its final evaluation
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"exists already: continue it with --resume {latest}" in err
    assert "complete" not in err


def test_ctrl_c_writes_a_resumable_checkpoint(tmp_path):
    """The real CLI in a subprocess: SIGINT after its first line; exit 130, one line on stderr,
    and a checkpoint that resumes."""
    from test_hostile_cli import default_sigint
    command = [sys.executable, "-m", "training.train", "--config", str(SMOKE),
               "--set", f"log_dir={tmp_path / 'runs'}", "--set",
               f"checkpoint_dir={tmp_path / 'ckpt'}", "--set", "total_steps=1000000",
               "--set", "eval_every=0", "--set", "checkpoint_every=100000"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"),
                               preexec_fn=default_sigint)
    first = process.stdout.readline()
    assert first.startswith("run smoke"), first
    process.send_signal(signal.SIGINT)
    try:  # it stops after the update in progress: seconds, where its 1,000,000 steps take hours
        out, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail("the run went on for 60 s after Ctrl-C")
    assert process.returncode == 130, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines[-1].startswith("interrupted at step ") and "--resume" in lines[-1], err
    assert "Traceback" not in err
    latest = tmp_path / "ckpt" / "smoke" / "latest.pt"
    data = load_training_checkpoint(latest)
    assert data["global_step"] == data["update"] * 256
    # and it resumes as the last line says: one more update from where the interrupted run
    # stopped, in its own folders (output folders never come from the file, so the line names
    # the ones this run was given)
    import shlex
    hint = shlex.split(lines[-1].split("continue with ", 1)[1])
    assert hint[0] == "--resume" and Path(hint[1]).parent == latest.parent, lines[-1]
    assert hint[2:] == ["--set", f"log_dir={tmp_path / 'runs'}",
                        "--set", f"checkpoint_dir={tmp_path / 'ckpt'}"], lines[-1]
    assert main(hint + ["--set", f"total_steps={data['global_step'] + 256}",
                        "--set", "final_eval_pairs=1"]) == 0
    after = load_training_checkpoint(latest)
    assert after["global_step"] == data["global_step"] + 256


def test_a_run_started_with_ctrl_c_ignored_stops_in_its_final_evaluation_too(tmp_path):
    """A script's ``cmd &`` starts the trainer with SIGINT ignored: the training loop's own
    handler honoured ``kill -INT``, but it put "ignore" back before the final evaluation, which
    then ran to its end and exited 0."""
    def ignore_sigint():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    command = [sys.executable, "-m", "training.train", "--config", str(SMOKE),
               "--set", f"log_dir={tmp_path / 'runs'}", "--set",
               f"checkpoint_dir={tmp_path / 'ckpt'}", "--set", "final_eval_pairs=20000"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, preexec_fn=ignore_sigint)
    last = tmp_path / "ckpt" / "smoke" / "step_512.pt"  # the last update's checkpoint
    try:
        for _ in range(600):
            if last.exists() or process.poll() is not None:
                break
            time.sleep(0.1)
        assert last.exists() and process.poll() is None, "no final evaluation to interrupt"
        time.sleep(1.0)  # into the evaluation (20,000 pairs: minutes)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the final evaluation went on for 60 s after Ctrl-C")
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("interrupted at step 512: checkpoint"), err


def test_config_and_resume_together_are_refused(tmp_path, capsys):
    """A resumed run keeps its own config: a --config beside --resume was silently ignored."""
    assert main(["--resume", str(tmp_path / "latest.pt"), "--config", "configs/smoke.yaml"]) == 2
    err = capsys.readouterr().err
    assert "--config and --resume do not go together" in err and err.count("\n") == 1


@pytest.mark.parametrize("where", ["under_a_file", "proc"])
def test_an_output_folder_that_cannot_take_files_is_refused_before_training(tmp_path, capsys,
                                                                            where):
    """``checkpoint_dir=/proc/x`` failed at the first checkpoint, after minutes of training,
    with a traceback, and left ``runs/<name>`` behind, which blocked the rerun."""
    (tmp_path / "file").write_text("x")
    bad = tmp_path / "file" / "ckpt" if where == "under_a_file" else Path("/proc/sevenrocks")
    args = ["--config", str(SMOKE), "--set", f"log_dir={tmp_path / 'runs'}",
            "--set", f"checkpoint_dir={bad}", "--set", "total_steps=256"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "checkpoint_dir:" in err and ("is not a folder" in err or "cannot write in /proc" in err)
    assert "Traceback" not in err and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("folder", ["2024", "yes", "~", "a: b", "/tmp/x y", "runs2",
                                    "runs ", "'quoted'", '"q"'])
def test_the_resume_hint_names_output_folders_as_the_set_parser_reads_them(folder):
    """A folder named 2024 or yes, written bare, would come back from --set as an int or a bool
    (refused): the hint quotes what YAML would not read back as the same text. ``--set`` also
    strips a value and unquotes a quoted one: a folder ending in a space or in quotes is
    written as a JSON string, which reads back as itself."""
    import shlex

    from training.config import TrainConfig
    from training.resume import output_folders

    cfg = TrainConfig()
    cfg.log_dir = folder
    option, value = shlex.split(output_folders(cfg))
    assert option == "--set" and load_config(SMOKE, [value]).log_dir == folder


def test_the_evaluated_mark_counts_at_its_own_step_only_and_a_new_checkpoint_removes_it(
        tmp_path):
    """The mark says which step's final evaluation is logged: a checkpoint of another step (or
    with updates left) is not complete; any checkpoint saved into the folder (a ``--force``
    run) takes the mark away."""
    from sevenrocks_env.policy import PolicyNet
    from training.checkpoint import (EVALUATED, check_not_complete, mark_evaluated,
                                     save_training_checkpoint)
    from training.config import ConfigError, TrainConfig

    folder = tmp_path / "ckpt"
    folder.mkdir()
    mark_evaluated(folder, 512)
    done = {"update": 2, "global_step": 512}
    with pytest.raises(ConfigError, match="the run is complete"):
        check_not_complete(folder, done, 2)
    check_not_complete(folder, {"update": 2, "global_step": 256}, 2)   # another step's mark
    check_not_complete(folder, {"update": 1, "global_step": 512}, 2)   # updates left
    model = PolicyNet([8])
    save_training_checkpoint(folder, model, torch.optim.Adam(model.parameters()), TrainConfig(),
                             512, 2, 1.0, {}, None)
    assert not (folder / EVALUATED).exists()
    check_not_complete(folder, done, 2)


def test_set_rng_state_puts_back_every_global_generator(tmp_path):
    """What a checkpoint keeps of Python's, numpy's and torch's global generators (saved and
    read as a checkpoint is) continues each of them where it was."""
    import random

    import numpy as np

    from training.checkpoint import rng_state, set_rng_state

    def draws():
        return random.random(), float(np.random.random()), float(torch.rand(1))

    before = rng_state()
    try:
        random.seed(1), np.random.seed(2), torch.manual_seed(3)
        torch.save(rng_state(), tmp_path / "rng.pt")
        first = draws()
        set_rng_state(torch.load(tmp_path / "rng.pt", weights_only=True))
        assert draws() == first
    finally:
        set_rng_state(before)   # other tests' draws go on as they would have
