"""The PPO trainer: config errors, GAE, a smoke run (TensorBoard tags, checkpoints), the same
weights from one seed, evaluation, divergence (``--resume``: ``test_training_resume.py``)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tensorboard")

from training.config import ConfigError, TrainConfig, describe_fields, load_config  # noqa: E402
from training.ppo import compute_gae  # noqa: E402
from training.train import main, train  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "configs" / "smoke.yaml"
EXPECTED_TAGS = {
    "charts/episodic_return", "charts/SPS", "charts/learning_rate", "losses/value_loss",
    "losses/policy_loss", "losses/entropy", "losses/approx_kl", "losses/clipfrac",
    "losses/explained_variance", "eval/win_rate_vs_random", "eval/margin_vs_random",
    "charts/points_per_placement", "charts/rounds_per_match", "charts/env_steps_per_s",
    "charts/updates_per_s",
}


def _scalars(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def _images(run_dir: Path) -> list[str]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir), size_guidance={"images": 0})
    acc.Reload()
    return acc.Tags()["images"]


def _folders(tmp_path) -> list[str]:
    """``--set`` arguments keeping a resumed run's output in ``tmp_path`` (--resume never takes
    the folders from the checkpoint)."""
    return ["--set", f"log_dir={tmp_path / 'runs'}", "--set", f"checkpoint_dir={tmp_path / 'ckpt'}"]


def _smoke(tmp_path, *overrides):
    return load_config(SMOKE, [f"log_dir={tmp_path / 'runs'}",
                               f"checkpoint_dir={tmp_path / 'ckpt'}", *overrides])


# -- config --------------------------------------------------------------------------------------

def test_every_config_field_is_documented():
    docs = describe_fields()
    assert set(docs) == set(TrainConfig().as_dict())
    assert all(len(doc) > 10 for doc in docs.values())


def test_no_field_a_resume_refuses_to_change_is_documented_as_ignored_there():
    """--help-config said init_from was "ignored on --resume" where a --set of it is refused."""
    from training.resume import FIXED_ON_RESUME

    docs = {key: doc.replace("`", "") for key, doc in describe_fields().items()}
    assert [key for key in FIXED_ON_RESUME if "ignored on --resume" in docs[key]] == []


@pytest.mark.parametrize("override, words", [
    ("learning_rat=0.1", "unknown key"),
    ("num_matches=-3", "num_matches"),
    ("gamma=1.5", "gamma"),
    ("anneal_lr=maybe", "anneal_lr"),
    ("eval_agents=[nosuchagent]", "nosuchagent"),
    ("hidden_sizes=[64, x]", "hidden_sizes"),
    # a YAML set's order follows string hashing: layers and opponents silently reordered
    ("hidden_sizes=!!set {512, 64, 8}", "hidden_sizes: must be a list \\(in order\\), not a set"),
    ("opponents=!!set {random, greedy}", "opponents: must be a list \\(in order\\), not a set"),
])
def test_bad_config_fails_clearly(override, words):
    with pytest.raises(ConfigError, match=words):
        load_config(SMOKE, [override])


def test_cli_bad_config_exits_2(capsys):
    assert main(["--config", str(SMOKE), "--set", "bogus=1"]) == 2
    assert "unknown key" in capsys.readouterr().err


def test_overrides_read_yaml_values():
    cfg = load_config(SMOKE, ["learning_rate=1e-4", "opponents=[greedy]", "anneal_lr=false"])
    assert cfg.learning_rate == 1e-4 and cfg.opponents == ["greedy"] and cfg.anneal_lr is False


# -- GAE ------------------------------------------------------------------------------------------

def test_gae_matches_hand_computation():
    # Two interleaved seat trajectories: seat A = transitions 0 -> 2 -> 4 (done after 4),
    # seat B = 1 -> 3, cut by the rollout end after 3 with bootstrap value 0.5.
    gamma, lam = 0.9, 0.8
    rewards = np.array([1.0, 0.0, 0.5, 2.0, -1.0], dtype=np.float32)
    values = np.array([0.2, 0.4, 0.1, 0.3, 0.6], dtype=np.float32)
    dones = np.array([0, 0, 0, 0, 1], dtype=bool)
    next_index = np.array([2, 3, 4, -1, -1])
    bootstrap = np.array([0, 0, 0, 0.5, 0], dtype=np.float32)
    adv, ret = compute_gae(rewards, values, dones, next_index, bootstrap, gamma, lam)
    a4 = -1.0 - 0.6                          # terminal: no next value
    a2 = 0.5 + 0.9 * 0.6 - 0.1 + 0.72 * a4
    a0 = 1.0 + 0.9 * 0.1 - 0.2 + 0.72 * a2
    a3 = 2.0 + 0.9 * 0.5 - 0.3               # cut: bootstrap, no further advantage
    a1 = 0.0 + 0.9 * 0.3 - 0.4 + 0.72 * a3
    np.testing.assert_allclose(adv, [a0, a1, a2, a3, a4], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ret, adv + values, rtol=1e-6)


# -- smoke run, checkpoints, resume ---------------------------------------------------------------

def test_smoke_run_logs_and_checkpoints(tmp_path):
    """One smoke run of 3 updates, checkpointed every 2.  docs/training.md: linear
    learning-rate annealing (CleanRL: update u of N trains at lr * (1 - (u - 1) / N), the first
    at the full rate); eval/pairs is the duplicate pairs of each evaluation (eval_pairs
    periodically, final_eval_pairs at the end); eval/wall_minutes is the wall time in minutes;
    the last update is always checkpointed (latest.pt = the end)."""
    cfg = _smoke(tmp_path, "total_steps=768", "checkpoint_every=2", "learning_rate=0.003")
    assert cfg.num_updates == 3 and cfg.batch_size == 256 and cfg.anneal_lr
    started = time.time()
    out = train(cfg, final_table=False)
    elapsed_minutes = (time.time() - started) / 60
    run_dir = tmp_path / "runs" / "smoke"
    assert list(run_dir.glob("events.out.tfevents.*"))
    scalars = _scalars(run_dir)
    assert EXPECTED_TAGS <= set(scalars), EXPECTED_TAGS - set(scalars)
    assert _images(run_dir) == ["eval/game"]  # a board picture of an evaluation match
    lrs = scalars["charts/learning_rate"]
    assert [step for step, _ in lrs] == [256, 512, 768]
    assert [v for _, v in lrs] == pytest.approx([0.003, 0.002, 0.001], rel=1e-5)
    assert scalars["eval/pairs"] == [(256, 1.0), (512, 1.0), (768, 2.0)]
    minutes = [v for _, v in scalars["eval/wall_minutes"]]
    assert len(minutes) == 3 and minutes == sorted(minutes)
    assert 0 < minutes[-1] <= elapsed_minutes
    ckpt_dir = tmp_path / "ckpt" / "smoke"
    assert (ckpt_dir / "latest.pt").is_file() and (ckpt_dir / "step_768.pt").is_file()
    assert out["global_step"] == cfg.total_steps == 768
    data = torch.load(ckpt_dir / "latest.pt", weights_only=True)  # plain types only
    assert (data["global_step"], data["update"]) == (768, cfg.num_updates)


def test_evaluation_plays_the_run_s_target_and_round_cap():
    """A run to 40 cut at 1 round is evaluated on such matches, not on the arena's 250/100."""
    from sevenrocks_env.policy import PolicyNet
    from training.evaluation import evaluate_policy

    results = evaluate_policy(PolicyNet(), ["random"], pairs=2, seed=0, target=40, max_rounds=1)
    rounds = results["random"].as_dict()["rounds_per_match"]
    assert rounds == 1.0, rounds


def test_evaluation_is_the_arena_s_greedy_policy_and_logs_its_own_side():
    """The periodic evaluation plays the policy as the arena's ckpt: does (its most probable
    action, so the same numbers as ``sevenrocks arena``), and logs the policy's side (A) of
    every (A, B) figure."""
    from sevenrocks_env.arena import evaluate
    from sevenrocks_env.policy import PolicyAgent, PolicyNet
    from training.evaluation import eval_scalars, evaluate_policy

    torch.manual_seed(3)
    model = PolicyNet([16])
    results = evaluate_policy(model, ["greedy"], pairs=3, seed=5, target=60, max_rounds=100)
    direct = evaluate(PolicyAgent(model, deterministic=True), "greedy", 3, seed=5, target=60)
    got, want = results["greedy"].as_dict(), direct.as_dict()
    assert (got["win_rate"], got["points_per_round"]) == (want["win_rate"],
                                                          want["points_per_round"])
    scalars = eval_scalars(results)
    assert scalars["eval/points_per_round_vs_greedy"] == got["points_per_round"][0]
    assert got["points_per_round"][0] != got["points_per_round"][1]


@pytest.mark.parametrize("spec", ["random", "search:samples=2,rollout=greedy"])
def test_evaluation_against_a_random_baseline_is_the_arena_s_numbers(spec):
    """The evaluation's table (``eval_seed``, ``final_eval_pairs``) is what ``sevenrocks arena
    ckpt:FILE SPEC --seed S --pairs N`` gives for baselines that draw random numbers too: each
    seat of the baseline an agent of its own, seeded from ``(seed, pair, match, seat)`` as the
    arena seeds a spec (one object at both seats drew other numbers: other matches)."""
    from sevenrocks_env.arena import evaluate
    from sevenrocks_env.policy import PolicyAgent, PolicyNet
    from training.evaluation import evaluate_policy

    torch.manual_seed(3)
    model = PolicyNet([16])
    got = evaluate_policy(model, [spec], pairs=4, seed=5, target=60, max_rounds=100)[spec]
    want = evaluate(PolicyAgent(model, deterministic=True), spec, 4, seed=5, target=60)
    assert got.as_dict(timing=False) | {"agent_a": "", "agent_b": "", "spec_a": "",
                                        "spec_b": ""} == \
        want.as_dict(timing=False) | {"agent_a": "", "agent_b": "", "spec_a": "", "spec_b": ""}


def drop_checkpoints_after(ckpt_dir: Path, step: int) -> None:
    """Remove ``latest.pt`` and every ``step_N.pt`` past ``step``: what a resume from
    ``step`` is compared with must be what it wrote, not the straight run's own files (the
    resume tests passed with a resume that trained and wrote nothing)."""
    (ckpt_dir / "latest.pt").unlink()
    for path in ckpt_dir.glob("step_*.pt"):
        if int(path.stem.removeprefix("step_")) > step:
            path.unlink()


def test_two_runs_with_one_seed_give_the_same_weights_bit_for_bit(tmp_path):
    """The default engine (batched) and critic (oracle): a run is a function of its config."""
    weights = []
    for name in ("first", "second"):
        cfg = _smoke(tmp_path / name, "total_steps=512", "eval_every=0", "seed=7")
        train(cfg, final_table=False)
        weights.append(torch.load(tmp_path / name / "ckpt" / "smoke" / "latest.pt",
                                  weights_only=True))
    assert weights[0]["global_step"] == weights[1]["global_step"] == 512
    for part in ("model", "critic"):
        for key, tensor in weights[0][part].items():
            assert torch.equal(tensor, weights[1][part][key]), (part, key)


def test_oracle_critic_input_is_the_other_seats_hands():
    from sevenrocks_env.rules import Match, apply_action, legal_actions
    from sevenrocks_env.tiles import tiles_of
    from training.critic import hidden_hands

    match = Match.new(7)
    for _ in range(9):
        apply_action(match, legal_actions(match)[0])
    for seat in range(4):
        hands = hidden_hands(match, seat).reshape(3, -1)
        for k in (1, 2, 3):
            assert np.flatnonzero(hands[k - 1]).tolist() == tiles_of(match.hands[(seat + k) % 4])


def test_tag_name_flattens_a_checkpoint_path():
    """tag_name's contract: ``ckpt:a/b.pt -> ckpt_a_b.pt`` -- a '/'
    left in would split TensorBoard's eval/ group into folders (eval/win_rate_vs_ckpt_a/b.pt)."""
    from training.evaluation import eval_scalars, tag_name

    assert tag_name("ckpt:a/b.pt") == "ckpt_a_b.pt"
    assert tag_name(" sample:policy=a.pt,temperature=0.5") == "sample_policy_a.pt_temperature_0.5"
    assert load_config(SMOKE, ['opponents=[" greedy", greedy]']).opponents == ["greedy"] * 2

    class Result:
        win_rate, mean_margin = 0.5, 1.0

    scalars = eval_scalars({"ckpt:runs/x/latest.pt": Result()})
    assert set(scalars) == {"eval/win_rate_vs_ckpt_runs_x_latest.pt",
                            "eval/margin_vs_ckpt_runs_x_latest.pt"}


def test_eval_game_picture_seats_the_policy_at_0_and_2(monkeypatch):
    """eval_game_picture: "the policy at seats 0 and 2 against spec"
    (team A, as in the arena and in eval/ scalars)."""
    import sevenrocks_env.arena as arena
    from sevenrocks_env.policy import PolicyNet
    from training.evaluation import eval_game_picture

    seen, original = [], arena.run_match
    monkeypatch.setattr(arena, "run_match",
                        lambda agents, **kw: seen.append(list(agents)) or original(agents, **kw))
    picture = eval_game_picture(PolicyNet([16]).eval(), "random", seed=3, target=40,
                                max_rounds=2)
    assert picture.ndim == 3 and picture.shape[2] == 3
    (agents,) = seen
    assert [a.name for a in agents][0] == "policy" and agents[0] is agents[2]
    assert agents[1] is agents[3] and agents[1].name != "policy"


def test_warm_start_from_an_oracle_trained_policy_file_without_value_head():
    """docs/training.md: "A policy
    file trained with the oracle critic has no value head; the trainer's then starts fresh." --
    the shipped file (value_head False) warm-starts a config of its network."""
    from sevenrocks_env.policy import shipped_path
    from training.networks import build_networks, warm_start

    shipped = shipped_path()
    source = torch.load(shipped, weights_only=True)
    assert source["model_config"].get("value_head") is False
    cfg = TrainConfig()
    cfg.init_from = str(shipped)
    model, _, _, _ = build_networks(cfg)
    warm_start(model, cfg)
    for key, tensor in source["model"].items():
        assert torch.equal(model.state_dict()[key], tensor), key


def test_a_diverging_run_stops_with_one_line_and_keeps_its_last_checkpoint(tmp_path, capsys,
                                                                            monkeypatch):
    """A NaN in the second update's advantages: exit 1, one line naming the update, the step
    and the checkpoint of the first update, which stays as it was written."""
    import training.train as train_module

    real, calls = train_module.ppo_update, []

    def poisoned(model, optimizer, batch, *args):
        calls.append(1)
        if len(calls) == 2:
            batch["advantages"][0] = float("nan")
        return real(model, optimizer, batch, *args)

    monkeypatch.setattr(train_module, "ppo_update", poisoned)
    code = main(["--config", str(SMOKE), "--set", "total_steps=768", "--set", "eval_every=0",
                 "--set", "checkpoint_every=1", *_folders(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    latest = tmp_path / "ckpt" / "smoke" / "latest.pt"
    assert code == 1 and len(err) == 1, err
    assert err[0].startswith("error: training diverged at update 2 (step 256): the PPO loss is "
                             "not finite (policy loss nan)")
    assert f"the last checkpoint is {latest.parent / 'step_256.pt'} (lower" in err[0]
    data = torch.load(latest, weights_only=True)
    assert data["update"] == 1 and data["global_step"] == 256
    assert all(bool(torch.isfinite(v).all()) for v in data["model"].values())




def test_the_progress_bar_says_when_max_minutes_stops_the_run(tmp_path, capsys,
                                                              evaluation_clock):
    """tqdm's ETA counts the steps; with max_minutes the bar also gives the minutes left,
    counted after the update's evaluation (here a clock moved on 5 minutes by each)."""
    import re
    offset, postfixes = evaluation_clock
    for minutes, shown in (("30", True), ("0", False)):
        cfg = load_config(SMOKE, [f"log_dir={tmp_path / minutes / 'runs'}",
                                  f"checkpoint_dir={tmp_path / minutes / 'ckpt'}",
                                  "total_steps=192", "num_matches=8", "num_steps=8",
                                  "eval_every=1", "eval_pairs=1", "final_eval_pairs=1",
                                  "progress=true", f"max_minutes={minutes}"])
        offset[0] = 0.0
        postfixes.clear()
        train(cfg, final_table=False)
        assert "SPS" in capsys.readouterr().err
        # after each update's evaluation: 25 and 20 minutes left (not the 30 and 25 before it;
        # the clock's real seconds come on top: a busy machine shows 19.9)
        left = [float(found[1]) for text in postfixes
                if (found := re.search(r"stops in ([\d.]+) min", text))]
        assert left == (pytest.approx([25, 20, 20], abs=0.5) if shown else [])
