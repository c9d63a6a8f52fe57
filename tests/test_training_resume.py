"""The PPO trainer's ``--resume``: a resumed run continues bit for bit (with the oracle critic,
with opponents and their snapshots), logs its config where it resumed, refuses to change the
networks or to write over another run, takes another opponent pool, and refuses a policy-only,
corrupt or damaged file naming it (the trainer's smoke run: ``test_training.py``)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tensorboard")

from training.checkpoint import load_training_checkpoint  # noqa: E402
from training.resume import resumed_config  # noqa: E402
from training.train import main, train  # noqa: E402

from test_training import _folders, _scalars, _smoke, drop_checkpoints_after  # noqa: E402


@pytest.mark.parametrize("critic", ["shared", "oracle"])
def test_resume_continues_bit_for_bit(tmp_path, critic):
    # Run three updates straight, then resume the same run from its first checkpoint:
    # the same steps, optimizer and schedule must reproduce the same weights.
    cfg = _smoke(tmp_path, "total_steps=768", "eval_every=0", f"critic={critic}")
    train(cfg, final_table=False)
    ckpt_dir = tmp_path / "ckpt" / "smoke"
    straight = torch.load(ckpt_dir / "step_768.pt", weights_only=True)
    first = ckpt_dir / "step_256.pt"
    drop_checkpoints_after(ckpt_dir, 256)
    # TensorBoard reads a run's event files in name order, "events.out.tfevents.<second>.<host>.
    # <pid>.<writer count>": both writers of this one process in the same second, with the count
    # going from 9 to 10, would put the resumed file first and its purge_step before the values
    # it drops. A real resume is another process, later; here the next second is waited for.
    time.sleep(1.01 - time.time() % 1)
    assert main(["--resume", str(first), "--set", "final_eval_pairs=1", *_folders(tmp_path)]) == 0
    resumed = torch.load(ckpt_dir / "latest.pt", weights_only=True)
    assert resumed["global_step"] == 768 and resumed["update"] == 3
    for key, tensor in straight["model"].items():
        assert torch.equal(tensor, resumed["model"][key]), key
    assert resumed["optimizer"]["state"][0]["step"] == straight["optimizer"]["state"][0]["step"]
    assert (resumed["critic"] is None) == (critic == "shared")
    for key, tensor in (straight["critic"] or {}).items():
        assert torch.equal(tensor, resumed["critic"][key]), key
    steps = [s for s, _ in _scalars(tmp_path / "runs" / "smoke")["charts/learning_rate"]]
    assert max(steps) == 768
    assert len(steps) == len(set(steps)) == 3  # steps 512, 768 logged twice before purge_step
    # TensorBoard's plugin loader (--load_fast=false) purges only after a run's first start mark
    assert _plugin_steps(tmp_path / "runs" / "smoke", "charts/learning_rate") == [256, 512, 768]


def _plugin_steps(run_dir: Path, tag: str) -> list[int]:
    """The steps of ``tag`` as TensorBoard's server reads them (its plugin accumulator)."""
    from tensorboard.backend.event_processing.plugin_event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir), size_guidance={"tensors": 0})
    acc.Reload()
    return [event.step for event in acc.Tensors(tag)]


def _hyperparameters(run_dir: Path) -> list[tuple[int, str]]:
    """The logged ``hyperparameters`` tables as ``(step, text)``, as TensorBoard's server reads
    them (its plugin accumulator: the legacy ``EventAccumulator`` never purges text)."""
    from tensorboard.backend.event_processing.plugin_event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir), size_guidance={"tensors": 0})
    acc.Reload()
    return [(event.step, event.tensor_proto.string_val[0].decode())
            for event in acc.Tensors("hyperparameters/text_summary")]


def test_a_resumed_run_logs_its_config_at_the_resume_not_at_step_0(tmp_path):
    """A resume with another learning rate logged its table at step 0 beside the first run's
    (two step-0 tables, no telling which holds after the resume), and a second resume from the
    same checkpoint kept the abandoned session's table too; now each session's table is at its
    first step, and a resume drops those of sessions it goes back over."""
    train(_smoke(tmp_path, "total_steps=512", "eval_every=0"), final_table=False)
    first = tmp_path / "ckpt" / "smoke" / "step_256.pt"
    for rate in ("0.001", "0.002"):
        time.sleep(1.01 - time.time() % 1)  # a new event file name (see the test above)
        assert main(["--resume", str(first), "--set", f"learning_rate={rate}", "--set",
                     "final_eval_pairs=1", "--force", *_folders(tmp_path)]) == 0
    tables = _hyperparameters(tmp_path / "runs" / "smoke")
    assert [step for step, _ in tables] == [0, 257]
    assert "|learning_rate|0.00025|" in tables[0][1] and "|learning_rate|0.002|" in tables[1][1]


@pytest.mark.parametrize("engine", ["batched", "python"])
@pytest.mark.parametrize("opponents", [
    ("opponents=[random]", "opponent_fraction=0.5"),  # a baseline with its own generator
    # one snapshot kept, matches to 250: snapshots are dropped while matches still play them
    ("opponents=[past]", "opponent_fraction=0.5", "max_snapshots=1", "target=250"),
], ids=["random", "dropped-snapshots"])
def test_resume_is_bit_for_bit_with_opponents(tmp_path, engine, opponents):
    cfg = _smoke(tmp_path, "total_steps=1536", "eval_every=0", f"engine={engine}", *opponents)
    train(cfg, final_table=False)
    ckpt_dir = tmp_path / "ckpt" / "smoke"
    straight = torch.load(ckpt_dir / "step_1536.pt", weights_only=True)
    middle = torch.load(ckpt_dir / "step_768.pt", weights_only=True)
    if "opponents=[past]" in opponents:  # the case this test is about did happen
        assert middle["pool"]["retired"] and any(
            key and key.startswith("past@") for key in middle["engine"]["opponents"])
    else:
        assert "numpy" in middle["pool"]["fixed"]["random"]
    drop_checkpoints_after(ckpt_dir, 768)
    assert main(["--resume", str(ckpt_dir / "step_768.pt"), "--set", "final_eval_pairs=1",
                 *_folders(tmp_path)]) == 0
    resumed = torch.load(ckpt_dir / "latest.pt", weights_only=True)
    assert resumed["global_step"] == 1536
    for key, tensor in straight["model"].items():
        assert torch.equal(tensor, resumed["model"][key]), key
    # a checkpoint keeps exactly the dropped snapshots its matches still play (the ones a
    # resume loaded are let go once their matches end: the list must not grow past num_matches)
    for data in (middle, straight, resumed):
        playing = {k for k in data["engine"]["opponents"] if k and k.startswith("past@")}
        assert len(data["pool"].get("retired", [])) == len(playing)


def test_past_added_on_resume_starts_from_the_resumed_policy(tmp_path, monkeypatch):
    """No snapshot in the checkpoint: the first one is the resumed weights, not the fresh
    network the pool is built with (and drawing `past` does not fail on an empty pool)."""
    from training.opponents import OpponentPool

    train(_smoke(tmp_path, "total_steps=256", "eval_every=0", "opponents=[greedy]"),
          final_table=False)
    latest = tmp_path / "ckpt" / "smoke" / "latest.pt"
    saved = torch.load(latest, weights_only=True)
    assert not saved["pool"]["snapshots"]
    snapshots, original = [], OpponentPool.add_snapshot

    def recording(pool, model):
        snapshots.append({k: v.clone() for k, v in model.state_dict().items()})
        original(pool, model)

    monkeypatch.setattr(OpponentPool, "add_snapshot", recording)
    assert main(["--resume", str(latest), "--set", "total_steps=512", "--set", "opponents=[past]",
                 "--set", "final_eval_pairs=1", *_folders(tmp_path)]) == 0
    # [0]: the pool's constructor (fresh weights, then replaced by the checkpoint's empty pool);
    # [1]: the snapshot taken once the checkpoint's weights are loaded
    for key, tensor in saved["model"].items():
        assert torch.equal(snapshots[1][key], tensor), key


def test_resume_refuses_to_change_the_networks(tmp_path, capsys):
    train(_smoke(tmp_path, "total_steps=256", "eval_every=0", "critic=shared"), final_table=False)
    latest = tmp_path / "ckpt" / "smoke" / "latest.pt"
    for override in ("critic=oracle", "action_features=1", "hidden_sizes=[16]", "num_steps=8",
                     "num_matches=8",  # these two: blamed on --set, not on the checkpoint
                     "seed=99",  # the generators come from the file: recorded, never used
                     "target=77", "max_rounds=3",  # "damaged engine": the matches in progress
                     "init_from=shipped"):  # ignored, yet saved in the checkpoints and the card
        assert main(["--resume", str(latest), "--set", override, *_folders(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert f"{override.split('=')[0]} cannot change on --resume" in err, err


def test_a_resume_never_writes_over_another_run_of_the_same_name(tmp_path, capsys):
    """Run B (written under other folders) resumed with the default folders wrote into run A's,
    which had the same name: A's checkpoints replaced and its curves cut at B's step."""
    train(_smoke(tmp_path / "a", "total_steps=512", "eval_every=0"), final_table=False)
    train(_smoke(tmp_path / "b", "total_steps=256", "eval_every=0", "seed=9"), final_table=False)
    a_files = {p: p.read_bytes() for p in (tmp_path / "a").rglob("*") if p.is_file()}
    latest_b = tmp_path / "b" / "ckpt" / "smoke" / "latest.pt"
    assert main(["--resume", str(latest_b), "--set", "total_steps=512",
                 *_folders(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: run folder {tmp_path / 'a' / 'runs' / 'smoke'} exists, and "
                          f"the resumed checkpoint lies in {latest_b.parent}, not in "
                          f"{tmp_path / 'a' / 'ckpt' / 'smoke'}"), err
    assert f"--set checkpoint_dir={tmp_path / 'b' / 'ckpt'} writes beside" in err
    assert "--force" in err and err.count("\n") == 1
    assert {p: p.read_bytes() for p in (tmp_path / "a").rglob("*") if p.is_file()} == a_files
    assert main(["--resume", str(latest_b), "--set", "total_steps=512", "--set",
                 "final_eval_pairs=1", *_folders(tmp_path / "b")]) == 0  # its own folders
    # from Python without the checkpoint's path: its folder unknown, the run's own is taken
    data = load_training_checkpoint(latest_b)
    cfg = resumed_config(data, {"total_steps": 768, "final_eval_pairs": 1,
                                "log_dir": str(tmp_path / "b" / "runs"),
                                "checkpoint_dir": str(tmp_path / "b" / "ckpt")}, latest_b)
    assert train(cfg, resume=data, final_table=False)["global_step"] == 768


def test_resume_with_fewer_snapshots_than_the_run_keeps_names_the_setting(tmp_path, capsys):
    """The smaller max_snapshots was reported as a damaged checkpoint ('pool')."""
    train(_smoke(tmp_path, "total_steps=512", "eval_every=0", "opponents=[past]",
                 "opponent_fraction=0.5", "max_snapshots=2", "snapshot_every=1"),
          final_table=False)
    latest = tmp_path / "ckpt" / "smoke" / "latest.pt"
    assert len(torch.load(latest, weights_only=True)["pool"]["snapshots"]) == 2
    assert main(["--resume", str(latest), "--set", "max_snapshots=1", *_folders(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--set max_snapshots=1: the run keeps 2 past snapshots" in err, err


def test_resume_a_run_from_before_feature_versions(tmp_path):
    # Older checkpoints stored action_features=True (version 1) and had no critic field.
    train(_smoke(tmp_path, "total_steps=256", "eval_every=0", "action_features=1",
                 "critic=shared"), final_table=False)
    latest = tmp_path / "ckpt" / "smoke" / "latest.pt"
    data = torch.load(latest, weights_only=True)
    data["model_config"]["action_features"] = True
    for key in ("action_features", "critic"):
        del data["config"][key]
    del data["critic"]
    torch.save(data, latest)
    assert main(["--resume", str(latest), "--set", "total_steps=512",
                 "--set", "final_eval_pairs=1", *_folders(tmp_path)]) == 0
    resumed = torch.load(latest, weights_only=True)
    assert resumed["global_step"] == 512 and resumed["model_config"]["action_features"] == 1


def test_resume_with_a_different_opponent_pool(tmp_path):
    """Matches in progress against a baseline dropped from the pool finish against it."""
    cfg = _smoke(tmp_path, "total_steps=256", "eval_every=0", "opponents=[greedy]",
                 "opponent_fraction=1.0")
    train(cfg, final_table=False)
    latest = tmp_path / "ckpt" / "smoke" / "latest.pt"
    assert main(["--resume", str(latest), "--set", "total_steps=512", "--set", "opponents=[random]",
                 "--set", "final_eval_pairs=1", *_folders(tmp_path)]) == 0
    assert torch.load(latest, weights_only=True)["global_step"] == 512


def test_resume_rejects_policy_only_or_corrupt_file(tmp_path, capsys):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint at all")
    assert main(["--resume", str(bad), *_folders(tmp_path)]) == 2
    assert "not a readable checkpoint" in capsys.readouterr().err


def test_resume_rejects_a_damaged_oracle_critic(tmp_path, capsys):
    train(_smoke(tmp_path, "total_steps=256", "eval_every=0", "critic=oracle"), final_table=False)
    latest = tmp_path / "ckpt" / "smoke" / "latest.pt"
    data = torch.load(latest, weights_only=True)
    for damage, message in ((lambda c: c.update({k: v[:1] for k, v in c.items()}), "'critic'"),
                            (lambda c: next(iter(c.values())).fill_(float("nan")), "'critic'")):
        broken = {**data, "critic": {k: v.clone() for k, v in data["critic"].items()}}
        damage(broken["critic"])
        torch.save(broken, latest.parent / "broken.pt")  # in the run's folder: its own
        assert main(["--resume", str(latest.parent / "broken.pt"), *_folders(tmp_path)]) == 2
        assert message in capsys.readouterr().err


def test_a_resumed_run_that_diverges_before_saving_names_the_checkpoint_it_resumed(
        tmp_path, capsys, monkeypatch):
    import training.train as train_module

    train(_smoke(tmp_path, "total_steps=256", "eval_every=0"), final_table=False)
    latest = tmp_path / "ckpt" / "smoke" / "latest.pt"
    real = train_module.ppo_update

    def poisoned(model, optimizer, batch, *args):
        batch["advantages"][0] = float("nan")
        return real(model, optimizer, batch, *args)

    monkeypatch.setattr(train_module, "ppo_update", poisoned)
    assert main(["--resume", str(latest), "--set", "total_steps=768", *_folders(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "training diverged at update 2 (step 256)" in err
    assert f"the last checkpoint is {latest} (lower" in err, err


def test_resuming_an_earlier_checkpoint_in_its_own_folder_is_refused(tmp_path, capsys):
    """Resuming step 256 of a run that went on to 512 wrote over step_512.pt and latest.pt (and
    cut the curves at 256) without a word: refused; the new run goes elsewhere or --force."""
    train(_smoke(tmp_path, "total_steps=768", "eval_every=0"), final_table=False)
    ckpt_dir = tmp_path / "ckpt" / "smoke"
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    first = ckpt_dir / "step_256.pt"
    assert main(["--resume", str(first), "--set", "learning_rate=1e-3", *_folders(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"error: {ckpt_dir} holds this run's later checkpoints (latest.pt at step 768, "
        "step_512.pt, step_768.pt): resuming step 256 there would overwrite some and mix the rest"
        " with the new run's; resume the newest, write the new run elsewhere (--set "
        "run_name=NEW), or --force\n")
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    assert main(["--resume", str(first), "--set", "run_name=branch", "--set", "total_steps=512",
                 "--set", "final_eval_pairs=1", *_folders(tmp_path)]) == 0
    assert (tmp_path / "ckpt" / "branch" / "step_512.pt").is_file()
    assert {p: p.read_bytes() for p in before} == before  # the run resumed is untouched
    assert main(["--resume", str(first), "--set", "total_steps=512", "--set",
                 "final_eval_pairs=1", "--force", *_folders(tmp_path)]) == 0  # as the user says
    assert torch.load(ckpt_dir / "latest.pt", weights_only=True)["global_step"] == 512
    # step_768.pt is of the history the rewind went back over: resumed there, it mixed the two
    assert main(["--resume", str(ckpt_dir / "step_768.pt"), "--set", "final_eval_pairs=1",
                 *_folders(tmp_path)]) == 2
    assert (f"{ckpt_dir}'s latest.pt is at step 512, before the resumed step 768: the file is "
            "of another history of this run") in capsys.readouterr().err
    # without a readable latest.pt the step files say what is newer; without them, latest.pt
    again = ["--resume", str(first), "--set", "total_steps=512", "--set", "final_eval_pairs=1",
             *_folders(tmp_path)]
    (ckpt_dir / "latest.pt").write_bytes(b"damaged")
    assert main(again) == 2
    assert "later checkpoints (step_512.pt, step_768.pt): resuming step 256" in \
        capsys.readouterr().err
    (ckpt_dir / "latest.pt").unlink()
    assert main(again) == 2 and "later checkpoints (step_512.pt, step_768.pt)" in \
        capsys.readouterr().err
    assert main([*again, "--force"]) == 0  # (a latest.pt at 512 again)
    for path in set(ckpt_dir.glob("step_*.pt")) - {first}:  # later step files pruned
        path.unlink()
    assert main(again) == 2
    assert "later checkpoints (latest.pt at step 512): resuming step 256" in \
        capsys.readouterr().err
