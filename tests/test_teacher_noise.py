"""``benchmarks/teacher_noise.py``: a collection's matches played again and labelled a second
time -- with the collection's own worlds the file's labels come back exactly; with others the
noisy search teacher changes some; bad input is one line of error."""

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import teacher_noise  # noqa: E402
from distill_stand_ins import Highest, tiny_student  # noqa: E402
from training import distill_collect  # noqa: E402
from training.checkpoint import policy_entries, save_checkpoint  # noqa: E402
from training.distill_labels import load_labels, save_labels  # noqa: E402

TEACHER = "search:samples=2"


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    """A labels file of 4 envs (the shipped policy as the student) and its student's name."""
    from sevenrocks_env.policy import load_policy
    labels = distill_collect.collect(load_policy("shipped").model, distill_collect.make_teacher(
        TEACHER), 120, num_envs=4, seed=3, log=lambda *_: None)
    path = save_labels(tmp_path_factory.mktemp("c") / "l.npz", labels, TEACHER, seed=3)
    return path, "shipped"


def again(path, student, salt, envs=range(4)):
    from sevenrocks_env.policy import load_policy
    labels, _ = load_labels(path)
    return labels, teacher_noise.label_again(labels, load_policy(student).model.eval(),
                                             distill_collect.make_teacher(TEACHER), envs, salt,
                                             log=lambda *_: None)


def test_the_collections_own_worlds_give_its_labels_back(collection):
    labels, second = again(*collection, distill_collect.TEACHER_SALT)
    assert sorted(second["index"].tolist()) == list(range(len(labels["action"])))
    np.testing.assert_array_equal(second["action"], labels["action"][second["index"]])
    np.testing.assert_array_equal(second["values"], labels["values"][second["index"]])


def test_other_worlds_label_the_same_decisions_and_change_some_choices(collection):
    labels, second = again(*collection, teacher_noise.AGAIN_SALT)
    assert sorted(second["index"].tolist()) == list(range(len(labels["action"])))
    changed = second["action"] != labels["action"][second["index"]]
    assert 0 < changed.sum() < len(changed)  # two worlds a decision: noisy (65 % here)
    legal = labels["action_mask"][second["index"], second["action"]]
    assert legal.all()


def test_the_mean_of_both_labellings_is_a_labels_file(collection, tmp_path, capsys):
    """``--first-env 2 --envs 2 --out``: envs 2 and 3's decisions, their values the mean of
    both labellings, their action its best, the collection's seed and match ids kept."""
    path, student = collection
    labels, second = again(path, student, teacher_noise.AGAIN_SALT, envs=range(2, 4))
    rows = second["index"]
    assert set((labels["match"][rows] >> 32).tolist()) == {2, 3}
    assert len(rows) == int(((labels["match"] >> 32) >= 2).sum())
    out = tmp_path / "mean.npz"
    assert teacher_noise.main(["--labels", str(path), "--init", student, "--teacher", TEACHER,
                               "--first-env", "2", "--envs", "2", "--out", str(out)]) == 0
    assert f"the mean of both labellings saved to {out}" in capsys.readouterr().out
    mean, teacher = load_labels(out)
    assert teacher == f"{TEACHER} (mean of 2 labellings)" and int(mean["seed"]) == 3
    np.testing.assert_array_equal(mean["match"], labels["match"][rows])
    np.testing.assert_array_equal(mean["observation"], labels["observation"][rows])
    np.testing.assert_allclose(mean["values"], (labels["values"][rows] + second["values"]) / 2)
    best = np.where(mean["action_mask"], mean["values"], -np.inf).argmax(1)
    np.testing.assert_array_equal(mean["action"], best)


def test_the_script_prints_both_tables(collection, tmp_path, capsys):
    """The first two envs' decisions only, labelled again with the same worlds."""
    path, student = collection
    labels, _ = load_labels(path)
    first_two = int(((labels["match"] >> 32) < 2).sum())
    assert 0 < first_two < len(labels["action"])
    other = save_checkpoint(tmp_path / "tiny.pt", policy_entries(tiny_student(), 1))
    assert teacher_noise.main(["--labels", str(path), "--init", student, "--teacher", TEACHER,
                               "--envs", "2", "--same-worlds", "--students", str(other)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith(f"{first_two} decisions of 2 envs labelled again by "
                               "search:samples=2")
    rows = {line.split("|")[1].strip(): line.split("|")[2:-1] for line in lines
            if line.startswith("| ") and "---" not in line}
    assert rows["init agreed"][1:] == [" 1.000 ", " 1.000 "]
    differing = int(rows["all differing"][0].replace(",", ""))
    assert differing > 0 and rows["all differing"][1:] == [" 1.000 ", " 0.000 "]
    assert int(rows["init agreed"][0].replace(",", "")) + differing == first_two
    assert "noise (sd of their difference / sqrt 2) 0.00 points" in out
    # the second table: the init agrees where it agreed and plays none of the deviations (with
    # the same worlds no deviation is the first labelling's only); another policy differs
    agreed = int(rows["init agreed"][0].replace(",", ""))
    assert rows[student] == [f" {agreed / first_two:.3f} ", " 0.000 ", " - "]  # (no decision)
    agrees, deviations, only_first = rows[str(other)]
    assert 0 < float(agrees) < 1 and 0 <= float(deviations) <= 1 and only_first == " - "


@pytest.mark.parametrize("change, message", [
    ({"--init": "STUDENT"}, "the student must be the collection's"),
    ({"--teacher": "search:samples=3"}, "the labels' teacher is search:samples=2, not"),
    ({"--envs": "5"}, "--first-env 0 --envs 5: the collection has 4 envs"),
    ({"--first-env": "3", "--envs": "2"}, "--first-env 3 --envs 2: the collection has 4 envs"),
])
def test_bad_input_is_one_line_of_error(collection, tmp_path, capsys, change, message):
    path, student = collection
    other = save_checkpoint(tmp_path / "tiny.pt", policy_entries(tiny_student(), 1))
    options = {"--labels": str(path), "--init": student, "--teacher": TEACHER, "--envs": "4"}
    options.update({key: str(other) if value == "STUDENT" else value
                    for key, value in change.items()})
    assert teacher_noise.main([part for item in options.items() for part in item]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and len(err.splitlines()) == 1


def test_labels_without_a_seed_cannot_be_played_again(collection, tmp_path, capsys):
    labels, _ = load_labels(collection[0])
    path = save_labels(tmp_path / "n.npz", {k: v for k, v in labels.items() if k != "seed"},
                       TEACHER)
    assert teacher_noise.main(["--labels", str(path), "--init", "shipped",
                               "--teacher", TEACHER]) == 2
    assert "has no 'seed'" in capsys.readouterr().err


def test_the_search_with_inference_is_labelled_again_with_each_envs_round_history(tmp_path):
    """The teacher that reads the round's plays gets them in the matches played again: with the
    collection's own worlds its labels come back."""
    spec = "search:policy=shipped,samples=3,inference=1"
    labels = distill_collect.collect(tiny_student(), distill_collect.make_teacher(spec), 40,
                                     num_envs=4, seed=8, log=lambda *_: None)
    path = save_labels(tmp_path / "i.npz", labels, spec, seed=8)
    labels, _ = load_labels(path)
    second = teacher_noise.label_again(labels, tiny_student(), distill_collect.make_teacher(spec),
                                       range(4), distill_collect.TEACHER_SALT,
                                       log=lambda *_: None)
    assert sorted(second["index"].tolist()) == list(range(40))
    np.testing.assert_array_equal(second["action"], labels["action"][second["index"]])
    np.testing.assert_allclose(second["values"], labels["values"][second["index"]], atol=1e-3)


def test_a_span_of_envs_without_labels_is_an_error(collection, tmp_path, capsys):
    labels, _ = load_labels(collection[0])
    later = (labels["match"] >> 32) >= 2
    path = save_labels(tmp_path / "p.npz", {key: value[later] for key, value in labels.items()
                                            if key != "seed"}, TEACHER, seed=3)
    assert teacher_noise.main(["--labels", str(path), "--init", "shipped", "--teacher", TEACHER,
                               "--envs", "2"]) == 2
    assert "the labels hold no decision of envs 0 to 1" in capsys.readouterr().err


@pytest.mark.parametrize("envs", [range(0), range(0, 4, 2), range(-1, 3),
                                  range(distill_collect.MAX_ENVS - 1,
                                        distill_collect.MAX_ENVS + 1)])
def test_envs_that_are_not_a_span_of_a_collection_are_refused(envs):
    with pytest.raises(ValueError, match="a collection's envs are 0 to 65,535, not "):
        next(distill_collect.labelled_turns({}, tiny_student(), envs))


def test_the_last_env_of_a_collection_is_a_span():
    last = range(distill_collect.MAX_ENVS - 1, distill_collect.MAX_ENVS)
    nothing = {"match": np.zeros(0, np.int64), "seed": np.int64(1)}
    assert list(distill_collect.labelled_turns(nothing, tiny_student(), last)) == []


@torch.inference_mode()
def test_played_again_each_label_comes_back_once_and_one_changed_is_refused():
    """Every step yielded holds labels; all the file's come back, each once, env by env; a
    label whose observation or mask alone is not the decision played again is refused."""
    labels = distill_collect.collect(tiny_student(), Highest(), 40, num_envs=4, seed=5,
                                     log=lambda *_: None) | {"seed": np.int64(5)}
    rows = []
    for env in range(4):  # one env at a time: many of its steps are forced moves
        for _, envs_now, label_rows in distill_collect.labelled_turns(labels, tiny_student(),
                                                                      range(env, env + 1)):
            assert len(label_rows) == len(envs_now) > 0
            rows += label_rows
    assert sorted(rows) == list(range(40))
    for key in ("observation", "action_mask"):
        changed = labels | {key: labels[key].copy()}
        changed[key][17, 0] = not changed[key][17, 0] if key == "action_mask" else 5.0
        with pytest.raises(ValueError, match="are not those of the labels"):
            list(distill_collect.labelled_turns(changed, tiny_student(), range(4)))
