"""``training.distill``: search's choices as labels, a student that learns them, safe label files.

* collecting labels: every label is the teacher's choice for exactly that observation and mask
  (asked again, one decision at a time), every labelled decision is a real choice;
* training moves the student toward the labels (agreement rises on held-out labels of a rule
  it can learn);
* the output is a policy ``load_policy`` reads; whole matches are held out.

More of the collection (saves, seeds, hold-out, Ctrl-C): ``test_distill_collect.py``; the labels
file's own checks: ``test_distill_labels_checks.py``, several files: ``_several``.
"""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest
from pydantic import ValidationError

torch = pytest.importorskip("torch")

from sevenrocks_env.policy import (CheckpointError, PolicyNet, load_policy,  # noqa: E402
                                    read_checkpoint)
from distill_stand_ins import Highest, tiny_student  # noqa: E402

from training import distill, distill_collect, distill_labels  # noqa: E402
from training.checkpoint import policy_entries, save_checkpoint  # noqa: E402
from sevenrocks_env.arena_pool import WorkerDied  # noqa: E402
from sevenrocks_env.cli import help_text  # noqa: E402


@pytest.fixture(scope="module")
def teacher():
    return distill.make_teacher("search:samples=4")


@pytest.fixture(scope="module")
def collected(teacher):
    return distill.collect(tiny_student(), teacher, 60, num_envs=8, seed=3, log=lambda *_: None)


def test_labels_are_the_teachers_choices_on_real_decisions(collected, teacher):
    obs, mask, action = collected["observation"], collected["action_mask"], collected["action"]
    assert len(action) == len(obs) == len(mask) == 60
    assert (mask.sum(1) >= 2).all(), "a forced move was labelled"
    assert mask[np.arange(60), action].all(), "a label is illegal"
    # each label is the teacher's best action by its own values (legal ones)
    best = np.where(mask, collected["values"], -np.inf).max(1)
    np.testing.assert_array_equal(collected["values"][np.arange(60), action], best)
    # each label is the teacher's own choice for that observation (its worlds come from the
    # decision's generator, so asking again with the same generator gives the same answer)
    again = distill.collect(tiny_student(), teacher, 60, num_envs=8, seed=3,
                            log=lambda *_: None)
    np.testing.assert_array_equal(again["action"], action)
    np.testing.assert_array_equal(again["observation"], obs)


def test_only_search_agents_can_teach():
    with pytest.raises(ValueError, match="not a search agent"):
        distill.make_teacher("greedy")


@pytest.fixture(scope="module")
def rule_labels():
    """600 labels of distinct decisions, each the highest legal action."""
    return distill.collect(tiny_student(), Highest(), 600, num_envs=16, seed=4,
                           log=lambda *_: None)


def test_training_moves_the_student_toward_the_labels(rule_labels):
    labels = rule_labels
    torch.manual_seed(1)
    student = PolicyNet((32, 32), action_features=0)
    obs, mask = torch.from_numpy(labels["observation"]), torch.from_numpy(labels["action_mask"])
    action = torch.from_numpy(labels["action"])
    before = distill.agreement_on(student, obs, mask, action)
    init = copy.deepcopy(student)
    args = distill.Args(epochs=15, batch_size=64, learning_rate=3e-3, seed=0)
    result = distill.train_student(student, labels, args, log=lambda *_: None)
    assert 60 <= result["holdout"] < 200, "whole matches holding a tenth of the labels"
    assert result["holdout_agreement"] > before + 0.3, (before, result)
    # the held-out decisions the init got wrong: the same split, recomputed
    test, train = distill.holdout_split(labels["match"], len(action),
                                        torch.Generator().manual_seed(args.seed))
    differs = distill.modes_on(init, obs[test], mask[test]) != action[test]
    agrees = distill.modes_on(student, obs[test], mask[test]) == action[test]
    assert 0 < int(differs.sum()) < len(test)
    assert result["holdout_agreement_where_init_differed"] == \
        pytest.approx(agrees[differs].float().mean().item())
    assert result["holdout_agreement_where_init_differed"] > 0.3
    assert result["holdout_agreement_where_init_agreed"] == \
        pytest.approx(agrees[~differs].float().mean().item())
    # and the training decisions the init got wrong, after training
    differs = distill.modes_on(init, obs[train], mask[train]) != action[train]
    agrees = distill.modes_on(student, obs[train], mask[train]) == action[train]
    assert 0 < int(differs.sum()) < len(train)
    assert result["train_agreement_where_init_differed"] == \
        pytest.approx(agrees[differs].float().mean().item())


def test_the_differing_decisions_are_split_by_preference():
    preference = torch.tensor([0.5, 2.0, 3.0, 7.0, 20.0, 40.0, 1.0])
    differs = torch.tensor([True, True, True, True, True, True, False])
    rows = distill.buckets(preference, differs)
    assert list(rows) == ["init agreed", "<= 2", "2-5", "5-10", "> 10"]
    assert {name: r.nonzero().flatten().tolist() for name, r in rows.items()} == {
        "init agreed": [6], "<= 2": [0, 1], "2-5": [2], "5-10": [3], "> 10": [4, 5]}


def test_preference_is_the_teacher_s_value_of_its_action_minus_the_other_s():
    values = torch.tensor([[5.0, 1.0, 0.0], [2.0, 9.0, 3.0]])
    prefers = distill.preference(values, torch.tensor([0, 1]), torch.tensor([1, 2]))
    assert prefers.tolist() == [4.0, 6.0]


def test_run_from_a_labels_file_writes_a_loadable_policy(tmp_path, collected):
    torch.manual_seed(2)
    init_data = policy_entries(PolicyNet((32, 32)), 7)
    init_data.update(config={"seed": 9}, wall_time=61.5,  # the init's run, carried to the card
                     resumes=[{"step": 3, "set": {"learning_rate": [0.1, 0.2]}}])
    init = save_checkpoint(tmp_path / "init.pt", init_data)
    labels = distill.save_labels(tmp_path / "l.npz", collected, "search:samples=4")
    out = tmp_path / "student.pt"
    args = distill.Args(init=str(init), labels=str(labels), epochs=2, out=str(out),
                        log_dir=str(tmp_path / "runs"), threads=3)
    threads, seen = torch.get_num_threads(), []
    info = distill.run(args, log=lambda *_: seen.append(torch.get_num_threads()))
    assert set(seen) == {3}, "the run's torch threads"
    assert torch.get_num_threads() == threads, "threads not restored after the run"
    assert info["labels"] == 60 and info["teacher"] == "search:samples=4"
    agent = load_policy(out)
    first = read_checkpoint(init)["model"]
    changed = [k for k, v in agent.model.state_dict().items() if not torch.equal(v, first[k])]
    assert changed, "training left every weight as it was"
    student = read_checkpoint(out)
    assert (student["global_step"], student["config"], student["wall_time"]) == (7, {"seed": 9}, 61.5)
    assert student["resumes"] == init_data["resumes"]  # (the card's command: other weights)
    # the recorded arguments name the labels' teacher, not the unused --teacher default
    assert student["distill"]["args"]["teacher"] == "search:samples=4"
    # and not the collection's options it never used (their defaults)
    assert not {"decisions", "num_envs", "workers"} & set(student["distill"]["args"])
    assert student["distill"]["args"]["epochs"] == 2
    # the init pinned by its file's hash (``shipped`` names other weights once a policy ships)
    import hashlib
    digest = hashlib.sha256(init.read_bytes() + b"\0").hexdigest()  # files_fingerprint's
    assert student["distill"]["args"]["init"] == f"{init} (network sha256 {digest[:16]})"
    assert "earlier" not in student["distill"]  # the init was not distilled
    # the logs are named after --out by default, and a second run there is refused before
    # any work: two runs' curves mixed in one folder at the same steps
    assert list((tmp_path / "runs" / "student").glob("events.out.tfevents.*"))
    again = distill.Args(init=str(init), labels=str(labels), epochs=1,
                         out=str(tmp_path / "other" / "student.pt"), log_dir=str(tmp_path / "runs"))
    with pytest.raises(ValueError, match=re.escape(
            f"{tmp_path / 'runs' / 'student'} holds the TensorBoard logs of an earlier run (the "
            "curves would mix): give another --run-name, or move that folder away")):
        distill.run(again, log=lambda *_: None)
    assert not (tmp_path / "other").exists()
    again.run_name = "second"
    distill.run(again, log=lambda *_: None)
    assert list((tmp_path / "runs" / "second").glob("events.out.tfevents.*"))


def test_a_student_of_a_student_records_every_round_oldest_first(tmp_path, collected):
    """A second round's card said only 'then fine-tuned toward <the last teacher>': the init's
    own distillation was dropped."""
    first = {"teacher": "search:samples=8", "labels": 5_000, "holdout_agreement": float("nan"),
             "earlier": [{"teacher": "search:samples=2", "labels": 900,
                          "holdout_agreement": 0.5}]}
    init_data = policy_entries(PolicyNet((32, 32)), 7) | {"distill": first}
    init = save_checkpoint(tmp_path / "init.pt", init_data)
    labels = distill.save_labels(tmp_path / "l.npz", collected, "search:samples=4")
    args = distill.Args(init=str(init), labels=str(labels), epochs=1,
                        out=str(tmp_path / "student.pt"), log_dir=str(tmp_path / "runs"))
    distill.run(args, log=lambda *_: None)
    record = read_checkpoint(tmp_path / "student.pt")["distill"]
    assert record["teacher"] == "search:samples=4" and record["earlier"] == [
        {"teacher": "search:samples=2", "labels": 900, "holdout_agreement": 0.5},
        {"teacher": "search:samples=8", "labels": 5_000, "holdout_agreement": None}]
    # a damaged record in the init is refused before any work
    init_data["distill"] = {**first, "earlier": "lots"}
    save_checkpoint(init, init_data)
    with pytest.raises(CheckpointError, match="'distill' 'earlier' must be a list"):
        distill.run(args, log=lambda *_: pytest.fail("started work"))


def test_an_output_that_is_an_input_is_refused_before_any_work(tmp_path, collected):
    """--out over the labels file (or the init) silently replaced it with the student."""
    init = save_checkpoint(tmp_path / "init.pt", policy_entries(PolicyNet((32, 32)), 7))
    labels = distill.save_labels(tmp_path / "l.npz", collected, "search:samples=4")
    args = distill.Args(init=str(init), labels=str(labels), epochs=1, out=str(init),
                        log_dir=str(tmp_path / "runs"))
    with pytest.raises(ValueError, match="is the input"):
        distill.run(args, log=lambda *_: pytest.fail("started work"))
    with pytest.raises(ValidationError, match="not an .npz"):  # (an .npz is never --out)
        distill.Args(init=str(init), labels=str(labels), epochs=1, out=str(labels))
    assert distill.load_labels_files(str(labels))[1] == "search:samples=4"


def test_a_collection_refuses_what_it_would_destroy_or_fail_on_later(tmp_path):
    """Checked before collecting: --out over the teacher's own network (it was overwritten),
    an existing labels file (a rerun replaced hours of labels), and a log folder that cannot
    be made (it failed after the collection, with a traceback)."""
    teacher = save_checkpoint(tmp_path / "teacher.pt", policy_entries(PolicyNet((32, 32)), 1))
    init = save_checkpoint(tmp_path / "init.pt", policy_entries(PolicyNet((32, 32)), 7))
    (tmp_path / "file").write_text("")
    (tmp_path / "kept.labels.npz").write_bytes(b"labels of an earlier run")
    for out, log_dir, words in (
            (teacher, tmp_path / "runs", "is the input"),
            (tmp_path / "kept.pt", tmp_path / "runs", "kept.labels.npz is there already"),
            (tmp_path / "student.pt", tmp_path / "file", "--log-dir: output")):
        args = distill.Args(init=str(init), teacher=f"search:policy={teacher},samples=2",
                            decisions=8, num_envs=4, epochs=1, out=str(out),
                            log_dir=str(log_dir))
        with pytest.raises(ValueError, match=words):
            distill.run(args, log=lambda *_: pytest.fail("started work"))
    assert (tmp_path / "kept.labels.npz").read_bytes() == b"labels of an earlier run"


def test_an_existing_labels_file_is_never_the_output(tmp_path, collected, capsys):
    """--out over a labels file that the run does not read replaced hours of labels with the
    student (security.md: --out is never a labels file)."""
    kept = distill.save_labels(tmp_path / "kept.labels.npz", collected, "search:samples=4")
    other = distill.save_labels(tmp_path / "other.labels.npz", collected, "search:samples=4")
    before = kept.read_bytes()
    with pytest.raises(SystemExit) as exit_:
        distill.main(["--init", "/nonexistent", "--labels", str(other), "--out", str(kept)])
    assert exit_.value.code == 2 and "error: --out: must name the policy checkpoint" in (
        capsys.readouterr().err)
    assert kept.read_bytes() == before


def test_a_one_worker_collection_refuses_a_stopped_collection_s_part_files(tmp_path):
    """A killed --workers run leaves <stem>.labels.part<i>.npz; a rerun with one worker
    collected beside them (with --workers 2 it is refused), leaving another collection's parts
    beside its labels (training.md: a new collection refuses to start over them)."""
    init = save_checkpoint(tmp_path / "init.pt", policy_entries(PolicyNet((32, 32)), 7))
    for name in ("s.labels.part1.npz", "s.labels.part0.npz"):
        (tmp_path / name).write_bytes(b"labels of a stopped collection")
    (tmp_path / "s.labels.partial.npz").write_bytes(b"not a part file")
    args = distill.Args(init=str(init), teacher="search:samples=2", decisions=8, num_envs=4,
                        epochs=1, out=str(tmp_path / "s.pt"), log_dir=str(tmp_path / "runs"))
    with pytest.raises(ValueError, match="s.labels.part0.npz is there already"):
        distill.run(args, log=lambda *_: pytest.fail("started work"))
    assert not (tmp_path / "s.labels.npz").exists()
    assert distill_collect.part_paths_there(tmp_path / "s.labels.npz") == [
        tmp_path / "s.labels.part0.npz", tmp_path / "s.labels.part1.npz"]
    assert distill_collect.part_paths_there(tmp_path / "missing" / "s.labels.npz") == []


@pytest.mark.parametrize("error, code, words", [
    (KeyboardInterrupt(), 130, "interrupted: no policy was written; labels saved so far are "
                               "beside --out (s.labels.npz"),
    (WorkerDied("a collection worker died"), 1, "error: a collection worker died"),
])
def test_the_command_line_ends_an_interrupted_or_failed_run_in_one_line(
        monkeypatch, capsys, error, code, words):
    def stopped(args, log=print):
        raise error
    monkeypatch.setattr(distill, "run", stopped)
    assert distill.main(["--out", "s.pt"]) == code
    err = capsys.readouterr().err
    assert err.startswith(words.split(" (")[0]) and words in err and err.count("\n") == 1


@pytest.mark.parametrize("facts, words", [
    ({"global_step": None}, "'global_step' must be an int"),
    ({"global_step": 1.7}, "'global_step' must be an int"),
    ({"wall_time": float("inf")}, "'wall_time' must be a number of seconds"),
    ({"config": "x" * 100_000}, "'config' must be a dict"),
    ({"resumes": None}, "'resumes' must be a list of"),
])
def test_the_init_s_run_facts_are_checked_before_any_work(tmp_path, facts, words):
    """The init's run is copied into the student's file: checked at the start, not after
    hours of collecting (here the labels were never even collected: a bad file is refused)."""
    init = save_checkpoint(tmp_path / "init.pt", policy_entries(PolicyNet((32, 32)), 7) | facts)
    args = distill.Args(init=str(init), decisions=10**6, out=str(tmp_path / "s.pt"),
                        log_dir=str(tmp_path / "runs"))
    with pytest.raises(CheckpointError, match=words):
        distill.run(args, log=lambda *_: pytest.fail("started work"))


@pytest.mark.parametrize("field,value,words", [
    ("threads", 0, "greater than or equal to 1"), ("threads", 257, "less than or equal to 256"),
    ("decisions", 0, "greater than or equal to 1"), ("num_envs", 1 << 17, "less than or equal"),
    ("epochs", -1, "greater than or equal to 0"), ("batch_size", 0, "greater than or equal"),
    ("learning_rate", float("inf"), "finite"), ("learning_rate", 0.0, "greater than 0"),
    ("seed", -1, "greater than or equal to 0"), ("run_name", "../up", "plain folder name"),
    ("teacher", "", "at least 1 character"), ("init", "a\nb", "one line"),
    ("teacher", "search:samples=4\tx", "printable"), ("run_name", "", "must not be empty"),
    ("teacher", "search:policy=a|b", "no ` or |"), ("teacher", "s" * 4070, "at most 4062 char"),
    ("temperature", float("nan"), "finite"), ("decisions", True, "integer"),
    ("out", "kept.labels.npz", "not an .npz"), ("out", "s.labels.part0.NPZ", "not an .npz"),
])
def test_settings_out_of_range_are_refused_when_made_naming_the_field(field, value, words):
    with pytest.raises(ValidationError, match=f"(?s){field}.*{words}"):
        distill.Args(**{field: value})
    args = distill.Args()
    with pytest.raises(ValidationError, match=words):  # and when changed afterwards
        setattr(args, field, value)


@pytest.mark.parametrize("argv,line", [
    (["--threads", "0"], "error: --threads: Input should be greater than or equal to 1, got 0"),
    (["--learning-rate", "nan"], "error: --learning-rate: must be a finite number, got nan"),
    (["--run-name", "a/b"], "error: --run-name: must be a plain folder name"),
])
def test_the_command_line_names_the_option_in_one_line(argv, line, capsys):
    with pytest.raises(SystemExit) as exit_:
        distill.main(argv + ["--init", "/nonexistent", "--out", "/nonexistent/never-written.pt"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(line) and err.count("\n") == 1


def test_every_setting_has_its_help_on_the_command_line(capsys):
    with pytest.raises(SystemExit):
        distill.main(["--help"])
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps the lines
    for name, field in distill.Args.__pydantic_fields__.items():
        assert field.description, name
        option = "--" + name.replace("_", "-")
        shown = "WIDTH" if name == "hidden_sizes" else name.upper()
        several = f" [{shown} ...]" if name in ("labels", "hidden_sizes") else ""  # a.npz b.npz
        described = " ".join(help_text(field.description).split())  # (no ``code`` marks)
        assert f"{option} {shown}{several} {described}" in out


def test_the_teachers_values_are_its_choice_and_files_without_them_still_load(tmp_path,
                                                                               collected, teacher):
    values, mask = collected["values"], collected["action_mask"]
    for row in range(len(values)):
        legal = np.flatnonzero(mask[row])
        best = legal[np.argmax(values[row][legal])]  # argmax: the first (lowest) of ties
        assert collected["action"][row] == best
    old = tmp_path / "old.npz"  # a file saved before values were kept
    np.savez(old, observation=collected["observation"], action_mask=mask,
             action=collected["action"], teacher=np.array("t"))
    labels, _ = distill_labels.load_labels(old)
    assert labels["values"] is None
    with pytest.raises(distill.LabelsError, match="needs the teacher's values"):
        distill.train_student(tiny_student(), labels, distill.Args(temperature=5.0),
                              log=lambda *_: None)


def test_soft_targets_follow_the_teachers_values():
    values = torch.tensor([[10.0, 5.0, 0.0, 99.0], [3.0, 3.0, 0.0, 0.0]])
    mask = torch.tensor([[True, True, True, False], [True, True, False, False]])
    targets = distill.soft_targets(values, mask, temperature=5.0)
    assert torch.allclose(targets.sum(1), torch.ones(2))
    assert targets[0, 3] == 0 and (targets[1, 2:] == 0).all(), "an illegal action got weight"
    assert torch.allclose(targets[0, 0] / targets[0, 1], torch.tensor(np.e))
    assert torch.allclose(targets[1, :2], torch.tensor([0.5, 0.5]))


def test_soft_target_training_moves_the_student_toward_the_preferred_actions(rule_labels):
    # values that prefer the highest legal action by 20 points over the next: the soft student
    # must come to agree with it, as the hard one does
    labels = dict(rule_labels)
    labels["values"] = np.where(labels["action_mask"], np.arange(113) * 20.0, 0.0
                                ).astype(np.float32)
    torch.manual_seed(1)
    student = PolicyNet((32, 32), action_features=0)
    obs, mask = torch.from_numpy(labels["observation"]), torch.from_numpy(labels["action_mask"])
    before = distill.agreement_on(student, obs, mask, torch.from_numpy(labels["action"]))
    args = distill.Args(epochs=15, batch_size=64, learning_rate=3e-3, seed=0, temperature=5.0)
    result = distill.train_student(student, labels, args, log=lambda *_: None)
    assert result["holdout_agreement"] > before + 0.3, (before, result)


def test_soft_targets_stay_finite_at_the_smallest_temperature_and_refuse_smaller():
    values = torch.tensor([[5.0, -2.0, 5.0, 0.0]])
    mask = torch.tensor([[True, True, True, False]])
    targets = distill.soft_targets(values, mask, temperature=distill.MIN_TEMPERATURE)
    assert torch.isfinite(targets).all()
    assert torch.allclose(targets, torch.tensor([[0.5, 0.0, 0.5, 0.0]]))  # a tie shares
    with pytest.raises(ValueError, match="temperature must be in"):
        distill.soft_targets(values, mask, temperature=1e-45)
    with pytest.raises(ValueError, match="temperature must be 0"):
        distill.Args(temperature=1e-9)


def test_agreement_is_counted_in_batches_over_every_label(collected):
    """More labels than one batch (4096): the same fraction as one forward pass over all."""
    from sevenrocks_env.policy import MaskedCategorical
    torch.manual_seed(0)
    model = PolicyNet([16])
    repeat = 4096 * 2 // len(collected["action"]) + 1
    obs = torch.from_numpy(np.tile(collected["observation"], (repeat, 1)))
    mask = torch.from_numpy(np.tile(collected["action_mask"], (repeat, 1)))
    action = torch.from_numpy(np.tile(collected["action"], repeat))
    action[::3] = MaskedCategorical(model(obs, mask)[0], mask).sample()[::3].detach()
    with torch.no_grad():
        whole = (MaskedCategorical(model(obs, mask)[0], mask).mode() == action).float().mean()
    assert len(action) > 8192
    assert distill.agreement_on(model, obs, mask, action) == pytest.approx(whole.item())


