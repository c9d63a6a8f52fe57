"""Hostile resume checkpoints (issues 14, 15): every piece of a ``--resume`` file is checked
before training starts (exit 2, one line naming the piece), and a checkpoint never decides where
files go.  Run folders not reused by accident, Ctrl-C leaving a resumable checkpoint, and the
other run-level checks: test_hostile_resume_runs.py."""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tensorboard")

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
    # the SHA-256 of the files each opponent and evaluation agent loaded (training.agent_files)
    ("fingerprints", lambda d: d.update(fingerprints=["ckpt:a.pt"])),
    ("fingerprints", lambda d: d.update(fingerprints={"ckpt:a.pt": "not a digest"})),
    ("fingerprints", lambda d: d.update(fingerprints={"ckpt:a.pt": "A" * 64})),
    ("fingerprints", lambda d: d.update(fingerprints={7: "0" * 64})),
    ("fingerprints", lambda d: d.update(fingerprints={"x" * 5000: "0" * 64})),
    ("fingerprints", lambda d: d.update(fingerprints={f"ckpt:{i}": "0" * 64
                                                      for i in range(200)})),
    ("update", lambda d: d.update(update=-1)),
    ("update", lambda d: d.update(update=10 ** 30)),
    ("global_step", lambda d: d.update(global_step="many")),
    ("wall_time", lambda d: d.update(wall_time=float("inf"))),
    # finite but past what ship and the curves read: the resumed run trained, then printed a
    # 300-digit number of minutes, and its checkpoints could not be shipped
    ("wall_time", lambda d: d.update(wall_time=1e300)),
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
                 f"checkpoint_dir={tmp_path / 'ckpt'}", "--set", "final_eval_pairs=1",
                 "--set", "max_minutes=30"]) == 0
    out = capfd.readouterr().out
    assert "resumed from step 256" in out and "; training stops at 30 min)" in out
    # the final evaluation's minute (silent before) is said, and left out of the training's
    assert "final evaluation: 1 duplicate pair against each of random\n" in out
    minutes = r"(\d+\.\d|0\.0\d+|\d(\.\d+)?e-\d+)"  # checkpoint.minutes_text: a tiny run's digits
    assert re.search(rf"\n\nrun smoke: \d+ steps, {minutes} min of training \({minutes} with the "
                     r"final evaluation\), checkpoint ", out)


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
    # a tiny budget shows its digits: it read "(0.0 of 0.001 min)", as if nothing was used
    code, err = resume(tmp_path, dict(good, wall_time=0.09), capsys, "--set", "max_minutes=0.001")
    assert code == 2 and "max_minutes (0.0015 of 0.001 min)" in err, err


def test_opponents_set_on_resuming_a_self_play_run_need_a_fraction(tmp_path, capsys):
    """The resumed config keeps the run's opponent_fraction 0: --set opponents=[greedy] alone
    trained on in pure self-play without a word."""
    folders = [f"log_dir={tmp_path / 'runs'}", f"checkpoint_dir={tmp_path / 'ckpt'}"]
    train(load_config(SMOKE, [*folders, "total_steps=256", "eval_every=0", "opponents=[]",
                              "opponent_fraction=0", "final_eval_pairs=1"]), final_table=False)
    latest = tmp_path / "ckpt" / "smoke" / "latest.pt"
    data = torch.load(latest, weights_only=True)
    code, err = resume(tmp_path, data, capsys, "--set", "total_steps=512", "--set",
                       "opponents=[greedy]")
    assert code == 2 and "--set: opponents are listed but opponent_fraction is 0 (not given)" \
        in err, err
    assert main(["--resume", str(latest), *(f"--set={option}" for option in folders),
                 "--set", "total_steps=512", "--set", "opponents=[greedy]", "--set",
                 "opponent_fraction=0.5", "--set", "final_eval_pairs=1"]) == 0
