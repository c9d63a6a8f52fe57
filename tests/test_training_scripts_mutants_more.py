"""More tests from the mutation audit of the training scripts (``test_training_scripts_mutants.py``
holds the rest): the trainer's stops between two checkpoints, its resume and divergence
messages (each trains the smoke config for a few updates: seconds), the collection's part files,
progress and replay, joined labels' teacher, the curve's names and pairs, ship's arena errors."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tensorboard")

from test_training import _smoke  # noqa: E402


def _run(tmp_path, monkeypatch, **fakes):
    """The smoke config for 5 updates, a checkpoint every 2 (none written at update 3 unless
    the run stops there); ``fakes``: the train module's ``time`` or ``Interrupt``."""
    from training import train
    for name, fake in fakes.items():
        monkeypatch.setattr(train, name, fake)
    cfg = _smoke(tmp_path, "total_steps=1280", "checkpoint_every=2", "eval_every=0",
                 *(["max_minutes=10"] if "time" in fakes else []))
    out = train.train(cfg, final_table=False)
    latest = torch.load(tmp_path / "ckpt" / "smoke" / "latest.pt", weights_only=True)
    return out, latest["global_step"]


def test_a_run_out_of_time_saves_the_update_it_stopped_at(tmp_path, monkeypatch):
    """Each reading of the clock is a minute later: max_minutes=10 is reached during update 3
    (a few readings an update), and that update's checkpoint is written, not only update 2's
    (checkpoint_every)."""
    ticks = iter(range(10 ** 6))
    clock = SimpleNamespace(time=lambda: 1e9 + 60 * next(ticks), strftime=time.strftime)
    out, saved = _run(tmp_path, monkeypatch, time=clock)
    assert out["global_step"] == saved < 1280, "the run was not stopped for time"
    assert saved % 512, "the stop must fall between two checkpoints (at an odd update)"


def test_a_run_folder_stopped_by_max_minutes_is_not_called_complete(tmp_path, monkeypatch):
    """Its final evaluation is logged too, and the folder's message called it complete and
    offered a --resume with more total_steps, which the used max_minutes refused (and more
    max_minutes with that total_steps would have shrunk the learning-rate schedule)."""
    from training import train
    from training.config import ConfigError
    ticks = iter(range(10 ** 6))
    clock = SimpleNamespace(time=lambda: 1e9 + 60 * next(ticks), strftime=time.strftime)
    out, saved = _run(tmp_path, monkeypatch, time=clock)
    assert not out["interrupted"] and saved < 1280
    cfg = _smoke(tmp_path, "total_steps=1280", "checkpoint_every=2", "eval_every=0",
                 "max_minutes=10")
    with pytest.raises(ConfigError) as error:
        train.train(cfg, final_table=False)
    assert f"max_minutes stopped it at step {saved}" in str(error.value)
    assert "--set max_minutes=M (M above the " in str(error.value)
    assert "minutes it has used) (total_steps as it was)" in str(error.value)
    # the minutes the resume's own check reads (the checkpoint's, not those after the final
    # evaluation), written as it writes them (was 1.44e+03 for a day's run)
    wall = torch.load(tmp_path / "ckpt" / "smoke" / "latest.pt", weights_only=True)["wall_time"]
    assert f"(M above the {wall / 60:.1f} minutes it has used)" in str(error.value)
    assert "is complete" not in str(error.value)


def test_a_run_out_of_time_at_its_last_update_is_complete_and_told_to_give_minutes(tmp_path):
    """Its hint offered only more total_steps, and that --resume was refused for the
    max_minutes it had used."""
    from training import train
    from training.config import ConfigError
    settings = ("total_steps=256", "eval_every=0", "max_minutes=0.0001")
    train.train(_smoke(tmp_path, *settings), final_table=False)
    with pytest.raises(ConfigError) as error:
        train.train(_smoke(tmp_path, *settings), final_table=False)
    assert "it is complete" in str(error.value)
    assert "--set total_steps=N (N at least 512: one more update) --set max_minutes=M (M " \
           "above the " in str(error.value)


def test_a_complete_run_folder_is_called_complete(tmp_path, monkeypatch):
    from training import train
    from training.config import ConfigError
    out, saved = _run(tmp_path, monkeypatch)
    assert saved == 1280
    with pytest.raises(ConfigError, match="it is complete .* step 1280"):
        train.train(_smoke(tmp_path, "total_steps=1280", "checkpoint_every=2", "eval_every=0"),
                    final_table=False)


def test_an_evaluation_stopped_during_its_picture_logs_nothing(monkeypatch):
    """A Ctrl-C in the picture's match left the eval scalars logged, and the resumed run logged
    its final evaluation at that step a second time."""
    from training import evaluation as train
    logged = []
    writer = SimpleNamespace(add_scalar=lambda *a: logged.append(a),
                             add_image=lambda *a, **k: logged.append(a))
    monkeypatch.setattr(train, "check_session_files", lambda *a: None)
    monkeypatch.setattr(train, "evaluate_policy", lambda *a: {})
    monkeypatch.setattr(train, "eval_scalars", lambda results: {"eval/win_rate_vs_x": 1.0})

    def stopped(*args):
        raise KeyboardInterrupt
    monkeypatch.setattr(train, "eval_game_picture", stopped)
    cfg = SimpleNamespace(eval_agents=["random"], eval_seed=0, target=250, max_rounds=None)
    with pytest.raises(KeyboardInterrupt):
        train.evaluate_and_log(writer, None, cfg, 2, 4096, 60.0, {})
    assert logged == []


class _StopAtThird:
    """Ctrl-C during the third update: ``requested`` reads True from its third reading on."""

    def __init__(self):
        self.reads = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    @property
    def requested(self):
        self.reads += 1
        return self.reads >= 3


def test_a_run_interrupted_between_two_checkpoints_saves_the_update_it_finished(
        tmp_path, monkeypatch):
    out, saved = _run(tmp_path, monkeypatch, Interrupt=_StopAtThird)
    assert out["interrupted"] and out["global_step"] == saved == 768  # update 3 of 5


@pytest.fixture(scope="module")
def first_checkpoint(tmp_path_factory):
    """The smoke run's checkpoint at update 1 of 2, as a dict."""
    from training import train
    folder = tmp_path_factory.mktemp("smoke")
    train.train(_smoke(folder, "total_steps=512", "eval_every=0"), final_table=False)
    return torch.load(folder / "ckpt" / "smoke" / "step_256.pt", weights_only=True)


def test_a_resume_that_has_used_exactly_its_max_minutes_is_refused(tmp_path, capsys,
                                                                    first_checkpoint):
    from training.train import main
    path = tmp_path / "resume.pt"
    torch.save(dict(first_checkpoint, wall_time=300.0), path)
    assert main(["--resume", str(path), "--set", "max_minutes=5", "--set",
                 f"log_dir={tmp_path / 'runs'}", "--set", f"checkpoint_dir={tmp_path / 'ckpt'}"]) \
        == 2
    assert "the run has used its max_minutes (5.0 of 5 min)" in capsys.readouterr().err
    assert not (tmp_path / "ckpt").exists()


def test_a_resume_does_not_read_the_init_from_file_again(tmp_path, capsys):
    """The resumed weights are the checkpoint's: a run started from a policy file that is gone
    since (moved, replaced) resumes."""
    from policy_files import save_policy
    from sevenrocks_env.policy import PolicyNet
    from test_training import _folders, drop_checkpoints_after
    from training import train
    init = save_policy(tmp_path / "init.pt", PolicyNet([32, 32]))
    train.train(_smoke(tmp_path, "total_steps=512", "eval_every=0", f"init_from={init}"),
                final_table=False)
    drop_checkpoints_after(tmp_path / "ckpt" / "smoke", 256)
    init.unlink()
    assert train.main(["--resume", str(tmp_path / "ckpt" / "smoke" / "step_256.pt"), "--set",
                       "final_eval_pairs=1", *_folders(tmp_path)]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("at, blamed", [(1, True), (2, False)])
def test_only_unusable_outputs_at_the_first_update_blame_the_starting_network(
        tmp_path, monkeypatch, at, blamed):
    from policy_files import save_policy
    from sevenrocks_env.policy import PolicyNet
    from training import train
    from training.ppo import DivergenceError, LogitsError
    init = save_policy(tmp_path / "init.pt", PolicyNet([32, 32]))
    updates, real = [], train.ppo_update

    def update(*args, **kwargs):
        updates.append(1)
        if len(updates) == at:
            raise LogitsError("outputs not finite")
        return real(*args, **kwargs)
    monkeypatch.setattr(train, "ppo_update", update)
    with pytest.raises(DivergenceError) as info:
        train.train(_smoke(tmp_path, "total_steps=512", "eval_every=0", f"init_from={init}"),
                    final_table=False)
    assert (f"the starting network, {init}, gives unusable outputs" in str(info.value)) == blamed


# ---------------------------------------------------------------- distill_collect
def test_the_part_files_there_are_in_the_order_of_their_numbers(tmp_path, monkeypatch):
    import os

    from training import distill_collect
    for index in (0, 1, 2, 10):
        (tmp_path / f"s.labels.part{index}.npz").touch()
    listed = os.listdir
    monkeypatch.setattr(os, "listdir", lambda path: sorted(listed(path), reverse=True))
    assert [path.name for path in distill_collect.part_paths_there(tmp_path / "s.labels.npz")] \
        == ["s.labels.part0.npz", "s.labels.part1.npz", "s.labels.part2.npz",
            "s.labels.part10.npz"]


@pytest.mark.parametrize("envs", [range(65_535, 65_537), range(0, 4, 2), range(-1, 3),
                                  range(3, 3)])
def test_envs_to_play_again_outside_a_collection_s_are_refused(envs):
    from training.distill_collect import labelled_turns
    with pytest.raises(ValueError, match="a collection's envs are 0 to 65,535"):
        next(labelled_turns({}, None, envs))


def test_a_collection_logs_its_progress_every_thousand_labels():
    from distill_stand_ins import Highest, tiny_student
    from training.distill_collect import collect
    lines = []
    collect(tiny_student(), Highest(), 1001, num_envs=64, seed=1, log=lines.append)
    assert len(lines) == 1 and lines[0].startswith("collect: 1,0"), lines  # (the step's end)
    assert "/1,001 labels, " in lines[0] and lines[0].endswith(" labels/s"), lines


def test_a_collection_s_matches_are_played_again_label_by_label():
    """Several labels of one env are met in the order the env made them."""
    import numpy as np
    from distill_stand_ins import Highest, tiny_student
    from training.distill_collect import collect, labelled_turns
    labels = collect(tiny_student(), Highest(), 30, num_envs=3, seed=2, log=lambda *_: None)
    labels["seed"] = 2
    rows = [row for _, _, label_rows in labelled_turns(labels, tiny_student(), range(3))
            for row in label_rows]
    assert sorted(rows) == list(range(30)) and np.bincount(labels["match"] >> 32).min() > 1


# ---------------------------------------------------------------- distill_labels
def test_the_teachers_of_joined_files_are_cut_to_a_teacher_s_length(tmp_path):
    from test_distill_labels_join import random_labels
    from training.distill_labels import MAX_TEACHER_CHARS, join_labels_files, save_labels
    files = []
    for seed in (1, 2):
        labels, _ = random_labels(5, seed)
        teacher = f"search:samples={seed}," + "x" * (MAX_TEACHER_CHARS - 20)
        files.append(str(save_labels(tmp_path / f"{seed}.npz", labels, teacher)))
    _, teacher = join_labels_files(files)
    assert len(teacher) == MAX_TEACHER_CHARS and teacher.startswith("search:samples=1,x")


# ---------------------------------------------------------------- plot_curve
def test_an_evaluation_of_0_pairs_is_refused(tmp_path):
    pytest.importorskip("tensorboard")
    from test_training_scripts_mutants import EVALS, event_file, scalar
    from training.plot_curve import read_run
    assert read_run(event_file(tmp_path / "one", [*EVALS, scalar("eval/pairs", 1, 10)])
                    )["pairs_at"] == {10: 1}
    with pytest.raises(ValueError, match="eval/pairs"):
        read_run(event_file(tmp_path / "none", [*EVALS, scalar("eval/pairs", 0, 10)]))


@pytest.mark.parametrize("runs, more", [(3, False), (4, True)])
def test_the_hint_names_three_runs_and_says_when_there_are_more(tmp_path, runs, more):
    pytest.importorskip("tensorboard")
    from training.plot_curve import _runs_below
    for index in range(runs):
        (tmp_path / f"r{index}").mkdir()
        (tmp_path / f"r{index}" / "events.out.tfevents.1.host").touch()
    hint = _runs_below(tmp_path)
    assert hint.startswith("; it holds runs, give one: ") and hint.endswith(", ...") == more
    assert hint.count(str(tmp_path)) == 3


def test_a_name_in_the_picture_is_cut_to_60_characters():
    from training.plot_curve import _text
    assert _text("$" + "a" * 59) == r"\$" + "a" * 59
    assert _text("a" * 61) == "a" * 57 + "..."


def test_a_resumed_run_s_last_hyperparameter_table_gives_the_pairs(tmp_path):
    pytest.importorskip("tensorboard")
    from test_training_scripts_mutants import EVALS, TABLE, event_file, hyperparameters
    from training.plot_curve import read_run
    resumed = hyperparameters(TABLE.replace(b"|8|", b"|16|"))
    resumed.step = 5
    run = event_file(tmp_path / "run", [hyperparameters(TABLE), *EVALS, resumed])
    assert read_run(run)["pairs"] == (4, 16)


# ---------------------------------------------------------------- ship
def test_a_policy_failing_in_the_arena_is_named_by_the_user_s_file(tmp_path, monkeypatch,
                                                                     capsys):
    """The arena plays a staged copy; its error names the checkpoint given, not the copy."""
    from policy_files import save_policy
    from sevenrocks_env.driver import AgentError
    from training import ship

    def broken(play, spec, plan, shipped):
        raise AgentError(f"{spec.partition('ckpt:')[2]}: outputs not finite")
    monkeypatch.setattr(ship, "_play", broken)
    source = save_policy(tmp_path / "plain.pt")
    out = tmp_path / "shipped" / "policy.pt"
    assert ship.main([str(source), "--out", str(out), "--pairs", "1", "--search-pairs", "0"]) == 1
    assert capsys.readouterr().err == (f"error: {source}: outputs not finite; nothing was written "
                                       f"({out} and its card are as they were)\n")
