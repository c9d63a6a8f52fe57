"""``benchmarks/distill_gaps.py``: the teacher's choices a student plays, by the teacher's
preference over the init's choice (a smoke run on a small collection; the buckets:
``tests/test_distill.py``)."""

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import distill_gaps  # noqa: E402
from distill_stand_ins import Highest  # noqa: E402
from training import distill  # noqa: E402
from training.distill_labels import save_labels  # noqa: E402


def test_a_smoke_run_prints_the_init_and_each_student(tmp_path, capsys):
    from sevenrocks_env.policy import load_policy

    labels = distill.collect(load_policy("shipped").model, Highest(), 300, num_envs=8, seed=3,
                             log=lambda *_: None)
    path = save_labels(tmp_path / "l.npz", labels, "search:samples=1", seed=3)
    assert distill_gaps.main(["--labels", str(path), "--init", "shipped",
                              "--students", "shipped"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{len(labels['action']):,} labels of teacher search:samples=1")
    header, init, student = out[1], out[3], out[4]
    counts = [int(cell.rsplit("(", 1)[1].rstrip(") ").replace(",", ""))
              for cell in header.split("|")[2:-1]]
    assert sum(counts) == len(labels["action"]) and counts[0] > 0 and sum(counts[1:]) > 0
    # the init plays the teacher's choice exactly where it agreed (an empty bucket: nan)
    assert [cell.strip() for cell in init.split("|")[2:-1]] == ["1.000"] + [
        "0.000" if count else "nan" for count in counts[1:]]
    assert student.split("|")[2:] == init.split("|")[2:]  # the same network: the same shares


def test_labels_without_values_are_one_line_of_error(tmp_path, capsys):
    labels = {"observation": np.zeros((1, 238), np.float32),
              "action_mask": np.eye(113, dtype=bool)[[0]] | np.eye(113, dtype=bool)[[1]],
              "action": np.array([1])}
    path = save_labels(tmp_path / "l.npz", labels, "search:samples=1")
    assert distill_gaps.main(["--labels", str(path), "--init", "shipped"]) == 2
    assert "error:" in capsys.readouterr().err


def test_each_decision_lands_in_the_bucket_of_the_teacher_s_preference(tmp_path):
    """Teacher labels built so that a third of the decisions are the init's choice, a third
    prefer another action by 3 points and a third by 20: "init agreed", "2-5" and "> 10"; a
    second network's shares in each bucket are its agreement on exactly those decisions."""
    from sevenrocks_env.policy import load_policy
    from distill_stand_ins import tiny_student
    from training.checkpoint import policy_entries, save_checkpoint

    init = load_policy("shipped").model
    labels = distill.collect(init, Highest(), 120, num_envs=8, seed=5, log=lambda *_: None)
    obs, mask = torch.from_numpy(labels["observation"]), torch.from_numpy(labels["action_mask"])
    modes = distill.modes_on(init, obs, mask).numpy()
    action, values = modes.copy(), np.zeros(labels["values"].shape, np.float32)
    assert (labels["action_mask"].sum(axis=1) > 1).all()  # (only real choices are labelled)
    bucket = {name: np.zeros(len(modes), bool)
              for name in ("init agreed", "<= 2", "2-5", "5-10", "> 10")}
    for row in range(len(modes)):
        name = ("init agreed", "2-5", "> 10")[row % 3]
        bucket[name][row] = True
        if name != "init agreed":
            legal = np.flatnonzero(labels["action_mask"][row])
            action[row] = legal[legal != modes[row]][0]
        values[row, action[row]] = {"init agreed": 1.0, "2-5": 3.0, "> 10": 20.0}[name]
    student = save_checkpoint(tmp_path / "student.pt", policy_entries(tiny_student(), 0))
    lines = distill_gaps.table({**labels, "action": action, "values": values}, "shipped",
                               [str(student)])
    assert lines[0] == "| policy | " + " | ".join(
        f"{name} ({int(rows.sum()):,})" for name, rows in bucket.items()) + " |"
    agrees = distill.modes_on(tiny_student(), obs, mask).numpy() == action
    assert lines[2].split("|")[2:-1] == [" 1.000 ", " nan ", " 0.000 ", " nan ", " 0.000 "]
    assert lines[3].split("|")[2:-1] == [
        f" {agrees[rows].mean():.3f} " if rows.any() else " nan " for rows in bucket.values()]
