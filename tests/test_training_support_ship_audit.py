"""Tests from a mutation audit of the trainer's support modules, continued from
``test_training_support_audit.py`` (config and ``--resume``): the RNG states a checkpoint keeps,
exported policies and run facts, the opponent pool's snapshots and keys, and ``training.ship``'s
model card."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from training.config import ConfigError, TrainConfig, load_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "configs" / "smoke.yaml"


# -- checkpoint: RNG states -----------------------------------------------------------------------

def test_the_rng_state_keeps_the_cached_gaussians():
    """Python's ``random.gauss`` and numpy's legacy ``standard_normal`` hold the second value of
    a pair between calls: a resume must continue with it (bit for bit)."""
    import random

    from training.checkpoint import rng_state, set_rng_state
    before = rng_state()
    try:
        random.seed(5), np.random.seed(6)
        random.gauss(0, 1), np.random.standard_normal()   # each now caches one
        saved = rng_state()
        first = random.gauss(0, 1), float(np.random.standard_normal())
        random.seed(7), np.random.seed(8)
        set_rng_state(saved)
        assert (random.gauss(0, 1), float(np.random.standard_normal())) == first
    finally:
        set_rng_state(before)


# -- checkpoint: exported policies ----------------------------------------------------------------

def test_run_facts_bound_the_wall_time_to_0_through_1e9_seconds(tmp_path):
    from policy_files import save_policy
    from sevenrocks_env.policy import CheckpointError, read_checkpoint
    from training.checkpoint import run_facts
    data = read_checkpoint(save_policy(tmp_path / "p.pt"))
    for fine in (0, 10 ** 9):
        assert run_facts(dict(data, wall_time=fine), "p.pt")["wall_time"] == fine
    for bad in (-1.0, 10 ** 9 + 1):
        with pytest.raises(CheckpointError, match="'wall_time' must be a number of seconds"):
            run_facts(dict(data, wall_time=bad), "p.pt")


def test_run_facts_bound_the_step_and_the_size_of_the_config(tmp_path):
    """``global_step`` an int (a bool is not one) in [0, 1e12]; ``config`` plain JSON values
    (no NaN) in at most ``MAX_CONFIG_CHARS`` characters, both bounds at their edges."""
    from policy_files import save_policy
    from sevenrocks_env.policy import CheckpointError, read_checkpoint
    from training.checkpoint import MAX_CONFIG_CHARS, run_facts
    data = read_checkpoint(save_policy(tmp_path / "p.pt"))
    assert run_facts(dict(data, global_step=10 ** 12), "p.pt")["global_step"] == 10 ** 12
    for bad in (10 ** 12 + 1, -1, True, 5.0):
        with pytest.raises(CheckpointError, match="'global_step' must be an int in"):
            run_facts(dict(data, global_step=bad), "p.pt")
    fits = {"run_name": "x" * (MAX_CONFIG_CHARS - len('{"run_name": ""}'))}
    assert run_facts(dict(data, config=fits), "p.pt")["config"] == fits
    for bad in ({"run_name": fits["run_name"] + "x"}, {"learning_rate": float("nan")},
                {"gamma": float("inf")}, {"seed": object()}, [1]):
        with pytest.raises(CheckpointError, match="'config' must be a dict of plain values"):
            run_facts(dict(data, config=bad), "p.pt")


def test_a_training_checkpoint_holds_what_resume_reads(tmp_path):
    """``step_<n>.pt`` and ``latest.pt`` hold the counters, the session's wall time and every
    trained network (the hand-guess head and the oracle critic too), as given."""
    from training.checkpoint import save_training_checkpoint
    from training.networks import build_networks
    from training.opponents import cpu_weights
    cfg = load_config(SMOKE, ["hidden_sizes=[8]", "critic=oracle", "hand_coef=0.5"])
    model, critic, guess, optimizer = build_networks(cfg)
    step = save_training_checkpoint(tmp_path, model, optimizer, cfg, 3 * cfg.batch_size, 3,
                                    12.5, {"engine": 1}, None, critic=critic, guess=guess)
    assert step == tmp_path / f"step_{3 * cfg.batch_size}.pt"
    for path in (step, tmp_path / "latest.pt"):
        data = torch.load(path, weights_only=True)
        assert (data["update"], data["global_step"], data["wall_time"]) == (
            3, 3 * cfg.batch_size, 12.5)
        assert data["engine"] == {"engine": 1} and data["pool"] is None
        assert data["config"] == cfg.as_dict()
        for key, network in (("model", model), ("critic", critic), ("hand_guess", guess)):
            expected = cpu_weights(network)
            assert set(data[key]) == set(expected), key
            assert all(torch.equal(data[key][k], v) for k, v in expected.items()), key


def test_a_checkpoint_without_the_engine_state_is_not_resumed(tmp_path):
    """Every resume piece must be there: a file without ``engine`` is a policy to play."""
    from policy_files import save_policy
    from sevenrocks_env.policy import CheckpointError
    from training.checkpoint import load_training_checkpoint, rng_state
    path = save_policy(tmp_path / "p.pt", optimizer={}, config={}, update=0, rng=rng_state())
    with pytest.raises(CheckpointError, match=r"policy-only checkpoint \(no engine\)"):
        load_training_checkpoint(path)


def test_an_exported_policy_keeps_its_run_s_config_and_distillation_record(tmp_path):
    """What a model card says of the policy (its training config, its distillation) travels
    with the exported file: shipping a shipped file again keeps them."""
    from policy_files import save_policy
    from sevenrocks_env.policy import read_checkpoint
    from training.checkpoint import export_policy
    record = {"teacher": "search", "labels": 10, "holdout_agreement": 0.5}
    source = save_policy(tmp_path / "run.pt", config={"seed": 3, "critic": "shared"},
                         distill=record)
    exported = read_checkpoint(export_policy(source, tmp_path / "small.pt"))
    assert exported["config"] == {"seed": 3, "critic": "shared"}
    assert exported["distill"] == record
    extra = read_checkpoint(export_policy(source, tmp_path / "x.pt", {"wall_time": 60.0}))
    assert extra["wall_time"] == 60.0 and extra["config"] == exported["config"]  # on top


# -- opponents ---------------------------------------------------------------------------------

def test_an_opponent_key_beyond_the_snapshots_is_refused():
    """Keys come from files: ``past#<i>`` for i in [-1, count) (``-1``: the newest, from files
    written before dropped snapshots were kept), ``past@<i>`` only for a retired one."""
    from sevenrocks_env.policy import PolicyNet
    from training.opponents import OpponentPool
    pool = OpponentPool(["past"], PolicyNet([8]), max_snapshots=3)
    pool.add_snapshot(PolicyNet([8]))      # two snapshots
    agents = pool._past_agents
    assert pool.restore("past#1")[1] is agents[1] and pool.restore("past#-1")[1] is agents[-1]
    for key in ("past#2", "past#-2", "past@0"):
        with pytest.raises(ValueError, match="opponent key"):
            pool.restore(key)


def test_the_pool_keeps_the_configs_default_number_of_snapshots():
    from sevenrocks_env.policy import PolicyNet
    from training.opponents import OpponentPool
    model = PolicyNet([8])
    pool = OpponentPool(["past"], model)
    for _ in range(10):
        pool.add_snapshot(model)
    assert len(pool.snapshots) == len(pool._past_agents) == TrainConfig().max_snapshots == 5


def test_a_past_snapshot_samples_its_moves():
    """``past`` is "a frozen, sampling snapshot": from one position it plays several moves."""
    from sevenrocks_env.policy import PolicyNet, probe_positions
    from training.opponents import OpponentPool, policy_actions
    with torch.random.fork_rng():
        torch.manual_seed(0)
        pool = OpponentPool(["past"], PolicyNet([8]))
    obs, masks = probe_positions()
    row = int(masks.sum(1).argmax())   # the position with the most legal moves
    assert int(masks[row].sum()) >= 2
    actions = policy_actions(pool._past_agents[0], obs[row].repeat(200, 1), masks[row].repeat(200, 1))
    assert len(set(actions.tolist())) >= 2
    assert all(masks[row, a] for a in actions.tolist())


# -- ship: the model card --------------------------------------------------------------------

def test_a_bar_is_judged_from_exactly_1000_pairs_and_a_ci_starting_at_the_bar_is_above_it():
    """Issue 4's bars are measured over 1000 duplicate pairs; like the point estimate, an
    interval that starts at the bar is at or above it."""
    from training.model_card import verdict
    row = {"pairs": 1000, "win_rate": 0.7, "ci95": [0.65, 0.75]}
    assert verdict(row, 0.65) == "met (the whole 95% CI is above the bar)"
    assert verdict(dict(row, pairs=999), 0.65).startswith("not judged: 999 pairs")


def test_the_card_says_threads_wall_time_and_an_old_run_s_critic_in_words():
    from training.model_card import critic_text, minutes_text, threads_text
    assert threads_text({"train_threads": 1}) == " with 1 torch thread"
    assert threads_text({"train_threads": 2}) == " with 2 torch threads"
    assert threads_text({}) == ""
    assert minutes_text(None) == "unknown" and minutes_text(12.34) == "12.3 min"
    assert critic_text({}) == "shared"   # a run from before the oracle critic
    assert critic_text({"critic": "oracle"}).startswith("oracle")


# -- second pass of the audit --------------------------------------------------------------------

def test_checkpoints_fit_at_exactly_three_quarters_and_a_resumed_run_s_error_names_max_snapshots(
        monkeypatch):
    """``check_checkpoint_size``: the estimate "must fit in three quarters" of the read bound (an
    estimate equal to it fits); a resumed run's error names ``max_snapshots`` (its networks
    cannot change), a new run's ``hidden_sizes``."""
    import training.checkpoint as checkpoint
    from sevenrocks_env.policy import MAX_CHECKPOINT_BYTES
    cfg = load_config(SMOKE, [])
    quarter3 = MAX_CHECKPOINT_BYTES * 3 // 4
    monkeypatch.setattr(checkpoint, "checkpoint_estimate", lambda cfg: quarter3)
    checkpoint.check_checkpoint_size(cfg)
    checkpoint.check_checkpoint_size(cfg, resumed=True)
    monkeypatch.setattr(checkpoint, "checkpoint_estimate", lambda cfg: quarter3 + 1)
    for resumed, key in ((True, "max_snapshots"), (False, "hidden_sizes")):
        with pytest.raises(ConfigError, match=rf"^{key} ") as caught:
            checkpoint.check_checkpoint_size(cfg, resumed=resumed)
        assert caught.value.key == key


def _ship_args(monkeypatch, tmp_path, *options):
    """``training.ship``'s parsed options for a plain policy file and ``options`` (caught where
    the arena would be made, before anything is played or written)."""
    from policy_files import save_policy
    from training import ship
    seen = []

    def stop(args, agents):
        seen.append((args, agents))
        raise ValueError("stopped by the test")
    monkeypatch.setattr(ship, "_arena", stop)
    out = tmp_path / "shipped" / "policy.pt"
    assert ship.main([str(save_policy(tmp_path / "plain.pt")), "--out", str(out), *options]) == 2
    assert not out.parent.exists()
    return seen[0]


def test_ship_s_documented_defaults(tmp_path, monkeypatch, capsys):
    """Its help and docstring: 1000 pairs (what issue 4's bars are judged over), deal seed 2025,
    100 pairs against search, the batched arena, the card's opponents random greedy heuristic,
    one process."""
    from training.model_card import BAR_PAIRS, QUALITY_BARS
    args, agents = _ship_args(monkeypatch, tmp_path)
    assert "stopped by the test" in capsys.readouterr().err
    assert (args.pairs, args.seed, args.arena, args.workers) == (BAR_PAIRS, 2025, "batched", 1)
    assert args.search_pairs == 100
    assert args.pairs == 1000 and args.agents == list(QUALITY_BARS) == ["random", "greedy",
                                                                         "heuristic"]
    assert agents[:3] == ["random", "greedy", "heuristic"] and agents[3:] == [args.search]


def test_the_card_keeps_the_training_threads_and_minutes_of_the_run(tmp_path, monkeypatch):
    """``train_threads`` is the run's ``torch_threads`` (the card's "with N torch threads"),
    ``train_minutes`` its wall time in minutes."""
    from training.model_card import card_markdown
    from training.ship import _card
    args, agents = _ship_args(monkeypatch, tmp_path, "--search-pairs", "0")
    assert agents == ["random", "greedy", "heuristic"]   # 0: no search row
    facts = {"global_step": 7, "wall_time": 90.0, "config": {"torch_threads": 3}}
    card = _card(args, [], {"hidden_sizes": [16]}, facts, None, [], tmp_path / "p.pt", 10)
    assert (card["train_threads"], card["train_minutes"]) == (3, 1.5)
    assert "| training wall time | 1.5 min with 3 torch threads |" in card_markdown(card)


def _arena_result(win_rate, lo, hi, spec="greedy", pairs=1000):
    from types import SimpleNamespace
    return SimpleNamespace(spec_b=spec, pairs=pairs, matches=2 * pairs, win_rate=win_rate,
                           ci95=(lo, hi), mean_margin=1.04, rounds_per_match=5.123, seed=2025,
                           seconds_per_decision=(0.0012345, 0.0))


def test_a_card_row_is_judged_by_the_spec_it_played_not_its_name():
    """``_row``: "the spec it played (``spec``: what the quality bars are judged by)": a result
    named ``champion`` that played ``greedy`` is held to greedy's bar; a row named ``greedy``
    that played ``random`` to random's."""
    import json

    from training.model_card import card_markdown
    from training.ship import _row
    card = json.loads((ROOT / "checkpoints" / "shipped" / "model_card.json").read_text())
    card["arena"] = [_row("champion", _arena_result(0.7, 0.68, 0.72)),
                     _row("greedy", _arena_result(0.97, 0.96, 0.98, spec="random"))]
    text = card_markdown(card)
    assert "| vs greedy >= 65% | 70.0% [68.0%, 72.0%], 1000 pairs |" in text
    assert "| vs random >= 95% | 97.0% [96.0%, 98.0%], 1000 pairs |" in text
    assert "| vs greedy >= 65% | 97.0%" not in text


def test_the_resume_hint_quotes_the_checkpoint_path_for_a_shell():
    import shlex

    from training.resume import resume_options
    path = Path("my runs") / "it's" / "latest.pt"
    assert shlex.split(resume_options(path, TrainConfig())) == ["--resume", str(path)]


def test_generators_finds_each_agent_s_and_restore_puts_their_states_back():
    """``generators``: policy agents' torch ``_generator``, random and search agents' numpy
    ``_rng``; ``restore_generators`` puts back what ``save_generators`` took (the cut-off
    continuation plays on copies of the matches and must not move the real ones' draws)."""
    from sevenrocks_env.agents import make_agent
    from sevenrocks_env.policy import PolicyAgent, PolicyNet
    from training.opponents import generators, restore_generators, save_generators
    policy = PolicyAgent(PolicyNet([8]), deterministic=False)
    randomly = make_agent("random")
    assert generators(policy) == {"torch": policy._generator}
    assert generators(randomly) == {"numpy": randomly._rng}
    assert generators(make_agent("greedy")) == {}
    saved = save_generators([policy, randomly, None, policy])
    assert len(saved) == 2
    first = (torch.rand(3, generator=policy._generator), randomly._rng.random(3))
    restore_generators(saved)
    again = (torch.rand(3, generator=policy._generator), randomly._rng.random(3))
    assert torch.equal(first[0], again[0]) and np.array_equal(first[1], again[1])


@pytest.mark.parametrize("agent", ["x|y=greedy", "greedy`", "a=sample:policy=x|y"])
def test_ship_refuses_an_opponent_whose_name_or_spec_would_break_the_card(agent):
    from training.ship import _check_card_agents
    with pytest.raises(ValueError, match="its name and spec must each be|display name .* a name is "
                       "letters"):
        _check_card_agents(["random", agent])
    _check_card_agents(["random", "champ=greedy", "search:samples=4"])


def test_an_opponent_key_longer_than_4096_characters_is_refused_before_it_is_read_as_a_spec():
    """Keys come from files (at most 4096 characters, as the pool's ``fixed`` names): a longer
    one is refused as it is, even one that would parse as a baseline."""
    from sevenrocks_env.policy import PolicyNet
    from training.opponents import OpponentPool
    pool = OpponentPool(["greedy"], PolicyNet([8]))
    assert pool.restore("random" + " " * 4090)[0] == "random" + " " * 4090
    with pytest.raises(ValueError, match="opponent key must be a string"):
        pool.restore("random" + " " * 4091)


def test_a_baseline_dropped_from_the_pool_on_resume_gets_its_saved_generator_back():
    """A match in progress against ``random`` when the run resumes with other ``opponents``
    finishes against it (:meth:`OpponentPool.restore`), with its generator where it was saved."""
    from sevenrocks_env.policy import PolicyNet
    from training.opponents import OpponentPool
    saving = OpponentPool(["random"], PolicyNet([8]))
    saving._fixed["random"]._rng.random(5)
    state = saving.state_dict()
    expected = saving._fixed["random"]._rng.random(4)
    resumed = OpponentPool(["greedy"], PolicyNet([8]))
    resumed.load_state_dict(state)
    name, agent = resumed.restore("random")
    assert name == "random" and np.array_equal(agent._rng.random(4), expected)


def test_a_dropped_snapshot_is_saved_by_the_next_state_dict_only_and_a_resume_adds_none():
    """``key``: a snapshot dropped while a match plays it is registered "for the next
    state_dict() (and only those: a match that ended lets its snapshot go)"; ``ensure_snapshot``
    takes one only when the pool has none."""
    from sevenrocks_env.policy import PolicyNet
    from training.opponents import OpponentPool
    pool = OpponentPool(["past"], PolicyNet([8]), max_snapshots=1)
    playing = pool._past_agents[0]
    pool.add_snapshot(PolicyNet([8]))
    assert pool.key("past", playing) == "past@0" and pool.key("past", playing) == "past@0"
    assert len(pool.state_dict()["retired"]) == 1
    assert pool.state_dict()["retired"] == []   # no match registered it since
    kept = pool._past_agents[0]
    pool.ensure_snapshot(PolicyNet([8]))
    assert pool._past_agents == [kept] and len(pool.snapshots) == 1
