"""The exploitability test (issue 11): batched policy-network opponents and the script's smoke run.

* :func:`training.opponents.policy_actions` picks exactly what ``PolicyAgent.act`` picks for a
  deterministic policy, row by row, on positions of real games;
* the batched training engine plays a ``ckpt:`` opponent through that one forward per step
  (never ``act``), and every move it played is ``act``'s;
* ``benchmarks/best_response.py --smoke`` trains, plays the arena and prints its table row.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sevenrocks_env.agents import make_agent  # noqa: E402
from sevenrocks_env.batched import VectorEnv  # noqa: E402
from sevenrocks_env.policy import PolicyAgent, PolicyNet, load_policy  # noqa: E402
from sevenrocks_env.ratings import wilson_interval  # noqa: E402
from training import opponents  # noqa: E402
from training.batched_rollout import BatchedSelfPlayEngine  # noqa: E402
from training.opponents import OpponentPool, policy_actions  # noqa: E402
from training.checkpoint import policy_entries  # noqa: E402
from training.seats import RolloutBuffer  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import best_response  # noqa: E402

SHIPPED = "ckpt:shipped"


def _real_choices(venv: VectorEnv):
    """(observations, masks) of the matches whose seat on turn has more than one legal action."""
    mask = venv.action_mask
    real = mask.sum(1) > 1
    return venv.observation[real], mask[real]


def test_batched_policy_actions_are_act_for_a_deterministic_policy():
    agent = make_agent(SHIPPED)
    assert isinstance(agent, PolicyAgent) and agent.deterministic
    venv = VectorEnv(32, target=60, validate=False)
    venv.reset(seed=3)
    rng = torch.Generator().manual_seed(4)
    compared = 0
    for _ in range(60):
        obs, mask = _real_choices(venv)
        if len(obs):
            batched = policy_actions(agent, obs, mask)
            one_by_one = [agent.act(o, m) for o, m in zip(obs.numpy(), mask.numpy())]
            assert batched.tolist() == one_by_one
            compared += len(obs)
        legal = venv.action_mask.to(torch.float32)   # move on by a random legal action
        venv.step(torch.multinomial(legal, 1, generator=rng).squeeze(1))
    assert compared > 500


def test_batched_policy_actions_sample_legal_moves_from_the_agents_generator():
    torch.manual_seed(0)
    agent = PolicyAgent(PolicyNet([16]), deterministic=False)
    venv = VectorEnv(64, validate=False)
    venv.reset(seed=1)
    obs, mask = _real_choices(venv)
    agent.seed(7)
    first = policy_actions(agent, obs, mask)
    assert mask[torch.arange(len(first)), first].all()
    agent.seed(7)
    assert torch.equal(policy_actions(agent, obs, mask), first)
    agent.seed(8)
    draws = torch.stack([policy_actions(agent, obs, mask) for _ in range(20)])
    assert (draws != draws[0]).any()   # it samples: an untrained policy is far from one-hot


def test_training_engine_plays_a_ckpt_opponent_in_batches_as_act_would(monkeypatch):
    model = PolicyNet([32]).eval()
    pool = OpponentPool([SHIPPED], model)
    frozen = pool._fixed[SHIPPED]
    calls = []

    def recorded(agent, obs, mask):
        actions = policy_actions(agent, obs, mask)
        calls.append((agent, obs.clone(), mask.clone(), actions.clone()))
        return actions

    def no_act(*args, **kwargs):
        raise AssertionError("a policy-network opponent must not go through act()")

    monkeypatch.setattr(opponents, "policy_actions", recorded)
    monkeypatch.setattr(frozen, "act", no_act)
    engine = BatchedSelfPlayEngine(16, seed=2, target=60, opponent_fraction=1.0,
                                   opponent_pool=pool)
    assert all(name == SHIPPED for name in engine.opponent_names)
    assert (engine.learner.sum(1) == 2).all()   # every match: learner team vs frozen team
    buffer = RolloutBuffer(16 * 8)
    engine.collect(model, buffer, 8)
    assert calls and max(len(actions) for *_, actions in calls) > 1   # batched, not per row
    for agent, obs, mask, actions in calls:
        assert agent is frozen
        assert actions.tolist() == [PolicyAgent.act(frozen, o, m)
                                    for o, m in zip(obs.numpy(), mask.numpy())]


def test_smoke_budget_runs_end_to_end_and_prints_a_row(tmp_path, capsys):
    code = best_response.main(["--opponent", SHIPPED, "--smoke", "--steps", "256", "--seed", "3",
                               "--pairs", "2", "--deal-seed", "11", "--out", str(tmp_path),
                               "--set", "max_rounds=7"])
    out = capsys.readouterr().out
    assert code == 0, out
    header, _, row = out.strip().splitlines()
    assert header.startswith("| frozen opponent |")
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:6] == [SHIPPED, "scratch (--smoke, target 40) (--set max_rounds=7)", "256", "3",
                         "2", "11"]
    [saved] = tmp_path.glob("br_ckpt_shipped_256_s3_*.json")  # named with its --set too
    record = json.loads(saved.read_text())
    arena = record["arena"]
    assert arena["pairs"] == 2 and arena["matches"] == 4 and arena["seed"] == 11
    assert arena["ci95"] == pytest.approx(list(wilson_interval(arena["win_rate"], 2)))
    assert arena["spec_b"] == SHIPPED and arena["agent_a"] == "best_response"
    assert cells[6].startswith(f"{100 * arena['win_rate']:.1f} %")
    checkpoint = Path(record["checkpoint"])
    assert checkpoint.is_file() and checkpoint.parent.parent == tmp_path / "ckpt"
    assert record["target"] == 40 and record["steps"] == 256   # the smoke sizes were used
    # measured at the settings it trained at (the arena cut matches at its own 100 rounds)
    assert record["max_rounds"] == arena["max_rounds"] == 7


def test_training_config_pits_every_match_against_the_frozen_spec(tmp_path):
    cfg = best_response.best_response_config("heuristic", 1000, 5, tmp_path,
                                             overrides=["num_matches=4", "num_steps=8"])
    assert cfg.opponents == ["heuristic"] and cfg.opponent_fraction == 1.0
    assert cfg.total_steps == 1000 and cfg.max_minutes == 0 and cfg.engine == "batched"
    assert cfg.num_matches == 4 and cfg.hidden_sizes == [256, 256]   # default.yaml otherwise
    assert Path(cfg.checkpoint_dir) == tmp_path / "ckpt"
    with pytest.raises(best_response.ConfigError, match="--set seed is given twice"):
        best_response.best_response_config("heuristic", 1000, 5, tmp_path,
                                           overrides=["seed=1", "num_steps=8", "seed=2"])


@pytest.mark.parametrize("opponent, message", [
    ("past", "frozen opponent must be an agent spec"),
    ("nosuchagent", "opponents"),
    ("ckpt:/no/such/file.pt", "cannot read checkpoint"),
])
def test_bad_opponent_is_a_clear_error(opponent, message, tmp_path, capsys):
    code = best_response.main(["--opponent", opponent, "--smoke", "--steps", "128",
                               "--out", str(tmp_path)])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "ckpt").exists()   # refused before training


def test_arena_settings_are_checked_before_training_and_a_rerun_says_what_to_do(tmp_path,
                                                                                capsys):
    """--workers 65 was refused after the training, whose folder then blocked the rerun with a
    hint to use --resume, which this script does not have."""
    args = ["--opponent", "greedy", "--smoke", "--steps", "128", "--pairs", "1",
            "--out", str(tmp_path)]
    with pytest.raises(SystemExit) as stop:
        best_response.main([*args, "--workers", "65"])
    assert stop.value.code == 2
    assert "--workers: must be an int in [1, 64]" in capsys.readouterr().err
    assert not (tmp_path / "ckpt").exists() and not (tmp_path / "runs").exists()
    assert best_response.main(args) == 0
    capsys.readouterr()
    assert best_response.main(args) == 2
    err = capsys.readouterr().err
    assert "trained already" in err and "--force" in err and "--resume" not in err


def test_variants_of_one_best_response_get_their_own_run_folders():
    plain = best_response.run_name("ckpt:shipped", 1000, 1, "shipped")
    sharpened = best_response.run_name("ckpt:shipped", 1000, 1, "shipped",
                                       ["init_temperature=0.25"])
    assert plain == "br_ckpt_shipped_1000_s1_from_shipped"
    assert sharpened.startswith(plain + "_set") and len(sharpened) == len(plain) + 12
    assert sharpened != best_response.run_name("ckpt:shipped", 1000, 1, "shipped",
                                                ["init_temperature=0.5"])
    assert sharpened == best_response.run_name("ckpt:shipped", 1000, 1, "shipped",
                                               ["init_temperature=0.25"])


def test_bad_numbers_are_refused_by_the_parser(tmp_path):
    with pytest.raises(SystemExit):
        best_response.main(["--pairs", "0", "--out", str(tmp_path)])
    assert not np.any([p.exists() for p in (tmp_path / "ckpt", tmp_path / "runs")])


def test_a_warm_started_best_response_starts_from_the_given_policy(tmp_path, capsys):
    """``--init``: the run starts from that policy's weights (learning rate 0: it ends there too)."""
    small = PolicyNet([32, 32], action_features=2)
    start = tmp_path / "start.pt"
    torch.save(policy_entries(small, 0), start)
    code = best_response.main(["--opponent", "heuristic", "--init", str(start), "--smoke",
                               "--steps", "256", "--seed", "3", "--pairs", "1", "--out",
                               str(tmp_path), "--set", "learning_rate=0"])
    out = capsys.readouterr().out
    assert code == 0, out
    cells = [c.strip() for c in out.strip().splitlines()[-1].strip("|").split("|")]
    assert cells[:3] == ["heuristic", f"{start} (--smoke, target 40) (--set learning_rate=0)", "256"]
    record = json.loads(next(tmp_path.glob("br_heuristic_256_s3_from_*_set*.json")).read_text())
    assert record["overrides"] == ["learning_rate=0"]
    trained = load_policy(record["checkpoint"]).model.state_dict()
    assert all(torch.equal(trained[k], v) for k, v in small.state_dict().items()
               if not k.startswith("value_head."))


def test_a_smoke_run_warm_starts_from_the_shipped_network(tmp_path, capsys):
    """``--smoke --init shipped`` was refused: the smoke config's 32 x 32 network is not the
    shipped one; the smoke run now takes the network of the policy it starts from."""
    code = best_response.main(["--opponent", "greedy", "--init", "shipped", "--smoke", "--steps",
                               "128", "--seed", "3", "--pairs", "1", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    record = json.loads(next(tmp_path.glob("br_greedy_128_s3_from_*.json")).read_text())
    assert load_policy(record["checkpoint"]).model.hidden_sizes == [256, 256]


def test_a_smoke_run_takes_the_whole_network_of_its_start(tmp_path, capsys):
    """Not only the widths: an older feature version (1) is kept too."""
    start = tmp_path / "v1.pt"
    torch.save(policy_entries(PolicyNet([24], action_features=1), 0), start)
    code = best_response.main(["--opponent", "greedy", "--init", str(start), "--smoke",
                               "--steps", "128", "--seed", "3", "--pairs", "1", "--out",
                               str(tmp_path)])
    assert code == 0, capsys.readouterr().out
    record = json.loads(next(tmp_path.glob("br_greedy_128_s3_from_*.json")).read_text())
    config = load_policy(record["checkpoint"]).model.model_config()
    assert (config["hidden_sizes"], config["action_features"]) == ([24], 1)


@pytest.mark.parametrize("override, option", [("seed=5", "--seed"), ("init_from=shipped", "--init"),
                                              ("opponents=[greedy]", "--opponent"),
                                              ("total_steps=512", "--steps")])
def test_set_of_a_field_the_script_sets_itself_is_refused(override, option, tmp_path, capsys):
    """``--set seed=5`` trained with seed 5 while the record and row said seed 1 (and
    ``--set init_from=...``: "scratch"; ``--set opponents=...``: another frozen opponent)."""
    code = best_response.main(["--opponent", "heuristic", "--smoke", "--pairs", "1",
                               "--out", str(tmp_path), "--set", override])
    err = capsys.readouterr().err
    assert code == 2 and option in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "ckpt").exists()   # refused before training


@pytest.mark.parametrize("args, message", [
    (["--steps", "2048"], "error: --steps: total_steps (2048) is less than one rollout"),
    (["--smoke", "--set", "init_temperature=0.25"],
     "error: --set: init_temperature sharpens the policy of init_from: give --init too"),
])
def test_config_errors_name_the_scripts_own_options(args, message, tmp_path, capsys):
    """The script passes --steps and --init to the trainer's config as total_steps and
    init_from: an error about them names the options the user gave, not "--set"."""
    code = best_response.main(["--opponent", "heuristic", *args, "--out", str(tmp_path)])
    assert code == 2
    assert capsys.readouterr().err.startswith(message)
