"""Checkpoint review fixes: ``training.ship`` checks the run's ``config`` before it goes into the
model card; values read from a checkpoint are quoted (``checks.shown``) in messages; a file
that cannot be opened says why; ``--resume`` says what it found and which pieces disagree;
clearer messages for a bare state_dict, a hostile pickle, another format version and an agent
spec given where a path belongs."""

from __future__ import annotations

import builtins
import errno
import os
from unittest import mock

import pytest

torch = pytest.importorskip("torch")
from policy_files import MESSAGE_LIMIT  # noqa: E402
from sevenrocks_env.policy import (CHECKPOINT_FORMAT, CheckpointError, PolicyNet,  # noqa: E402
                                   build_model, read_checkpoint)
from training.checkpoint import policy_entries, save_checkpoint  # noqa: E402
from training.config import TrainConfig  # noqa: E402


def one_line(text: str) -> bool:
    return "\n" not in text.strip() and "\x1b" not in text and len(text) < MESSAGE_LIMIT


# -- 1. training.ship: the run's config --------------------------------------------------------

SHIP_REFUSALS = [
    ({"critic": "\x1b[31m<b>x</b>|", "opponents": ["a|b"], "opponent_fraction": 1.0}, "critic"),
    ({"opponents": ["a|b"], "opponent_fraction": 1.0}, "opponents: 'a|b'"),
    ({"opponents": ["greedy", "\ngreedy"]}, "opponents: '\\ngreedy'"),
    ({"opponents": "x`y"}, "opponents: 'x`y'"),
    ({"hidden_sizes": [1, 2]}, "hidden_sizes [1, 2] disagrees with the weights' model_config "
                               "hidden_sizes [16]"),
    ({"action_features": 1}, "action_features 1 disagrees with the weights' model_config "
                             "action_features 2"),
    ({"action_scorer": "mlp"}, "action_scorer 'mlp' disagrees"),
    ({"seed": -1}, "seed"),
    ({"not_a_field": 1}, "unknown key 'not_a_field'"),
]


@pytest.mark.parametrize("config, words", SHIP_REFUSALS)
def test_ship_refuses_a_config_the_card_cannot_hold(tmp_path, capsys, monkeypatch, config,
                                                    words):
    from training import ship

    def played(*args, **kwargs):
        raise AssertionError("the arena played")
    monkeypatch.setattr(ship, "_play", played)
    data = dict(policy_entries(PolicyNet([16], action_features=2), 0), config=config)
    source = save_checkpoint(tmp_path / "source.pt", data)
    out = tmp_path / "shipped" / "p.pt"
    code = ship.main([str(source), "--out", str(out), "--pairs", "2", "--agents", "random",
                      "--search-pairs", "0"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(f"error: {source}: 'config'") and words in err and one_line(err), err
    assert not out.parent.exists()


def _data(hidden, config, **extra):
    return dict(policy_entries(PolicyNet(hidden, action_features=2), 0), config=config, **extra)


def test_ship_takes_a_valid_config_and_a_distilled_policy_wider_than_its_run():
    from training.ship import _check_config

    for config in ({}, {"seed": 3}, {"critic": "oracle", "opponents": ["greedy", "past"],
                                     "opponent_fraction": 1.0, "hidden_sizes": [16]},
                   TrainConfig(hidden_sizes=[16]).as_dict(), {"opponents": "greedy"},
                   # a file of the machine that trained it: not read (nor needed) to ship
                   {"opponents": ["ckpt:elsewhere/latest.pt"], "opponent_fraction": 1.0}):
        _check_config(_data([16], config), "p.pt", distilled=False)
    _check_config(_data([32, 16], {"hidden_sizes": [16, 16]}), "p.pt", distilled=True)
    for hidden, distilled in (([32, 16], False), ([8, 16], True), ([32], True)):
        with pytest.raises(CheckpointError, match="'config' hidden_sizes"):
            _check_config(_data(hidden, {"hidden_sizes": [16, 16]}), "p.pt", distilled)


def test_ship_card_names_the_opponents_of_a_single_spec_config():
    from training.model_card import trained_by
    assert trained_by({"opponents": "greedy", "opponent_fraction": 1.0}) == \
        "PPO policy trained against `greedy` only"


# -- 2. a weight name from the file is quoted ---------------------------------------------------

def test_an_unexpected_weight_name_is_quoted(tmp_path):
    data = policy_entries(PolicyNet([16]), 0)
    data["model"]["\x1b[31mevil\nname"] = torch.zeros(1)
    path = save_checkpoint(tmp_path / "odd.pt", data)
    with pytest.raises(CheckpointError) as caught:
        build_model(read_checkpoint(path), path)
    assert "'\\x1b[31mevil\\nname'" in str(caught.value) and one_line(str(caught.value))


# -- 3. a file that cannot be opened ------------------------------------------------------------

@pytest.mark.parametrize("error, words", [
    (PermissionError(errno.EACCES, "Permission denied"), "cannot be read: Permission denied"),
    (OSError(errno.EIO, "Input/output error"), "cannot be read: Input/output error"),
])
def test_a_file_that_cannot_be_opened_says_why(tmp_path, error, words):
    path = save_checkpoint(tmp_path / "p.pt", policy_entries(PolicyNet([16]), 0))
    real_open = builtins.open

    def refusing(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and os.fspath(file) == str(path):
            raise error
        return real_open(file, *args, **kwargs)
    with mock.patch("builtins.open", refusing), pytest.raises(CheckpointError) as caught:
        read_checkpoint(path)
    assert str(caught.value) == f"{path} {words}"


# -- 4. --resume: what was found, and which pieces disagree -------------------------------------

def test_a_resume_weight_says_the_shape_and_dtype_it_found():
    from training.resume import check_weights
    cases = [(torch.zeros(3, dtype=torch.float64), "got torch.float64 (3,)"),
             (torch.zeros(2, 3), "got torch.float32 (2, 3)"),
             (torch.tensor([1.0, float("nan")]), "got torch.float32 (2,), with non-finite"),
             ([1.0, 2.0], "got list")]
    for tensor, words in cases:
        with pytest.raises(CheckpointError) as caught:
            check_weights({"w": tensor}, {"w": (2,)}, "r.pt", "model")
        message = str(caught.value)
        assert message.startswith("r.pt: resume piece 'model' w must be dense, finite float32 "
                                  f"(2,), {words}") and one_line(message), message


def test_a_resume_optimizer_moment_says_what_it_found():
    from training.resume import check_optimizer
    parameter = torch.zeros(2)
    state = {"state": {0: {"step": torch.tensor(1.0), "exp_avg": torch.zeros(5),
                           "exp_avg_sq": torch.zeros(2)}},
             "param_groups": [{"params": [0], "lr": 1e-3, "eps": 1e-8, "weight_decay": 0}]}
    with pytest.raises(CheckpointError, match=r"exp_avg must be dense, finite float32 \(2,\), "
                                              r"got torch.float32 \(5,\)"):
        check_optimizer(state, [parameter], "r.pt")


def _resume_data(**changes) -> dict:
    config = TrainConfig(num_matches=4, num_steps=8, total_steps=64, hidden_sizes=[16],
                         eval_agents=["random"]).as_dict()
    config.update(changes)
    return {"config": config, "model_config": {"hidden_sizes": [16], "action_features": 2},
            "engine": {"learner": [0, 1, 2, 3]}, "update": 1}


@pytest.mark.parametrize("changes, words", [
    ({"hidden_sizes": [1, 2]}, "hidden_sizes [1, 2] disagrees with the weights' model_config "
                               "hidden_sizes [16]"),
    ({"action_features": 3}, "action_features 3 disagrees with the weights' model_config "
                             "action_features 2"),
    ({"num_matches": 8}, "num_matches 8 disagrees with the 4 matches of its engine state"),
])
def test_resume_says_first_which_pieces_of_the_file_disagree(changes, words):
    from training.resume import resumed_config
    assert resumed_config(_resume_data(), {}, "r.pt").num_matches == 4  # the file as written
    with pytest.raises(CheckpointError) as caught:
        resumed_config(_resume_data(**changes), {}, "r.pt")
    assert str(caught.value) == f"r.pt: resume piece 'config' {words}"


# -- 5. messages --------------------------------------------------------------------------------

def test_a_bare_state_dict_is_named_as_one(tmp_path):
    path = tmp_path / "sd.pt"
    torch.save(PolicyNet([16]).state_dict(), path)
    with pytest.raises(CheckpointError, match="looks like a bare state_dict .*training.ship"):
        read_checkpoint(path)


class _Hostile:
    def __reduce__(self):
        return (os.system, ("true",))


def test_a_hostile_pickle_names_the_blocked_global(tmp_path):
    path = tmp_path / "evil.pt"
    torch.save({"format": CHECKPOINT_FORMAT, "x": _Hostile()}, path)
    with pytest.raises(CheckpointError) as caught:
        read_checkpoint(path)
    message = str(caught.value)
    assert f"blocked global '{os.system.__module__}.system'" in message and one_line(message)


def test_another_format_version_is_named_as_such(tmp_path):
    data = dict(policy_entries(PolicyNet([16]), 0), format="sevenrocks-ppo/0")
    path = save_checkpoint(tmp_path / "old.pt", data)
    with pytest.raises(CheckpointError) as caught:
        read_checkpoint(path)
    assert str(caught.value) == (f"{path} was made by another version of sevenrocks (format "
                                 "'sevenrocks-ppo/0'): not a sevenrocks policy checkpoint this "
                                 f"version reads ({CHECKPOINT_FORMAT!r})")


def test_an_agent_spec_given_as_a_policy_path_gets_a_hint():
    from sevenrocks_env.agents import make_agent
    with pytest.raises(ValueError) as caught:
        make_agent("search:policy=ckpt:shipped")
    message = str(caught.value)
    assert "no such file: ckpt:shipped" in message and \
        "a path or 'shipped' is expected here, not an agent spec" in message
