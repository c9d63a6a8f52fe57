"""``training.ship`` refuses before playing or writing anything: bad run facts and weights,
a card that cannot be written, bad arena settings and numbers, an output that is its input or
not a file, a folder holding another policy's card, names that would break the card; and an
interrupted ship leaves the shipped files as they were.  What the card holds:
``test_ship_card.py`` (its format: ``test_model_card.py``)."""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")
from policy_files import MESSAGE_LIMIT, save_policy  # noqa: E402
from sevenrocks_env.policy import PolicyNet  # noqa: E402
from training.checkpoint import policy_entries, save_checkpoint  # noqa: E402


@pytest.mark.parametrize("changes, words", [
    ({"global_step": None}, "'global_step'"),
    ({"global_step": 2.5}, "'global_step'"),
    ({"wall_time": float("nan")}, "'wall_time'"),
    ({"wall_time": "long"}, "'wall_time'"),
    ({"config": [1, 2]}, "'config'"),
    ({"config": {"torch_threads": torch.zeros(2)}}, "'config'"),
    ({"config": {"x": "y" * 70_000}}, "'config'"),
    # text values go into the card's training command: a newline ended its code block, and
    # the file's own Markdown (rows of bars, links) followed
    ({"config": {"init_from": "x.pt\n```\n## Verified\n| vs greedy | 99% | met |"}},
     "'config' init_from: "),
    ({"config": {"init_from": "a`b.pt"}}, "'config' init_from: "),
    ({"config": {"hidden_sizes": [16], "opponents": ["a|b"], "opponent_fraction": 0.5}},
     "'config' opponents: 'a|b' must be one line"),
    ({"global_step": -1}, "'global_step'"),
    ({"global_step": 10 ** 13}, "'global_step'"),
    # weights are checked before --out is written (it was written, then the arena failed)
    ({"model": "nan"}, "non-finite weights"),
    ({"model": "int key"}, "must map parameter names to tensors"),
    # a tensor in model_config crashed the card's JSON after the whole arena had played
    ({"model_config": "tensor"}, "model_config has unknown keys 'extra'"),
])
def test_ship_refuses_bad_run_facts_before_playing_or_writing(tmp_path, capsys, changes, words):
    from training.ship import main as ship

    data = policy_entries(PolicyNet([16]), 0)
    if changes.get("global_step", 0) is None:
        del data["global_step"]
        changes = {}
    if changes.get("model") == "nan":
        changes = {"model": {k: v.clone().fill_(float("nan")) for k, v in data["model"].items()}}
    elif changes.get("model") == "int key":
        changes = {"model": {**data["model"], 0: torch.zeros(1)}}
    elif changes.get("model_config") == "tensor":
        changes = {"model_config": {**data["model_config"], "extra": torch.zeros(3)}}
    data.update(changes)
    source = save_checkpoint(tmp_path / "source.pt", data)
    out = tmp_path / "shipped" / "policy.pt"
    assert ship([str(source), "--out", str(out), "--pairs", "1", "--search-pairs", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and words in err and len(err) < MESSAGE_LIMIT, err[:300]
    assert not out.parent.exists()


def test_ship_writes_its_card_once_before_playing(tmp_path, capsys, monkeypatch):
    """Everything the card will hold is written out (to text) before the arena: a value JSON
    cannot carry is one line, exit 2, no arena played, nothing written."""
    from training import ship as module

    def played(*args, **kwargs):
        raise AssertionError("the arena played")
    monkeypatch.setattr(module, "_play", played)
    monkeypatch.setattr(module, "distill_facts", lambda data, path: {  # a check that let one by
        "teacher": torch.zeros(2), "labels": 1, "holdout_agreement": None})
    source = save_policy(tmp_path / "plain.pt")
    out = tmp_path / "shipped" / "policy.pt"
    assert module.main([str(source), "--out", str(out), "--pairs", "1", "--search-pairs", "0",
                        "--agents", "random"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the model card cannot be written") and err.count("\n") == 1
    assert not out.parent.exists()


@pytest.mark.parametrize("options,words", [
    (["--agents", "openspiel:ismcts:sims=10"], "no batched version.*; ship with --arena pool"),
    (["--agents", "search:samples=4,time_limit=1"], "time_limit has no batched version"),
    (["--agents", "bogus"], "unknown agent spec 'bogus'"),
    (["--workers", "2"], "--workers is an option of --arena pool"),
])
def test_ship_refuses_bad_arena_settings_before_writing(tmp_path, capsys, options, words):
    from training.ship import main as ship

    source = save_policy(tmp_path / "plain.pt")
    out = tmp_path / "shipped" / "policy.pt"
    assert ship([str(source), "--out", str(out), "--pairs", "1", "--search-pairs", "0",
                 *options]) == 2
    err = capsys.readouterr().err
    assert re.search(words, err) and err.count("\n") == 1, err[:300]
    assert not out.parent.exists()


@pytest.mark.parametrize("options, words", [
    (["--pairs", "0"], "--pairs: must be an int in"), (["--workers", "0"], "--workers: must be"),
    (["--workers", "65"], "--workers: must be an int in [1, 64]"),
    (["--search-pairs", "-5"], "--search-pairs: must be an int in"),  # was: no search row
    (["--seed", "-1"], "--seed: must be an int in"),
])
def test_ship_refuses_bad_numbers_as_usage_errors(tmp_path, capsys, options, words):
    from training.ship import main as ship

    source = save_policy(tmp_path / "plain.pt")
    with pytest.raises(SystemExit) as stop:
        ship([str(source), "--out", str(tmp_path / "shipped" / "policy.pt"), *options])
    assert stop.value.code == 2 and words in capsys.readouterr().err
    assert not (tmp_path / "shipped").exists()


def test_an_interrupted_ship_leaves_the_shipped_files_as_they_were(tmp_path, monkeypatch,
                                                                   capsys):
    """The policy was written before the arena and the cards after it: Ctrl-C in between left
    new weights under the old card.  Now all three are staged and replace the old ones last."""
    from training import ship as module

    source = save_policy(tmp_path / "plain.pt")
    out = tmp_path / "shipped" / "policy.pt"
    assert module.main([str(source), "--out", str(out), "--pairs", "1", "--search-pairs", "0",
                        "--agents", "random"]) == 0
    before = {path.name: path.read_bytes() for path in out.parent.iterdir()}
    other = save_policy(tmp_path / "other.pt", PolicyNet([8]))

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(module, "_play", interrupted)
    assert module.main([str(other), "--out", str(out), "--pairs", "1", "--search-pairs", "0",
                        "--agents", "random"]) == 130
    assert "nothing was written" in capsys.readouterr().err
    assert {path.name: path.read_bytes() for path in out.parent.iterdir()} == before
    # folders it made for a new --out are removed too, whatever stopped it
    assert module.main([str(other), "--out", str(tmp_path / "new" / "deeper" / "p.pt"),
                        "--pairs", "1", "--search-pairs", "0", "--agents", "random"]) == 130
    assert not (tmp_path / "new").exists()

    def worker_died(*args, **kwargs):
        raise RuntimeError("an arena worker died")
    monkeypatch.setattr(module, "_play", worker_died)
    with pytest.raises(RuntimeError, match="worker died"):
        module.main([str(other), "--out", str(tmp_path / "new" / "deeper" / "p.pt"),
                     "--pairs", "1", "--search-pairs", "0", "--agents", "random"])
    assert not (tmp_path / "new").exists()


def test_ship_refuses_a_card_path_that_cannot_be_written_before_playing(tmp_path, capsys):
    from training.ship import main as ship

    source = save_policy(tmp_path / "plain.pt")
    out = tmp_path / "shipped" / "policy.pt"
    (out.parent / "model_card.json").mkdir(parents=True)  # was: a traceback after the arena
    assert ship([str(source), "--out", str(out), "--pairs", "1", "--search-pairs", "0"]) == 2
    assert "model_card.json: exists and is not a regular file" in capsys.readouterr().err
    assert not out.exists()


def test_ship_refuses_an_output_that_is_its_input_or_not_a_file(tmp_path, capsys):
    """Shipping over the training checkpoint made it policy-only (no longer resumable); a
    device or a folder as --out was replaced by a plain file, or failed after the arena."""
    from training.ship import main as ship

    source = save_policy(tmp_path / "plain.pt")
    before = source.read_bytes()
    for out, words in ((source, "is the input"), (tmp_path, "not a regular file"),
                       (tmp_path / "plain.pt" / "x.pt", "is not a folder")):
        assert ship([str(source), "--out", str(out), "--pairs", "1", "--search-pairs", "0"]) == 2
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1, err[:300]
    assert source.read_bytes() == before and not (tmp_path / "model_card.json").exists()


def test_ship_refuses_a_folder_holding_another_policy_s_card(tmp_path, capsys):
    """One folder has one card: shipping other.pt beside the shipped policy replaced its card
    with other.pt's, silently.  Shipping the same file name again replaces it, as before."""
    from training.ship import main as ship

    source = save_policy(tmp_path / "plain.pt")
    folder = tmp_path / "shipped"
    args = ["--pairs", "1", "--search-pairs", "0", "--agents", "random"]
    assert ship([str(source), "--out", str(folder / "a.pt"), *args]) == 0
    card = (folder / "model_card.json").read_text()
    capsys.readouterr()
    assert ship([str(source), "--out", str(folder / "b.pt"), *args]) == 2
    err = capsys.readouterr().err
    assert "is the card of 'a.pt', not of b.pt" in err and err.count("\n") == 1, err
    assert (folder / "model_card.json").read_text() == card and not (folder / "b.pt").exists()
    assert ship([str(source), "--out", str(folder / "a.pt"), *args]) == 0
    # the training command goes into the card's Markdown: one line, no backquote
    for command in ("make train\n```\n| injected | row |", "make `train`", "x" * 4097):
        assert ship([str(source), "--out", str(folder / "a.pt"), *args,
                     "--train-command", command]) == 2
        assert "--train-command must be one line" in capsys.readouterr().err


def test_a_config_text_value_the_command_cannot_hold_ships_with_train_command(tmp_path, capsys):
    """A run's ``init_from`` with a backtick is refused where the card's training command is
    written from the config; given ``--train-command`` it stays in the card's JSON only."""
    from training.ship import main as ship

    data = policy_entries(PolicyNet([16]), 0)
    data["config"] = {"hidden_sizes": [16], "init_from": "runs/a`b.pt"}
    source = save_checkpoint(tmp_path / "source.pt", data)
    args = [str(source), "--out", str(tmp_path / "shipped" / "p.pt"), "--pairs", "1",
            "--search-pairs", "0", "--agents", "random"]
    assert ship(args) == 2
    assert "(or give the command: --train-command)" in capsys.readouterr().err
    assert ship([*args, "--train-command", "python -m training.train --config my.yaml"]) == 0


@pytest.mark.parametrize("agent", ["a|b=random", "x`y=random", "mine=ckpt:a|b.pt",
                                   "mine=ckpt:a`b.pt", "n" * 201 + "=random"])
def test_an_opponent_name_or_spec_that_would_break_the_card_is_refused(agent):
    from training.ship import _check_card_agents

    with pytest.raises(ValueError, match="its name and spec must each be|display name .* a name is "
                       "letters"):
        _check_card_agents([agent])
    _check_card_agents(["mine=random", "search"])
