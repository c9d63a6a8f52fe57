"""``python -m training.distill``'s options: the collection's options with ``--labels`` are a
usage error (nothing is collected, so they would have no effect), and several labels files are
given as separate values, so a path may hold a comma (the older ``a.npz,b.npz`` still reads)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from pydantic import ValidationError  # noqa: E402

from distill_stand_ins import Highest, tiny_student  # noqa: E402

from sevenrocks_env.policy import PolicyNet, load_policy  # noqa: E402
from training import distill, distill_labels  # noqa: E402
from training.checkpoint import policy_entries, save_checkpoint  # noqa: E402


@pytest.fixture
def runs(monkeypatch):
    """The ``Args`` each ``distill.run`` got (none is run)."""
    seen = []
    monkeypatch.setattr(distill, "run", lambda args, log=print: seen.append(args))
    return seen


@pytest.mark.parametrize("given", [
    ["--workers", "2"], ["--num-envs", "8", "--workers", "1"],
    ["--decisions", "12000"],  # the default value, given: still refused
    ["--teacher", "search:samples=4"],
])
def test_collection_options_with_labels_are_a_usage_error(runs, capsys, given):
    with pytest.raises(SystemExit) as exit_:
        distill.main(["--labels", "l.npz", *given, "--out", "s.pt"])
    assert exit_.value.code == 2 and runs == []
    err = capsys.readouterr().err
    for option in (word for word in given if word.startswith("--")):
        assert option in err
    assert "error:" in err and "with --labels nothing is collected" in err
    distill.main([*given, "--out", "s.pt"])  # without --labels they are the collection's
    distill.main(["--labels", "l.npz", "--seed", "3", "--threads", "2", "--out", "s.pt"])
    assert [args.labels for args in runs] == [None, ["l.npz"]]


@pytest.mark.parametrize("given", [{"workers": 4}, {"num_envs": 8, "workers": 1},
                                   {"decisions": 12_000}, {"teacher": "search:samples=4"}])
def test_collection_options_with_labels_are_refused_by_args_too(runs, capsys, given):
    """``Args(labels=..., workers=4)`` was accepted and the workers ignored; it is refused with
    the command line's message (one check, in ``Args``), on assignment too."""
    with pytest.raises(ValidationError) as refused:
        distill.Args(labels="l.npz", **given)
    message = refused.value.errors()[0]["msg"].removeprefix("Value error, ")
    options = [f"--{name.replace('_', '-')}" for name in given]
    with pytest.raises(SystemExit):
        distill.main(["--labels", "l.npz", *(f"{option}={value}" for option, value
                                             in zip(options, given.values()))])
    assert capsys.readouterr().err.endswith(f"error: {message}\n")
    assert message.startswith(", ".join(options))
    assert "with --labels nothing is collected" in message
    with pytest.raises(ValidationError, match="with --labels nothing is collected"):
        distill.Args("shipped", "search:samples=4", 100, "l.npz")  # given by position
    args = distill.Args(labels="l.npz", seed=3, threads=2)
    with pytest.raises(ValidationError, match="--workers only sets how labels are collected"):
        args.workers = 4
    assert args.workers == 1
    with pytest.raises(ValidationError, match="--num-envs only sets"):
        distill.Args(num_envs=4).labels = ["l.npz"]
    args.epochs = 2  # other options, and the collection's left at their defaults, as before
    assert distill.Args(labels=None, workers=4).workers == 4 and runs == []


def test_several_labels_files_are_separate_values(runs):
    distill.main(["--labels", "a.npz", "b, 2.npz", "--labels", "c.npz", "--out", "s.pt"])
    distill.main(["--labels", "a.npz,b.npz", "--out", "s.pt"])  # the older form, split later
    assert [args.labels for args in runs] == [["a.npz", "b, 2.npz", "c.npz"], ["a.npz,b.npz"]]
    assert distill.Args(labels="one.npz").labels == ["one.npz"]


def test_a_run_trains_on_a_labels_file_whose_path_holds_a_comma(tmp_path):
    init = save_checkpoint(tmp_path / "init.pt", policy_entries(PolicyNet((32, 32)), 7))
    labels = distill.collect(tiny_student(), Highest(), 40, num_envs=8, seed=3,
                             log=lambda *_: None)
    path = distill.save_labels(tmp_path / "seed 3, 40 labels.npz", labels, "search:samples=4")
    out = tmp_path / "student.pt"
    assert distill.main(["--init", str(init), "--labels", str(path), "--epochs", "1",
                         "--out", str(out), "--log-dir", str(tmp_path / "runs")]) == 0
    load_policy(out)


def test_a_run_resolves_its_labels_names_once(tmp_path, monkeypatch):
    """``--labels "a.npz,b.npz"`` was resolved (which values name a file, which are split on
    their commas) by ``_run`` and again when the files were read: the files checked against
    ``--out`` and logged could differ from those read (a file made in between)."""
    init = save_checkpoint(tmp_path / "init.pt", policy_entries(PolicyNet((32, 32)), 7))
    paths = [distill.save_labels(tmp_path / f"{seed}.npz", distill.collect(
        tiny_student(), Highest(), 30, num_envs=4, seed=seed, log=lambda *_: None), "t")
        for seed in (3, 4)]
    resolved = []
    names = distill_labels.labels_file_names
    for module in (distill, distill_labels):
        monkeypatch.setattr(module, "labels_file_names",
                            lambda values: resolved.append(values) or names(values))
    args = distill.Args(init=str(init), labels=",".join(map(str, paths)), epochs=1,
                        out=str(tmp_path / "student.pt"), log_dir=str(tmp_path / "runs"))
    assert distill.run(args, log=lambda *_: None)["labels"] == 60
    assert resolved == [[",".join(map(str, paths))]]


def test_help_says_each_option_s_default(capsys):
    """The defaults lived only in the Args dataclass: --help showed none."""
    from training.distill import Args, main
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for name, value in (("num_envs", 64), ("epochs", 6), ("seed", 1), ("init", "shipped")):
        assert getattr(Args(), name) == value
        assert f"(default: {value})" in text, name


@pytest.mark.parametrize("given, words", [
    ({"workers": 5, "num_envs": 4}, "--workers 5 is more than --num-envs 4"),
    ({"labels": "a.npz", "epochs": 0}, "with --labels there is nothing to do"),
    ({"hidden_sizes": [64, 64], "epochs": 0}, "--epochs 0 trains no student"),
    ({"temperature": 5e-4}, "temperature must be 0 \\(hard labels\\) or in"),
])
def test_settings_that_leave_nothing_to_do_or_cannot_work_are_refused_when_made(given, words):
    with pytest.raises(ValidationError, match=words):
        distill.Args(**given)
    distill.Args(workers=4, num_envs=4, temperature=1e-3)  # the bounds themselves are settings
