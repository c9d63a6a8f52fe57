"""A checkpoint that loads but fails later (its outputs overflow at a position the load check
did not try) as an opponent of the batched arena, the trainer and ``training.ship``: one line
naming the agent and what was kept, never a traceback from deep inside.  (The unbatched arena,
``play`` and the web server: ``test_arena_cli.py``, ``test_play_failures.py``,
``test_web_failures.py``.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from policy_files import save_policy_gone_non_finite

from sevenrocks_env.cli import main as sevenrocks
from training.ship import main as ship
from training.train import main as train

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "configs" / "smoke.yaml"

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def broken(tmp_path_factory) -> Path:
    """The smoke config's network shape (32 x 32, action features 2), so it also serves as
    ``init_from``."""
    return save_policy_gone_non_finite(tmp_path_factory.mktemp("hostile") / "broken.pt",
                                       hidden=(32, 32), action_features=2)


def one_line(capsys) -> str:
    """The error line (after any progress bar's lines), and no traceback."""
    err = capsys.readouterr().err.strip().splitlines()
    assert err and not any("Traceback" in line for line in err), err
    return err[-1]


def test_the_batched_arena_names_the_failing_agent(broken, capsys):
    """It said only "error: MaskedCategorical: the logits are not finite ..." (whose?)."""
    assert sevenrocks(["arena", f"ckpt:{broken}", "greedy", "--batched", "--pairs", "2",
                       "--no-progress"]) == 2
    line = one_line(capsys)
    assert line.startswith(f"sevenrocks arena: error: agent 'ckpt:{broken}' (side A) failed: "
                           "ValueError: MaskedCategorical: the logits are not finite"), line


def _train(tmp_path, *overrides) -> int:
    return train(["--config", str(SMOKE), "--set", f"log_dir={tmp_path / 'runs'}",
                  "--set", f"checkpoint_dir={tmp_path / 'ckpt'}", "--set", "progress=false",
                  *(item for override in overrides for item in ("--set", override))])


@pytest.mark.parametrize("engine, overrides, blamed", [
    ("batched", ["opponent_fraction=1.0"], "(a training opponent)"),
    ("python", ["opponent_fraction=1.0"], "at seat "),   # the driver's words
    ("batched", ["eval_agents=[{agent}]", "opponent_fraction=0"], "at seat "),   # evaluation
])
def test_training_stops_with_one_line_naming_the_opponent(tmp_path, capsys, broken, engine,
                                                           overrides, blamed):
    """A run died with a traceback from ``masked_categorical.py`` (or ``driver.AgentError``'s),
    after any number of hours."""
    agent = f"ckpt:{broken}"
    overrides = [item.format(agent=agent) for item in overrides]
    if "opponent_fraction=0" not in overrides:
        overrides.append(f"opponents=[{agent}]")
    assert _train(tmp_path, f"engine={engine}", *overrides) == 1
    line = one_line(capsys)
    assert line.startswith("error: training stopped at update 1 (step "), line
    assert f"agent '{agent}' {blamed}" in line and "not finite" in line
    assert line.endswith("no checkpoint was written (take the agent out of "
                         "opponents/eval_agents to go on)")


def test_a_starting_network_with_non_finite_outputs_is_blamed_not_the_settings(
        tmp_path, capsys, broken):
    """``init_from`` a broken file said "lower learning_rate or max_grad_norm"."""
    assert _train(tmp_path, f"init_from={broken}") == 1
    line = one_line(capsys)
    assert line.startswith("error: training diverged at update 1 (step 0): the policy's logits "
                           "are not finite"), line
    assert line.endswith(f"(the starting network, {broken}, gives unusable outputs)")


@pytest.mark.parametrize("engine", ["batched", "python"])
def test_a_starting_network_whose_legal_logits_reach_the_mask_is_one_line(tmp_path, capsys,
                                                                        engine):
    """A policy whose legal logits are -3e6 loads (above half the mask's -1e8), and
    ``init_temperature: 0.01`` takes them to -3e8, below the logit illegal actions get: the
    rollout drew illegal actions and died with a traceback from ``masked_categorical.py``."""
    import torch
    from policy_files import save_policy
    from sevenrocks_env.policy import PolicyNet, load_policy

    net = PolicyNet([32, 32], action_features=2)
    with torch.no_grad():
        net.policy_head.bias.fill_(-3e6)
    path = save_policy(tmp_path / "low.pt", net)
    load_policy(path)  # a file the policy loader accepts
    assert _train(tmp_path, f"engine={engine}", f"init_from={path}", "init_temperature=0.01",
                  "opponents=", "opponent_fraction=0") == 1
    line = one_line(capsys)
    assert line.startswith("error: training diverged at update 1 (step 0): the policy's logits "
                           "are not finite, or for legal actions at or below -5e+07,"), line
    assert line.endswith(f"(the starting network, {path}, gives unusable outputs)")


@pytest.mark.parametrize("arena, blamed", [("batched", "(side A)"), ("pool", "at seat ")])
def test_ship_names_the_users_file_and_writes_nothing(tmp_path, capsys, broken, arena, blamed):
    """A traceback, and with ``--arena pool`` the message named the staged copy
    (``.ship-XXXX/policy.pt``) instead of the file given."""
    out = tmp_path / "shipped" / "policy.pt"
    assert ship([str(broken), "--out", str(out), "--pairs", "2", "--agents", "greedy",
                 "--search-pairs", "0", "--arena", arena]) == 1
    line = one_line(capsys)
    assert line.startswith(f"error: agent 'ckpt:{broken}' {blamed}"), line
    assert ".ship-" not in line
    assert line.endswith(f"nothing was written ({out} and its card are as they were)")
    assert not out.parent.exists()
