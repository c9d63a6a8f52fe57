"""Tests from a mutation audit of the training scripts: the distillation's settings
(``training/distill_args.py``), its collection (``distill_collect.py``), labels files
(``distill_labels.py``, ``labels_zip.py``) and record (``distill_record.py``), the ship script
(``ship.py``), the learning curve (``plot_curve.py``) and the trainer's command line
(``train.py``).  Each pins what a mutant changed without an existing test failing; no test
trains or collects more than a few labels (seconds in all)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from training.distill_args import Args
from training.distill_labels import MAX_LABELS, MAX_TEACHER_CHARS
from training.distill_record import distill_facts


# ---------------------------------------------------------------- distill_args
def test_a_spec_or_path_longer_than_a_teacher_spec_is_refused():
    Args(init="x" * MAX_TEACHER_CHARS)
    with pytest.raises(ValidationError, match="init"):
        Args(init="x" * (MAX_TEACHER_CHARS + 1))


# ---------------------------------------------------------------- distill_record
ROUND = {"teacher": "search:samples=2", "labels": 10, "holdout_agreement": 0.5}


def test_the_bounds_of_a_round_are_allowed():
    """1 to MAX_LABELS labels, an agreement of 0 to 1 (NaN and None: not measured)."""
    for changes, agreement in [({"labels": 1}, 0.5), ({"labels": MAX_LABELS}, 0.5),
                               ({"holdout_agreement": None}, None),
                               ({"holdout_agreement": float("nan")}, None),
                               ({"holdout_agreement": 0.0}, 0.0),
                               ({"holdout_agreement": 1.0}, 1.0)]:
        facts = distill_facts({"distill": {**ROUND, **changes}}, "p.pt")
        assert facts == {**ROUND, **changes, "holdout_agreement": agreement}  # no "earlier"


# ---------------------------------------------------------------- distill_collect
def test_a_collection_stops_at_its_number_of_decisions_inside_a_step():
    """8 envs give up to 8 decisions a step: 5 asked, 5 labelled (the step's rest dropped)."""
    from distill_stand_ins import Highest, tiny_student
    from training.distill_collect import collect
    labels = collect(tiny_student(), Highest(), 5, num_envs=8, seed=1, log=lambda *_: None)
    assert {key: len(array) for key, array in labels.items()} == dict.fromkeys(labels, 5)


# ---------------------------------------------------------------- plot_curve
def event_file(folder, events):
    """A run folder with one event file of ``events`` (protobuf ``Event``s)."""
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.summary.writer.record_writer import RecordWriter
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "events.out.tfevents.1.test", "wb") as file:
        writer = RecordWriter(file)
        for event in [Event(file_version="brain.Event:2"), *events]:
            writer.write(event.SerializeToString())
    return folder


def scalar(tag, value, step):
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    return Event(step=step, summary=Summary(value=[Summary.Value(tag=tag, simple_value=value)]))


def hyperparameters(*tables: bytes):
    from tensorboard.compat.proto import types_pb2
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
    from tensorboard.compat.proto.tensor_pb2 import TensorProto
    tensor = TensorProto(dtype=types_pb2.DT_STRING, string_val=list(tables))
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="text"))
    return Event(step=0, summary=Summary(value=[Summary.Value(
        tag="hyperparameters/text_summary", metadata=meta, tensor=tensor)]))


EVALS = [scalar("eval/wall_minutes", 1.0, 10), scalar("eval/win_rate_vs_random", 0.5, 10)]
TABLE = b"|param|value|\n|-|-|\n|eval_pairs|4|\n|final_eval_pairs|8|"


def test_logged_hyperparameters_of_two_texts_are_refused(tmp_path):
    pytest.importorskip("tensorboard")
    from training.plot_curve import read_run
    assert read_run(event_file(tmp_path / "one", [*EVALS, hyperparameters(TABLE)]))["pairs"] \
        == (4, 8)
    with pytest.raises(ValueError, match="the logged hyperparameters hold no text"):
        read_run(event_file(tmp_path / "two", [*EVALS, hyperparameters(TABLE, TABLE)]))


def test_only_whole_rows_of_the_hyperparameter_table_give_the_pairs():
    from training.plot_curve import _pairs_from_table
    table = TABLE.decode() + "\n|run_name|a|eval_pairs|99|\n|note|final_eval_pairs|7|"
    assert _pairs_from_table(table) == (4, 8)


def test_the_picture_is_written_in_the_format_its_name_says(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    pytest.importorskip("tensorboard")
    from training.plot_curve import main
    run = event_file(tmp_path / "run", [*EVALS, hyperparameters(TABLE)])
    assert main([str(run), "--out", str(tmp_path / "c.SVG")]) == 0
    assert b"<svg" in (tmp_path / "c.SVG").read_bytes()[:2000]
    assert main([str(run), "--out", str(tmp_path / "c.pdf")]) == 0
    assert (tmp_path / "c.pdf").read_bytes().startswith(b"%PDF")


# ---------------------------------------------------------------- labels_zip
def test_a_damaged_file_s_error_is_cut_to_one_short_line():
    from training.labels_zip import not_labels
    error = not_labels("l.npz", ValueError("x" * 1000 + "\nsecond line"))
    assert str(error) == f"l.npz: not a labels file, or a damaged one (ValueError: {'x' * 200})"


def test_running_out_of_memory_while_reading_headers_is_not_a_bad_file(tmp_path, monkeypatch):
    """A MemoryError is the machine's, not the file's: it is raised as it is."""
    import numpy as np
    from training import labels_zip
    path = tmp_path / "l.npz"
    np.savez(path, action=np.zeros(3, np.int64))

    def no_memory(*_):
        raise MemoryError
    monkeypatch.setattr(labels_zip, "_array_header", no_memory)
    with open(path, "rb") as file, pytest.raises(MemoryError):
        labels_zip.read_headers(path, file, {"action.npy"})


# ---------------------------------------------------------------- ship
def test_a_run_only_against_frozen_opponents_is_named_so_on_its_card():
    from training.model_card import trained_by
    assert trained_by({"opponent_fraction": 1, "opponents": ["random", "greedy"]}) == \
        "PPO policy trained against `random`, `greedy` only"
    assert trained_by({"opponent_fraction": 0.99, "opponents": ["random"]}) == \
        "PPO self-play policy"
    assert trained_by({"opponent_fraction": 1, "opponents": []}) == "PPO self-play policy"


def test_same_policy_compares_the_weights_not_only_their_shapes(tmp_path):
    import torch
    from policy_files import save_policy
    from sevenrocks_env.policy import PolicyNet, read_checkpoint
    from training.checkpoint import policy_only
    from training.ship import same_policy
    torch.manual_seed(0)
    mine = save_policy(tmp_path / "mine.pt", PolicyNet([16]))
    other = save_policy(tmp_path / "other.pt", PolicyNet([16]))
    exported = policy_only(read_checkpoint(mine))
    assert same_policy(f"ckpt:{mine}", exported)
    assert not same_policy(f"ckpt:{other}", exported)
    assert not same_policy(f"ckpt:{tmp_path / 'missing.pt'}", exported)


def test_the_card_s_distillation_row_lists_the_rounds_oldest_first():
    from training.model_card import rounds_text
    first = {"teacher": "search:a", "labels": 1000, "holdout_agreement": None}
    last = {"teacher": "search:b", "labels": 2, "holdout_agreement": 0.5, "earlier": [first]}
    assert rounds_text(last) == (
        "then fine-tuned toward `search:a` on 1,000 labels (`training.distill`; held-out "
        "agreement not measured); then fine-tuned toward `search:b` on 2 labels "
        "(`training.distill`; held-out agreement 0.500)")


# ---------------------------------------------------------------- distill_labels
def test_a_label_array_of_another_shape_is_refused_from_its_header(tmp_path):
    """The header's shape is checked before any data is read (not only the data's, after)."""
    import numpy as np
    from training.distill_labels import LabelsError, load_labels, save_labels
    labels = {"observation": np.zeros((3, 10), np.float32),
              "action_mask": np.ones((3, 113), bool), "action": np.zeros(3, np.int64)}
    save_labels(tmp_path / "l.npz", labels, "search")
    with pytest.raises(LabelsError, match=r"'observation' declares float32 \(3, 10\): not "
                                          r"float32 of shape \(N, 238\)"):
        load_labels(tmp_path / "l.npz")


# ---------------------------------------------------------------- train (command line)
def test_the_trainer_needs_a_config_or_a_checkpoint_and_not_both(capsys, tmp_path):
    from training.train import main
    assert main([]) == 2
    assert capsys.readouterr().err == ("error: give --config PATH (or --resume PATH; --config "
                                       "default is make train's)\n")
    assert main(["--config", str(tmp_path / "c.yaml"), "--resume", str(tmp_path / "r.pt")]) == 2
    assert "--config and --resume do not go together" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("stop, code, words", [
    ("ctrl-c", 130, "interrupted: stopped at once, no checkpoint written"),
    ("checkpoint", 130, "interrupted at step 5: checkpoint c.pt; continue with")])
def test_an_interrupted_run_exits_130(capsys, monkeypatch, stop, code, words):
    from training import train

    def stopped(cfg, *args, **kwargs):
        if stop == "ctrl-c":
            raise KeyboardInterrupt
        return {"interrupted": True, "global_step": 5, "checkpoint": "c.pt"}
    monkeypatch.setattr(train, "train", stopped)
    assert train.main(["--config", "configs/default.yaml"]) == code
    assert words in capsys.readouterr().err


def test_the_logged_hyperparameter_table_gives_the_curve_its_pairs():
    """plot_curve reads eval_pairs and final_eval_pairs from the rows the trainer logs."""
    from training.config import TrainConfig
    from training.plot_curve import _pairs_from_table
    from training.train import _hparams_table
    cfg = TrainConfig()
    assert _pairs_from_table(_hparams_table(cfg)) == (cfg.eval_pairs, cfg.final_eval_pairs)


def test_two_labels_files_may_share_half_the_smaller_one_s_decisions_not_more():
    """The copy check refuses *more* than half in common (a copy, a cut part); exactly half is
    two collections' shared openings at worst, and reads."""
    import numpy as np

    from training.distill_labels import LabelsError, _refuse_a_copy

    seen = {}
    _refuse_a_copy("a.npz", np.arange(8), seen)
    _refuse_a_copy("half.npz", np.array([0, 1, 2, 3, 20, 21, 22, 23]), seen)  # 4 of 8
    with pytest.raises(LabelsError, match="^more.npz: most of its decisions are those of a.npz"):
        _refuse_a_copy("more.npz", np.array([0, 1, 2, 3, 4, 30, 31, 32]), seen)  # 5 of 8
    assert list(seen) == ["a.npz", "half.npz"]


# ---------------------------------------------------------------- distill_collect (audit 2)
def test_a_teacher_that_is_not_a_search_is_refused_by_name():
    from training.distill_collect import make_teacher
    with pytest.raises(ValueError, match="teacher 'greedy' is not a search agent"):
        make_teacher("greedy")


def test_a_decision_with_one_legal_action_is_not_labelled():
    """Only real choices are labels (a forced move teaches the student nothing)."""
    from distill_stand_ins import Highest, tiny_student
    from training.distill_collect import collect
    labels = collect(tiny_student(), Highest(), 200, num_envs=8, seed=3, log=lambda *_: None)
    assert (labels["action_mask"].sum(axis=1) > 1).all()


def test_the_labels_of_fewer_decisions_than_the_actions_listed_are_cut():
    """A step interrupted after its actions were listed: its actions are dropped too."""
    import numpy as np
    from training.distill_collect import _joined
    obs, mask = np.zeros((3, 238), np.float32), np.ones((3, 113), bool)
    joined = _joined([obs], [mask], [4, 5, 6, 7], [np.zeros((3, 113), np.float32)],
                     [np.arange(3)], 2)
    assert {key: len(array) for key, array in joined.items()} == dict.fromkeys(joined, 2)
    assert joined["action"].tolist() == [4, 5]


def test_only_numbered_part_files_are_a_collection_s(tmp_path):
    from training.distill_collect import part_paths_there
    for name in ("s.labels.part2.npz", "s.labels.partx.npz", "s.labels.part.npz",
                 "s.labels.part10.npz"):
        (tmp_path / name).touch()
    assert part_paths_there(tmp_path / "s.labels.npz") == [
        tmp_path / "s.labels.part2.npz", tmp_path / "s.labels.part10.npz"]


def test_a_part_file_already_there_is_refused_before_any_worker_starts(tmp_path):
    from training.distill_collect import collect_in_pool
    (tmp_path / "s.labels.part1.npz").touch()
    with pytest.raises(ValueError, match=r"s\.labels\.part1\.npz is there already"):
        collect_in_pool(str(tmp_path / "none.pt"), "search:samples=2", 10, num_envs=4, seed=1,
                        workers=2, labels_path=tmp_path / "s.labels.npz")


def _span_settings(monkeypatch, tmp_path, init):
    import threading

    import torch
    from training import distill_collect
    stop = threading.Event()
    monkeypatch.setattr(distill_collect, "_SETTINGS", {
        "init": str(init), "teacher": "search:samples=2", "stop": stop, "seed": 1,
        "threads": torch.get_num_threads(), "labels_path": str(tmp_path / "s.labels.npz"),
        "save_every": None})
    return distill_collect, stop


def test_a_span_that_fails_stops_the_other_spans(monkeypatch, tmp_path):
    distill_collect, stop = _span_settings(monkeypatch, tmp_path, tmp_path / "nothing.pt")
    with pytest.raises((ValueError, OSError), match="nothing.pt"):
        distill_collect._collect_span(0, 0, 4, 10)
    assert stop.is_set()


def test_a_span_stopped_before_its_first_label_writes_no_part_file(monkeypatch, tmp_path):
    from distill_stand_ins import tiny_student
    from training.checkpoint import policy_entries, save_checkpoint
    init = save_checkpoint(tmp_path / "tiny.pt", policy_entries(tiny_student(), 1))
    distill_collect, stop = _span_settings(monkeypatch, tmp_path, init)
    stop.set()
    assert len(distill_collect._collect_span(0, 0, 4, 10)["action"]) == 0
    assert sorted(path.name for path in tmp_path.iterdir()) == ["tiny.pt"]


class _Draws:
    """A stand-in teacher whose values are its generators' draws."""

    def action_values_many(self, observations, masks, rngs):
        return [rng.random(int(mask.sum())).tolist() for mask, rng in zip(masks, rngs)]


def test_the_teacher_s_worlds_are_those_of_the_env_not_of_its_row():
    """Envs 2 and 3 stepped alone get the teacher's draws they get among envs 0 to 3."""
    import numpy as np
    from distill_stand_ins import tiny_student
    from training.distill_collect import collect
    quiet = lambda *_: None  # noqa: E731
    span = collect(tiny_student(), _Draws(), 10, num_envs=2, seed=4, log=quiet, first_env=2)
    whole = collect(tiny_student(), _Draws(), 60, num_envs=4, seed=4, log=quiet)
    rows = np.flatnonzero(whole["match"] >> 32 >= 2)[:10]
    np.testing.assert_array_equal(whole["observation"][rows], span["observation"])
    np.testing.assert_array_equal(whole["values"][rows], span["values"])


# ---------------------------------------------------------------- ship (audit 2)
def test_the_card_s_command_for_an_extra_result_plays_on_its_device():
    from types import SimpleNamespace
    from pathlib import Path
    from training.ship import _card
    args = SimpleNamespace(agents=[], pairs=1, search_pairs=0, search="search", seed=1,
                           arena="batched", extra_result=["r.json"], train_command="make train")
    row = {"opponent": "greedy", "pairs": 2, "seed": 3, "engine": "batched:cuda"}
    facts = {"config": {}, "global_step": 1, "wall_time": None}
    card = _card(args, [], {}, facts, None, [row], Path("p.pt"), 0)
    assert card["commands"][-1] == ("sevenrocks arena ckpt:p.pt greedy --pairs 2 --seed 3 "
                                    "--batched --device cuda --json > r.json")


def test_a_card_that_json_cannot_carry_is_refused_before_the_arena():
    """The check run before playing refuses NaN; only the arena's own numbers may be NaN."""
    from training.ship import _card_files
    with pytest.raises(ValueError, match="the model card cannot be written: Out of range float"):
        _card_files({"train_minutes": float("nan")})


@pytest.mark.parametrize("text", ["[1]", "[" * 100_000 + "]" * 100_000, "{"])
def test_a_model_card_that_cannot_be_read_holds_the_folder(tmp_path, text):
    from training.ship import _check_card_folder
    (tmp_path / "model_card.json").write_text(text)
    with pytest.raises(ValueError, match="cannot be read as a model card, not of a.pt"):
        _check_card_folder(tmp_path / "model_card.json", "a.pt")


# ---------------------------------------------------------------- labels_zip (audit 2)
def test_a_labels_file_is_read_blocking(tmp_path):
    """It is opened without waiting (a FIFO), then read as an ordinary, blocking file."""
    import os

    import numpy as np
    from training.labels_zip import open_labels
    np.savez(tmp_path / "l.npz", action=np.zeros(3, np.int64))
    with open_labels(tmp_path / "l.npz") as file:
        assert os.get_blocking(file.fileno())


# ---------------------------------------------------------------- distill_args (audit 2)
@pytest.mark.parametrize("field, top, changes", [
    ("num_envs", 1 << 16, {}), ("workers", 64, {"num_envs": 128}),
    ("learning_rate", 1.0, {})])
def test_a_setting_one_past_its_bound_is_refused(field, top, changes):
    Args(**changes, **{field: top})
    with pytest.raises(ValidationError, match=field):
        Args(**changes, **{field: top + (1 if isinstance(top, int) else 0.5)})


# ---------------------------------------------------------------- train (audit 2)
@pytest.mark.parametrize("out_of_time", [False, True])
def test_a_run_out_of_time_is_told_how_to_give_it_more(capsys, monkeypatch, out_of_time):
    from training import train
    monkeypatch.setattr(train, "train", lambda *_, **__: {
        "interrupted": True, "global_step": 5, "checkpoint": "c.pt", "out_of_time": out_of_time})
    assert train.main(["--config", "configs/default.yaml"]) == 130
    hint = "--set max_minutes=M (M above the minutes it ran, or 0)"
    assert (hint in capsys.readouterr().err) == out_of_time
