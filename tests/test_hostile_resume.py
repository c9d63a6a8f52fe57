"""Hostile resume checkpoints and run folders (issues 14, 15): every piece of a ``--resume``
file is checked before training starts (exit 2, one line naming the piece), a checkpoint never
decides where files go, run folders are not reused by accident, and Ctrl-C leaves a resumable
checkpoint."""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tensorboard")

from training.checkpoint import load_training_checkpoint  # noqa: E402
from training.config import load_config  # noqa: E402
from training.train import main, train  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "configs" / "smoke.yaml"


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> dict:
    """A real resumable checkpoint (oracle critic, ``past`` pool) as a dict."""
    base = tmp_path_factory.mktemp("good")
    cfg = load_config(SMOKE, [f"log_dir={base / 'runs'}", f"checkpoint_dir={base / 'ckpt'}",
                              "total_steps=512", "eval_every=0", "critic=oracle"])
    train(cfg, final_table=False)
    return torch.load(base / "ckpt" / "smoke" / "step_256.pt", weights_only=True)


def resume(tmp_path, data, capsys, *extra) -> tuple[int, str]:
    path = tmp_path / "in" / "resume.pt"
    path.parent.mkdir(exist_ok=True)
    torch.save(data, path)
    code = main(["--resume", str(path), "--set", f"log_dir={tmp_path / 'runs'}",
                 "--set", f"checkpoint_dir={tmp_path / 'ckpt'}", *extra])
    return code, capsys.readouterr().err


def nested(depth):
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


BAD_PIECES = [
    ("engine", lambda d: d.update(engine={})),
    ("engine", lambda d: d.update(engine=None)),
    # (deeper than 200 levels the archive's scan refuses the file before any piece is read)
    ("engine", lambda d: d["engine"].update(matches=nested(150))),
    ("rng", lambda d: d.update(rng={})),
    ("rng", lambda d: d["rng"].update(python=[3, [1, 2], None])),
    ("rng", lambda d: d["rng"].update(torch=torch.zeros(3, dtype=torch.uint8))),
    ("rng", lambda d: d["rng"]["numpy"].__setitem__(1, torch.zeros(5, dtype=torch.int64))),
    ("optimizer", lambda d: d.update(optimizer={})),
    ("optimizer", lambda d: d["optimizer"]["state"][0].update(exp_avg=torch.zeros(1))),
    ("optimizer", lambda d: d["optimizer"]["param_groups"][0].update(lr=float("nan"))),
    ("optimizer", lambda d: d["optimizer"]["state"][0]["exp_avg_sq"].fill_(-1.0)),  # NaN steps
    # steps torch's Adam cannot use (uint8 255 wraps to a division by 0), and moments no Adam
    # run gives, which would blow the weights up on the first update
    ("optimizer", lambda d: d["optimizer"]["state"][0].update(
        step=torch.tensor(255, dtype=torch.uint8))),
    ("optimizer", lambda d: d["optimizer"]["state"][0].update(step=torch.tensor(True))),
    ("optimizer", lambda d: d["optimizer"]["state"][0].update(step=torch.tensor(2.5))),
    ("optimizer", lambda d: (d["optimizer"]["state"][0]["exp_avg"].fill_(3e38),
                             d["optimizer"]["state"][0]["exp_avg_sq"].zero_())),
    ("pool", lambda d: d.update(pool={"snapshots": [{}], "generators": [torch.zeros(1)]})),
    ("pool", lambda d: d.update(pool=[1, 2])),
    ("pool", lambda d: d["pool"].update(retired=[{"weights": {}, "generator": torch.zeros(1)}])),
    ("pool", lambda d: d["pool"].update(fixed={"random": {"numpy": {"bit_generator": "MT19937"}}})),
    ("pool", lambda d: d["pool"].update(fixed={"random": {"torch": torch.zeros(3)}})),
    ("pool", lambda d: d["pool"].update(extra=1)),
    ("update", lambda d: d.update(update=-1)),
    ("update", lambda d: d.update(update=10 ** 30)),
    ("global_step", lambda d: d.update(global_step="many")),
    ("wall_time", lambda d: d.update(wall_time=float("inf"))),
    ("config", lambda d: d.update(config=None)),
    ("config", lambda d: d["config"].update(run_name="../../escaped")),
    ("config", lambda d: d["config"].update(num_matches=10 ** 9)),
    ("config", lambda d: d["config"].update(learning_rate=float("nan"))),
    ("critic", lambda d: d.update(critic=None)),
    ("model", lambda d: d.update(model=None)),
    ("model", lambda d: next(iter(d["model"].values())).fill_(float("nan"))),
    ("model", lambda d: d["model"].update({k: v[..., :1] for k, v in d["model"].items()})),
    ("model", lambda d: d["model"].update({k: v.to_sparse() for k, v in d["model"].items()})),
    ("critic", lambda d: d["critic"].update({k: v.to_sparse() for k, v in d["critic"].items()})),
    ("optimizer", lambda d: d["optimizer"]["state"][0].update(
        exp_avg=d["optimizer"]["state"][0]["exp_avg"].to_sparse())),
    ("critic", lambda d: d["critic"].update({k: v[:1] for k, v in d["critic"].items()})),
    # generator states of the right shape that the generators refuse
    ("rng", lambda d: d["rng"]["torch"].zero_()),
    ("rng", lambda d: d["rng"]["python"][1].__setitem__(-1, 2 ** 32 - 1)),
    # numpy's has_gauss past a C long (an OverflowError once the networks were loaded), and
    # cached Gaussians no generator holds
    ("rng", lambda d: d["rng"]["numpy"].__setitem__(3, 2 ** 70)),
    ("rng", lambda d: d["rng"].update(numpy=d["rng"]["numpy"][:3] + [1, float("nan")])),
    ("rng", lambda d: d["rng"]["python"].__setitem__(2, float("inf"))),
    ("pool", lambda d: d["pool"]["generators"][0].zero_()),
    # matches in progress against opponents a config may not name: hours a decision, or a
    # machine-dependent search
    ("engine", lambda d: d["engine"].update(opponents=[
        None if key is None else "openspiel:ismcts:sims=1000000" for key in
        d["engine"]["opponents"]])),
    ("engine", lambda d: d["engine"].update(opponents=[
        None if key is None else "search:samples=8,time_limit=3600" for key in
        d["engine"]["opponents"]])),
    # values each in range, wrong together
    ("global_step", lambda d: d.update(global_step=d["global_step"] + 1)),  # not update x batch
    ("pool", lambda d: d["pool"].update(  # more than the 5 snapshots a run keeps
        snapshots=[{k: v.clone() for k, v in w.items()} for w in d["pool"]["snapshots"] * 3],
        generators=[g.clone() for g in d["pool"]["generators"] * 3])),
    ("engine", lambda d: d["engine"]["matches"]["turn"].__setitem__(0, -1)),  # between rounds
    ("engine", lambda d: d["engine"]["matches"]["matches"].__setitem__(0, -1)),
    ("engine", lambda d: d["engine"]["learner"].__setitem__(  # an opponent that never plays
        next(i for i, key in enumerate(d["engine"]["opponents"]) if key), [True] * 4)),
    ("engine", lambda d: d["engine"].update(opponents=[  # snapshots that were never kept
        key and key.replace("past#0", "past#-2") for key in d["engine"]["opponents"]])),
    ("engine", lambda d: d["engine"].update(opponents=[
        key and key.replace("past#0", "past@0") for key in d["engine"]["opponents"]])),
]


def test_adam_settings_come_from_the_config_not_the_file(tmp_path, monkeypatch, capsys, good):
    """maximize (gradient ascent), amsgrad (a KeyError inside) or NaN betas in a file are not
    taken: only the moments are; the resumed run's Adam is the config's."""

    from training.networks import build_networks
    data = copy.deepcopy(good)
    data["optimizer"]["param_groups"][0].update(maximize=True, amsgrad=True,
                                                 betas=(float("nan"), 5.0), weight_decay=1e6)
    monkeypatch.chdir(tmp_path)
    code, err = resume(tmp_path, data, capsys, "--set", "total_steps=512", "--set",
                       "final_eval_pairs=1")
    assert code == 0, err
    resumed = torch.load(tmp_path / "ckpt" / "smoke" / "latest.pt", weights_only=True)
    group = resumed["optimizer"]["param_groups"][0]
    fresh = build_networks(load_config(SMOKE, []))[3].state_dict()["param_groups"][0]
    for key in ("maximize", "amsgrad", "betas", "weight_decay", "eps"):
        assert group[key] == fresh[key], key


@pytest.mark.parametrize("piece,damage", BAD_PIECES,
                         ids=[f"{p}-{i}" for i, (p, _) in enumerate(BAD_PIECES)])
def test_every_bad_piece_is_named_before_anything_is_written(tmp_path, monkeypatch, capsys,
                                                             good, piece, damage):
    data = copy.deepcopy(good)
    if piece == "engine" and "matches" not in data["engine"]:
        data["engine"] = {"matches": None}
    damage(data)
    monkeypatch.chdir(tmp_path)
    code, err = resume(tmp_path, data, capsys)
    assert code == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1 and len(err) < 2000, err[:300]
    assert f"'{piece}'" in err or (piece == "config" and "config" in err), err
    assert sorted(os.listdir(tmp_path)) == ["in"]  # no run or checkpoint folder made


def test_a_checkpoint_never_chooses_the_output_folders(tmp_path, capsys, good):
    data = copy.deepcopy(good)
    data["config"].update(log_dir=str(tmp_path / "evil_runs"),
                          checkpoint_dir=str(tmp_path / "evil_ckpt"))
    code, _ = resume(tmp_path, data, capsys, "--set", "final_eval_pairs=1")
    assert code == 0
    assert not (tmp_path / "evil_runs").exists() and not (tmp_path / "evil_ckpt").exists()
    assert (tmp_path / "ckpt" / "smoke" / "latest.pt").is_file()


def test_a_resume_without_output_folders_writes_to_the_default_ones(tmp_path, monkeypatch,
                                                                  capsys, good):
    """docs/security.md: output paths come from the user; the file's log_dir and
    checkpoint_dir are replaced by the defaults, not only by --set."""
    data = copy.deepcopy(good)
    data["config"].update(log_dir=str(tmp_path / "evil_runs"),
                          checkpoint_dir=str(tmp_path / "evil_ckpt"))
    path = tmp_path / "in.pt"
    torch.save(data, path)
    monkeypatch.chdir(tmp_path)
    assert main(["--resume", str(path), "--set", "final_eval_pairs=1"]) == 0
    assert not (tmp_path / "evil_runs").exists() and not (tmp_path / "evil_ckpt").exists()
    assert (tmp_path / "checkpoints" / "smoke" / "latest.pt").is_file()
    assert (tmp_path / "runs" / "smoke").is_dir()
    note = capsys.readouterr().err  # and says where, as the folder is not the checkpoint's
    assert f"note: resuming {path}, writing checkpoints to checkpoints/smoke" in note


def test_resumed_run_says_from_which_step(tmp_path, capfd, good):
    path = tmp_path / "resume.pt"
    torch.save(good, path)
    assert main(["--resume", str(path), "--set", f"log_dir={tmp_path / 'runs'}", "--set",
                 f"checkpoint_dir={tmp_path / 'ckpt'}", "--set", "final_eval_pairs=1"]) == 0
    assert "resumed from step 256" in capfd.readouterr().out


def test_a_bad_set_on_resume_is_named_not_blamed_on_the_checkpoint(tmp_path, capsys, good):
    """--set values that cannot go with the run are ConfigErrors naming the setting."""
    two_updates = dict(good, update=2, global_step=512)  # as if saved one update later
    code, err = resume(tmp_path, two_updates, capsys, "--set", "total_steps=300")
    assert code == 2 and "--set total_steps=300: the run has trained 512 decisions" in err, err
    in_progress = [key for key in good["engine"]["opponents"] if key is not None]
    assert in_progress  # the smoke run plays a quarter of its matches against its pool
    code, err = resume(tmp_path, good, capsys, "--set", "opponents=[]",
                       "--set", "opponent_fraction=0")
    assert code == 2 and "--set opponents: the run's matches in progress play" in err, err
    assert "resume piece" not in err.split("(")[0]
    assert not (tmp_path / "ckpt").exists() and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("how", ["encrypted", "name_not_utf8", "entry_longer_than_file"])
def test_a_damaged_archive_is_one_line_for_resume_and_init_from(tmp_path, monkeypatch, capsys,
                                                                good, how):
    """zipfile's errors on a damaged file (RuntimeError, UnicodeDecodeError, an empty EOFError)
    escaped --resume and init_from as tracebacks."""
    from test_hostile_checkpoints import damage_archive
    path = tmp_path / "in" / "resume.pt"
    path.parent.mkdir()
    torch.save(good, path)
    damage_archive(path, how)
    monkeypatch.chdir(tmp_path)
    outputs = ["--set", f"log_dir={tmp_path / 'runs'}",
               "--set", f"checkpoint_dir={tmp_path / 'ckpt'}"]
    for args in (["--resume", str(path)], ["--config", str(SMOKE), "--set", f"init_from={path}"]):
        assert main(args + outputs) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1 and len(err) < 2000, err[:300]
        assert f"{path} is not a readable checkpoint (" in err and not err.endswith(": )\n"), err
    assert sorted(os.listdir(tmp_path)) == ["in"]  # no run or checkpoint folder made


def test_a_resume_that_would_write_checkpoints_too_large_to_read_is_refused(tmp_path, capsys,
                                                                            monkeypatch, good):
    """--set max_snapshots on resume grows every checkpoint the run writes: the size check a new
    run gets is made on resume too (it was skipped: the run wrote files --resume then refused)."""
    import training.checkpoint as checkpoint
    monkeypatch.setattr(checkpoint, "MAX_CHECKPOINT_BYTES", 2 << 20)  # the smoke net's scale
    code, err = resume(tmp_path, good, capsys, "--set", "total_steps=512", "--set",
                       "final_eval_pairs=1")
    assert code == 0, err  # 5 snapshots fit
    (tmp_path / "more").mkdir()
    code, err = resume(tmp_path / "more", good, capsys, "--set", "max_snapshots=1000")
    assert code == 2 and err.count("\n") == 1, err
    assert "max_snapshots 1000: this resumed run's checkpoints would hold about" in err, err
    assert sorted(os.listdir(tmp_path / "more")) == ["in"]  # before anything is written


def test_max_minutes_counts_the_whole_run_resumed_sessions_included(tmp_path, capsys, good):
    used = dict(good, wall_time=600.0)  # ten minutes spent before the checkpoint
    code, err = resume(tmp_path, used, capsys, "--set", "max_minutes=5")
    assert code == 2 and "max_minutes (10.0 of 5 min)" in err, err
    assert not (tmp_path / "ckpt").exists()


def test_ctrl_c_in_the_final_evaluation_says_the_checkpoint_is_written(tmp_path, capsys,
                                                                       monkeypatch):
    import training.train as train_module

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(train_module, "_evaluate_and_log", interrupted)
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
    monkeypatch.setattr(train_module, "_evaluate_and_log", interrupted)
    # the same run again into the same folder (--force), stopped during its final evaluation:
    # the first run's mark must not make it look evaluated
    assert main(["--config", str(SMOKE), *args, "--set", "total_steps=256", "--set",
                 "eval_every=0", "--force"]) == 130
    evaluated = []
    monkeypatch.setattr(train_module, "_evaluate_and_log",
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
