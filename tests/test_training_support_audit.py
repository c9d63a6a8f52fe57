"""Tests from a mutation audit of the trainer's support modules (``training/config.py``,
``checkpoint.py``, ``resume.py``, ``opponents.py``, ``ship.py``): the documented defaults, the
bounds of every untrusted config value at both edges, the entropy schedule, the checks on a
``--resume`` file's pieces, the opponent pool's snapshots and keys, and the model card."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from training.config import ConfigError, TrainConfig, load_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "configs" / "smoke.yaml"


# -- config ------------------------------------------------------------------------------------

def test_the_defaults_are_the_documented_ones():
    """docs/training.md: ``device`` cpu, ``critic: oracle``, ``action_features: 2``, ``max_rounds:
    60`` for a match to 250, an MLP trunk (256, 256), ``hand_coef`` 0, batches of 128 x 64."""
    cfg = TrainConfig()
    assert (cfg.device, cfg.critic, cfg.action_features, cfg.max_rounds, cfg.target,
            cfg.hidden_sizes, cfg.hand_coef) == ("cpu", "oracle", 2, 60, 250, [256, 256], 0.0)
    assert (cfg.num_matches, cfg.num_steps) == (128, 64)
    # docs/experiments.md: "the runs' own final tables, 200 pairs at seed 12345"
    assert (cfg.final_eval_pairs, cfg.eval_seed) == (200, 12345)


def test_an_unknown_key_in_a_mapping_is_one_config_error_with_a_suggestion():
    """Resumed configs come from files, through ``config_from_dict``: a misspelt key is named
    with the nearest field, and a key that is not text is refused in words, not a TypeError."""
    from training.config import config_from_dict
    with pytest.raises(ConfigError, match=r"^f\.pt: unknown key 'num_matchs'; did you mean "
                                          r"'num_matches'\?$"):
        config_from_dict({"num_matchs": 3}, "f.pt")
    with pytest.raises(ConfigError, match=r"^f\.pt: unknown key '1'; valid keys: run_name, seed"):
        config_from_dict({1: 3}, "f.pt")


def test_the_batch_is_at_most_2_to_the_20_decisions():
    """``MAX_BATCH``: the rollout buffer holds ~1 kB a decision, so a batch is at most 2**20."""
    fits = ["num_matches=16384", "num_steps=64", f"total_steps={2 ** 20}"]
    assert load_config(SMOKE, fits).batch_size == 2 ** 20
    with pytest.raises(ConfigError, match=r"\(1064960\) must be at most 1048576"):
        load_config(SMOKE, ["num_matches=16384", "num_steps=65", f"total_steps={2 ** 21}"])


@pytest.mark.parametrize("key, accepted, refused", [
    # numpy's legacy seed (np.random.seed, as the trainer seeds it) takes [0, 2**32 - 1]
    ("seed", 2 ** 32 - 1, 2 ** 32),
    ("eval_seed", 2 ** 32 - 1, 2 ** 32),
    # fractions, discounts and a learning rate are at most 1
    ("opponent_fraction", 1.0, 1.5),
    ("gamma", 1.0, 1.01),
    ("gae_lambda", 1.0, 1.01),
    ("learning_rate", 1.0, 1.5),
    # "every size has an upper bound"
    ("total_steps", 10 ** 11, 10 ** 11 + 1),
    ("max_snapshots", 1000, 1001),
    ("update_epochs", 1000, 1001),
    ("eval_pairs", 100_000, 100_001),
    ("final_eval_pairs", 100_000, 100_001),
    # "every this many updates": 0 would divide by zero
    ("checkpoint_every", 1, 0),
    ("snapshot_every", 1, 0),
    ("eval_every", 0, -1),
    # coefficients are not negative
    ("ent_coef_final", 0.0, -0.01),
    ("target_kl", 0.0, -0.01),
    # counts a run divides by or loops over: at least 1; the match target at most MAX_TARGET
    ("max_snapshots", 1, 0),
    ("update_epochs", 1, 0),
    ("eval_pairs", 1, 0),
    ("num_matches", 1, 0),
    ("num_steps", 1, 0),
])
def test_every_bound_holds_at_its_edge(key, accepted, refused):
    assert getattr(load_config(SMOKE, [f"{key}={accepted}"]), key) == accepted
    with pytest.raises(ConfigError, match=rf"^--set: {key}: ") as caught:
        load_config(SMOKE, [f"{key}={refused}"])
    assert "\n" not in str(caught.value)


def test_the_target_and_the_network_widths_hold_at_their_edges():
    """The match target at most ``MAX_TARGET`` (the record's bound), a trunk layer at most
    ``MAX_HIDDEN_WIDTH`` and a scorer layer at most the scorer's ``MAX_WIDTH``."""
    from sevenrocks_env.policy import MAX_HIDDEN_WIDTH
    from sevenrocks_env.policy_scorer import MAX_WIDTH
    from sevenrocks_env.record import MAX_TARGET
    for key, top, refused in [("target", MAX_TARGET, r"target: "),
                              ("hidden_sizes", [MAX_HIDDEN_WIDTH], r"hidden_sizes\[0\]: "),
                              ("scorer_sizes", [MAX_WIDTH], r"scorer_sizes\[0\]: ")]:
        assert getattr(load_config(SMOKE, [f"{key}={top}"]), key) == top
        over = top + 1 if key == "target" else [top[0] + 1]
        with pytest.raises(ConfigError, match=rf"^--set: {refused}"):
            load_config(SMOKE, [f"{key}={over}"])


def test_a_seed_the_config_accepts_seeds_every_generator_the_trainer_seeds():
    from training.checkpoint import rng_state, set_rng_state
    top = load_config(SMOKE, [f"seed={2 ** 32 - 1}"]).seed
    before = rng_state()
    try:
        np.random.seed(top)   # the largest seed numpy's legacy generator takes
        torch.manual_seed(top)
        with pytest.raises(ValueError):
            np.random.seed(top + 1)
    finally:
        set_rng_state(before)   # other tests' draws go on as they would have


def test_init_from_is_a_bounded_path_without_nul():
    assert load_config(SMOKE, ["init_from=" + "a" * 1024]).init_from == "a" * 1024
    for bad in ("a" * 1025, "a\x00b"):
        with pytest.raises(ConfigError, match="init_from"):
            load_config(SMOKE, [], base={"init_from": bad})


def test_the_mlp_scorer_without_action_features_is_a_config_error():
    with pytest.raises(ConfigError, match="action_scorer mlp .* needs action_features >= 1"):
        load_config(SMOKE, ["action_scorer=mlp", "action_features=0"])
    assert load_config(SMOKE, ["action_scorer=mlp", "action_features=1"]).action_scorer == "mlp"


@pytest.mark.parametrize("ent_coef_final", [0.0, 0.03])
def test_the_entropy_coefficient_follows_the_learning_rate_s_schedule(ent_coef_final):
    """``ent_coef_final``: "reached linearly over total_steps (like the learning rate with
    anneal_lr)": the trainer's rate at update u of N is lr * (1 - (u - 1) / N)."""
    cfg = load_config(SMOKE, ["ent_coef=0.01", f"ent_coef_final={ent_coef_final}"])
    updates = 4
    for update in range(1, updates + 1):
        left = 1.0 - (update - 1.0) / updates   # the learning rate's remaining fraction
        expected = ent_coef_final + (0.01 - ent_coef_final) * left
        assert cfg.ent_coef_at(update, updates) == pytest.approx(expected)
    assert cfg.ent_coef_at(1, updates) == pytest.approx(0.01)
    constant = load_config(SMOKE, ["ent_coef=0.02"])
    assert [constant.ent_coef_at(u, updates) for u in (1, 4)] == [0.02, 0.02]


def test_num_updates_rounds_down():
    """A run trains whole rollouts only: 767 decisions at 256 a rollout are two updates."""
    assert load_config(SMOKE, ["total_steps=767"]).num_updates == 2
    assert load_config(SMOKE, ["total_steps=768"]).num_updates == 3


# -- resume: each piece of a --resume file is checked -------------------------------------------

def _resume_data(*overrides):
    """A resume file's pieces as the trainer writes them, for a small network after one Adam
    step (no rollout: only the pieces :func:`check_resume` reads), and what it checks them
    against."""
    import copy

    from training.checkpoint import rng_state
    from training.networks import build_networks
    from training.opponents import OpponentPool, cpu_weights
    from training.ppo import trained_parameters
    cfg = load_config(SMOKE, ["hidden_sizes=[8]", "critic=oracle", "hand_coef=0.5", *overrides])
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model, critic, guess, optimizer = build_networks(cfg)
        parameters = trained_parameters(model, critic, guess)
        for parameter in parameters:
            parameter.grad = torch.randn_like(parameter)
        optimizer.step()
    pool = OpponentPool(cfg.opponents, model, cfg.max_snapshots)
    data = {"update": 1, "global_step": cfg.batch_size, "wall_time": 1.0, "rng": rng_state(),
            "model": cpu_weights(model), "critic": cpu_weights(critic),
            "hand_guess": cpu_weights(guess), "optimizer": copy.deepcopy(optimizer.state_dict()),
            "pool": pool.state_dict()}
    return data, cfg, (model, critic, guess)


@pytest.fixture(scope="module")
def resume_piece():
    return _resume_data()


def _checked(resume_piece, change):
    """``None`` when :func:`check_resume` takes the file after ``change``, else the piece its
    :class:`CheckpointError` names."""
    import copy

    from sevenrocks_env.policy import CheckpointError
    from training.resume import check_resume
    data, cfg, (model, critic, guess) = resume_piece
    data = copy.deepcopy(data)
    change(data, cfg)
    try:
        check_resume(data, cfg, model, critic, "f.pt", guess)
    except CheckpointError as error:
        message = str(error)
        assert message.startswith("f.pt: resume piece '") and "\n" not in message, message
        return message.split("'")[1]
    return None


def _first_moments(data):
    return data["optimizer"]["state"][0]


def _weights(data):
    return data["pool"]["snapshots"][0]


def _generator(data):
    return data["pool"]["generators"][0]


@pytest.mark.parametrize("change, piece", [
    (lambda d, c: None, None),                                   # the file as written
    (lambda d, c: d.update(wall_time=-1.0), "wall_time"),       # seconds are not negative
    # numpy's has_gauss is 0 or 1, its key words 32-bit (a negative one wraps silently)
    (lambda d, c: d["rng"]["numpy"].__setitem__(3, 2), "rng"),
    (lambda d, c: d["rng"]["numpy"][1].__setitem__(0, -1), "rng"),
    # numpy takes a position past its 624 key words (or below 0) and reads beyond them
    (lambda d, c: d["rng"]["numpy"].__setitem__(2, 625), "rng"),
    (lambda d, c: d["rng"]["numpy"].__setitem__(2, -1), "rng"),
    (lambda d, c: d["rng"]["numpy"].__setitem__(2, 624), None),
    # weights of another dtype are converted by load_state_dict without a word; extra keys
    (lambda d, c: d.update(model={k: v.double() for k, v in d["model"].items()}), "model"),
    (lambda d, c: d["critic"].update(extra=torch.zeros(1)), "critic"),
    (lambda d, c: d["hand_guess"].update(
        {k: v.fill_(float("nan")) for k, v in d["hand_guess"].items()}), "hand_guess"),
    # Adam's step counts from 1 (step 0: bias correction 1 - beta**0 divides by zero)
    (lambda d, c: _first_moments(d).update(step=torch.tensor(0.0)), "optimizer"),
    # the group's settings are not taken, but a file with negative ones is not a run's
    (lambda d, c: d["optimizer"]["param_groups"][0].update(lr=-1e-3), "optimizer"),
    (lambda d, c: d["optimizer"]["param_groups"][0].update(weight_decay=-1.0), "optimizer"),
    # a moment entry for a parameter the networks do not have; parameters out of order
    (lambda d, c: d["optimizer"]["state"].update(
        {len(d["optimizer"]["param_groups"][0]["params"]): _first_moments(d)}), "optimizer"),
    (lambda d, c: d["optimizer"]["param_groups"][0]["params"].reverse(), "optimizer"),
    # the pool: retired snapshots with a bad generator or bad weights, too many, names too long
    (lambda d, c: d["pool"].update(retired=[{"weights": _weights(d),
                                             "generator": torch.zeros(1)}]), "pool"),
    (lambda d, c: d["pool"].update(retired=[{"weights": {},
                                             "generator": _generator(d)}]), "pool"),
    (lambda d, c: d["pool"].update(retired=[{"weights": _weights(d), "generator": _generator(d)}]
                                   * (c.num_matches + 1)), "pool"),
    (lambda d, c: d["pool"].update(retired=[{"weights": _weights(d), "generator": _generator(d)}]
                                   * c.num_matches), None),
    (lambda d, c: d["pool"].update(fixed={f"g{i}": {} for i in range(c.num_matches + 65)}),
     "pool"),
    (lambda d, c: d["pool"].update(fixed={f"g{i}": {} for i in range(c.num_matches + 64)}), None),
    (lambda d, c: d["pool"].update(fixed={"g" * 4097: {}}), "pool"),
    (lambda d, c: d["pool"].update(fixed={"g" * 4096: {}}), None),
])
def test_each_resume_piece_is_checked(resume_piece, change, piece):
    assert _checked(resume_piece, change) == piece


def test_adam_moments_are_bounded_by_what_adam_can_reach(resume_piece):
    """|m| <= (1 - b1) / sqrt((1 - b2) (1 - b1^2 / b2)) sqrt(v) = 7.27 sqrt(v) for torch's betas
    (0.9, 0.999); a file with moments beyond it would blow up the first update."""
    b1, b2 = 0.9, 0.999
    bound = (1 - b1) / ((1 - b2) * (1 - b1 ** 2 / b2)) ** 0.5
    assert 7.2 < bound < 7.3

    def moments(ratio):
        def change(data, cfg):
            entry = _first_moments(data)
            entry["exp_avg_sq"].fill_(4.0)
            entry["exp_avg"].fill_(ratio * 2.0)
        return change
    assert _checked(resume_piece, moments(0.98 * bound)) is None
    assert _checked(resume_piece, moments(-0.98 * bound)) is None
    assert _checked(resume_piece, moments(1.1 * bound)) == "optimizer"
    assert _checked(resume_piece, moments(-1.1 * bound)) == "optimizer"


def _saved_run(*overrides, update=1):
    cfg = load_config(SMOKE, ["total_steps=768", *overrides])
    return {"config": cfg.as_dict(), "model_config": {"action_features": cfg.action_features},
            "update": update, "pool": None}


@pytest.mark.parametrize("override", [
    # docs/training.md, Checkpoints: what sizes the networks or the rollouts, and what the
    # matches in progress and the saved generators hold
    "hidden_sizes=[16, 16]", "action_features=1", "action_scorer=mlp", "scorer_sizes=[8]",
    "critic=shared", "engine=python", "num_matches=8", "num_steps=32", "seed=2", "target=60",
    "max_rounds=30",
    # and the warm start, done when the run began
    "init_from=other.pt", "init_temperature=0.5",
])
def test_resume_refuses_a_set_of_every_fixed_setting_naming_it(override):
    from training.resume import resumed_config
    key = override.partition("=")[0]
    data = _saved_run("critic=oracle", "action_scorer=bilinear", "engine=batched",
                      "init_from=shipped")
    value = load_config(None, ["init_from=x.pt", override]).as_dict()[key]
    with pytest.raises(ConfigError, match=rf"^--set: {key} cannot change on --resume") as caught:
        resumed_config(data, {key: value}, "f.pt")
    assert caught.value.key == key
    # the rest can change
    assert resumed_config(data, {"learning_rate": 1e-3}, "f.pt").learning_rate == 1e-3


def test_resume_refuses_to_turn_the_hand_guess_head_on_or_off_but_takes_another_weight():
    from training.resume import resumed_config
    for saved, changed in (("hand_coef=0", 0.5), ("hand_coef=0.5", 0.0)):
        with pytest.raises(ConfigError, match="hand_coef cannot change between 0 and > 0"):
            resumed_config(_saved_run(saved), {"hand_coef": changed}, "f.pt")
    assert resumed_config(_saved_run("hand_coef=0.5"), {"hand_coef": 0.25}, "f.pt").hand_coef \
        == 0.25


def test_resume_of_a_run_from_before_the_newer_fields():
    """A config saved before ``action_features``, ``critic`` and ``engine`` existed: its run had
    the model's feature version (a bool in the first files), the shared critic and the python
    engine."""
    from training.resume import resumed_config
    data = _saved_run()
    for key in ("action_features", "critic", "engine"):
        del data["config"][key]
    data["model_config"] = {"action_features": True}
    cfg = resumed_config(data, {}, "f.pt")
    assert (cfg.action_features, cfg.critic, cfg.engine) == (1, "shared", "python")
    assert type(cfg.action_features) is int


def test_resume_total_steps_may_end_at_the_update_done_but_not_before():
    from training.resume import resumed_config
    data = _saved_run(update=2)   # 2 updates of 256 decisions done
    assert resumed_config(data, {"total_steps": 512}, "f.pt").num_updates == 2
    with pytest.raises(ConfigError, match="total_steps=511: the run has trained 512 decisions"):
        resumed_config(data, {"total_steps": 511}, "f.pt")


def test_resume_max_snapshots_may_keep_the_snapshots_held_but_not_fewer():
    from training.resume import resumed_config
    data = _saved_run()
    data["pool"] = {"snapshots": [{}, {}], "generators": [None, None]}   # 2 kept
    assert resumed_config(data, {"max_snapshots": 2}, "f.pt").max_snapshots == 2
    with pytest.raises(ConfigError, match="max_snapshots=1: the run keeps 2 past snapshots") \
            as caught:
        resumed_config(data, {"max_snapshots": 1}, "f.pt")
    assert caught.value.key == "max_snapshots"


def test_resume_blames_an_invalid_saved_config_on_the_checkpoint_not_on_set():
    """A file's own config that is not valid is its ``config`` piece (a CheckpointError), even
    when a ``--set`` would repair it."""
    from sevenrocks_env.policy import CheckpointError
    from training.resume import resumed_config
    data = _saved_run()
    data["config"]["learning_rate"] = float("nan")
    with pytest.raises(CheckpointError, match=r"^f\.pt: resume piece 'config' is invalid: "
                                              r"config: learning_rate: must be a finite number"):
        resumed_config(data, {"learning_rate": 1e-3}, "f.pt")


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
    from training.ship import _verdict
    row = {"pairs": 1000, "win_rate": 0.7, "ci95": [0.65, 0.75]}
    assert _verdict(row, 0.65) == "met (the whole 95% CI is above the bar)"
    assert _verdict(dict(row, pairs=999), 0.65).startswith("not judged: 999 pairs")


def test_the_card_says_threads_wall_time_and_an_old_run_s_critic_in_words():
    from training.ship import _critic, _minutes, _threads
    assert _threads({"train_threads": 1}) == " with 1 torch thread"
    assert _threads({"train_threads": 2}) == " with 2 torch threads"
    assert _threads({}) == ""
    assert _minutes(None) == "unknown" and _minutes(12.34) == "12.3 min"
    assert _critic({}) == "shared"   # a run from before the oracle critic
    assert _critic({"critic": "oracle"}).startswith("oracle")


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


def test_a_pool_snapshot_s_weights_are_checked_beside_a_good_generator(resume_piece):
    """A snapshot whose weights are not the network's (with its generator intact) is the 'pool'
    piece, not an error from ``load_state_dict`` once the networks are built."""
    def change(data, cfg):
        _weights(data).update(extra=torch.zeros(1))
    assert _checked(resume_piece, change) == "pool"
    assert _checked(resume_piece, lambda d, c: _weights(d).update(
        {k: v.double() for k, v in _weights(d).items()})) == "pool"


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
    from training.ship import BAR_PAIRS, QUALITY_BARS
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
    from training.ship import _card, _markdown
    args, agents = _ship_args(monkeypatch, tmp_path, "--search-pairs", "0")
    assert agents == ["random", "greedy", "heuristic"]   # 0: no search row
    facts = {"global_step": 7, "wall_time": 90.0, "config": {"torch_threads": 3}}
    card = _card(args, [], {"hidden_sizes": [16]}, facts, None, [], tmp_path / "p.pt", 10)
    assert (card["train_threads"], card["train_minutes"]) == (3, 1.5)
    assert "| training wall time | 1.5 min with 3 torch threads |" in _markdown(card)


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

    from training.ship import _markdown, _row
    card = json.loads((ROOT / "checkpoints" / "shipped" / "model_card.json").read_text())
    card["arena"] = [_row("champion", _arena_result(0.7, 0.68, 0.72)),
                     _row("greedy", _arena_result(0.97, 0.96, 0.98, spec="random"))]
    text = _markdown(card)
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
    with pytest.raises(ValueError, match="its name and spec must each be"):
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
