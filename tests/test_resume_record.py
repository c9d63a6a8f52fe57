"""A run resumed with other learning settings says so in its checkpoints, its policy file and
its model card's training command (``training.resume_record``): the card gave the final config's
command, which trains other weights than the resumed run (the learning-rate schedule of a
raised ``total_steps``, a learning rate changed mid-run)."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tensorboard")

from sevenrocks_env.policy import CheckpointError, PolicyNet  # noqa: E402
from training.checkpoint import export_policy, policy_entries, save_checkpoint  # noqa: E402
from training.resume_record import MAX_RESUMES, resumes_of, resumes_text  # noqa: E402
from training.ship import training_command  # noqa: E402
from training.train import main, train  # noqa: E402

from test_training import _folders, _smoke  # noqa: E402


def _latest(tmp_path) -> dict:
    return torch.load(tmp_path / "ckpt" / "smoke" / "latest.pt", weights_only=True)


def test_a_resume_with_other_learning_settings_is_recorded_and_the_card_says_so(tmp_path,
                                                                               capsys):
    train(_smoke(tmp_path, "total_steps=256", "eval_every=0"), final_table=False)
    assert "resumes" not in _latest(tmp_path)
    latest = tmp_path / "ckpt" / "smoke" / "latest.pt"
    # where it writes, when it stops, how it reports: one run of the final config all the same
    assert main(["--resume", str(latest), "--set", "total_steps=256", "--set", "max_minutes=9",
                 "--set", "eval_every=3", "--set", "final_eval_pairs=1", *_folders(tmp_path)]) \
        == 2  # (complete: refused, nothing recorded)
    assert main(["--resume", str(latest), "--set", "total_steps=512", "--set",
                 "learning_rate=0.001", "--set", "final_eval_pairs=1", *_folders(tmp_path)]) == 0
    first = {"step": 256, "set": {"total_steps": [256, 512], "learning_rate": [0.00025, 0.001]}}
    assert _latest(tmp_path)["resumes"] == [first]
    assert main(["--resume", str(latest), "--set", "total_steps=768", "--set", "max_minutes=5",
                 "--set", "final_eval_pairs=1", *_folders(tmp_path)]) == 0
    second = {"step": 512, "set": {"total_steps": [512, 768]}}  # (max_minutes: not recorded)
    data = _latest(tmp_path)
    assert data["resumes"] == [first, second]
    exported = export_policy(latest, tmp_path / "policy.pt")
    assert torch.load(exported, weights_only=True)["resumes"] == [first, second]
    command = training_command(data, False)
    assert command.endswith(
        "   # resumed with other settings (step 256: total_steps 256 -> 512, learning_rate "
        "0.00025 -> 0.001; step 512: total_steps 512 -> 768): one run of it trains other "
        "weights")
    assert "--set learning_rate=0.001" in command  # (the final config, as before)
    # a run resumed with nothing changed keeps its plain command
    assert "#" not in training_command(dict(data, resumes=[]), False)


def test_only_what_changes_the_weights_is_recorded(tmp_path):
    """An older run's missing fields read as that run's defaults (they were recorded as
    ``null -> default``); evaluation and checkpoint settings, and total_steps where no schedule
    uses it, resume bit for bit."""
    from training.config import TrainConfig
    from training.resume_record import resume_record
    cfg = TrainConfig()
    data = {"global_step": 7}
    assert resume_record(data, cfg, cfg.model_copy(update={
        "eval_pairs": 9, "eval_seed": 3, "checkpoint_every": 4, "max_minutes": 2.0,
        "final_eval_pairs": 5, "eval_every": 0, "run_name": "x"}), "f.pt") == []
    whole = cfg.model_copy(update={"total_steps": cfg.num_updates * cfg.batch_size})
    more = cfg.model_copy(update={"total_steps": whole.total_steps + cfg.batch_size - 1})
    assert whole.num_updates == more.num_updates and resume_record(data, whole, more, "f.pt") == []
    steps = cfg.model_copy(update={"total_steps": cfg.total_steps * 2})
    assert resume_record(data, cfg, steps, "f.pt") == [  # the learning rate's schedule
        {"step": 7, "set": {"total_steps": [cfg.total_steps, cfg.total_steps * 2]}}]
    flat = cfg.model_copy(update={"anneal_lr": False})
    assert resume_record(data, flat, flat.model_copy(update={"total_steps": 10 ** 7}),
                         "f.pt") == []
    annealed = flat.model_copy(update={"ent_coef_final": 0.0})
    assert resume_record(data, annealed, annealed.model_copy(update={"total_steps": 10 ** 7}),
                         "f.pt") != []
    # through --resume: a run whose file lacks fields that came later
    train(_smoke(tmp_path, "total_steps=256", "eval_every=0"), final_table=False)
    older = _latest(tmp_path)
    for key in ("action_scorer", "scorer_sizes", "hand_coef", "target_kl"):
        del older["config"][key]
    torch.save(older, tmp_path / "older.pt")
    assert main(["--resume", str(tmp_path / "older.pt"), "--set", "run_name=again", "--set",
                 "total_steps=512", "--set", "final_eval_pairs=1", *_folders(tmp_path)]) == 0
    again = torch.load(tmp_path / "ckpt" / "again" / "latest.pt", weights_only=True)
    assert again["resumes"] == [{"step": 256, "set": {"total_steps": [256, 512]}}]


@pytest.mark.parametrize("record, why", [
    (None, "null"), (5, "a number"), ("x", "text"),
    ({"step": 1}, "not a list"),
    ([{"step": 1.0, "set": {"seed": [1, 2]}}], "a float step"),
    ([{"step": -1, "set": {"seed": [1, 2]}}], "a negative step"),
    ([{"step": 9, "set": {"seed": [1, 2]}}, {"step": 3, "set": {"seed": [2, 3]}}], "unsorted"),
    ([{"step": 1, "set": {"no_such_key": [1, 2]}}], "an unknown key"),
    ([{"step": 1, "set": {"max_minutes": [1, 2]}}], "a key that changes nothing learnt"),
    ([{"step": 1, "set": {"seed": [1, 1]}}], "no change"),
    ([{"step": 1, "set": {"seed": [1]}}], "not a pair"),
    ([{"step": 1, "set": {}}], "no change at all"),
    ([{"step": 1, "set": {"seed": [1, 2]}, "extra": 0}], "another field"),
    ([{"step": 1, "set": {"seed": [1, float("nan")]}}], "not JSON"),
    ([{"step": i, "set": {"seed": [1, 2]}} for i in range(MAX_RESUMES + 1)], "too many"),
])
def test_a_record_that_is_not_one_is_refused_naming_the_file(record, why):
    with pytest.raises(CheckpointError, match=r"^f\.pt: 'resumes' must be a list of"):
        resumes_of({"resumes": record}, "f.pt")


def test_a_bad_record_stops_a_resume_and_a_card_before_anything_is_written(tmp_path, capsys):
    from training.ship import main as ship
    train(_smoke(tmp_path, "total_steps=256", "eval_every=0"), final_table=False)
    data = _latest(tmp_path)
    damaged = tmp_path / "damaged.pt"
    torch.save(dict(data, resumes=[{"step": 1, "set": {"run_name": ["a", "b"]}}]), damaged)
    assert main(["--resume", str(damaged), "--set", "total_steps=512", "--set",
                 "run_name=other", *_folders(tmp_path)]) == 2
    assert f"{damaged}: 'resumes' must be a list of" in capsys.readouterr().err
    assert not (tmp_path / "ckpt" / "other").exists()
    # printable in the card's command, or the command is given
    config = {"hidden_sizes": [16], "run_name": "x"}
    policy = dict(policy_entries(PolicyNet([16]), 0), config=config,
                  resumes=[{"step": 1, "set": {"init_from": ["a", "b`rm`"]}}])
    source = save_checkpoint(tmp_path / "run.pt", policy)
    out = tmp_path / "shipped" / "policy.pt"
    args = [str(source), "--out", str(out), "--pairs", "1", "--search-pairs", "0", "--agents",
            "random"]
    assert ship(args) == 2
    assert "'resumes' in words" in capsys.readouterr().err and not out.parent.exists()
    assert ship([*args, "--train-command", "my command"]) == 0
    assert json.loads((out.parent / "model_card.json").read_text())["commands"][0] == "my command"


def test_resumes_text_says_each_change_in_json():
    assert resumes_text([{"step": 7, "set": {"opponents": [["past"], []],
                                             "init_temperature": [1.0, 0.25]}}]) == \
        'step 7: opponents ["past"] -> [], init_temperature 1.0 -> 0.25'
    assert resumes_text([]) == ""
