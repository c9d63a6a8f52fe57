"""Tests from a mutation audit of the trainer's support modules (``training/config.py``,
``resume.py``): the documented defaults, the bounds of every untrusted config value at both
edges, the entropy schedule and the checks on a ``--resume`` file's pieces (the checkpoint,
opponent pool and model card half: ``test_training_support_ship_audit.py``)."""

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
    """``ent_coef_final``: "approached linearly over total_steps (like the learning rate with
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
            "pool": pool.state_dict(), "config": cfg.as_dict(),  # (as every run's file has them)
            "model_config": {"action_features": cfg.action_features}}
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


def test_a_pool_snapshot_s_weights_are_checked_beside_a_good_generator(resume_piece):
    """A snapshot whose weights are not the network's (with its generator intact) is the 'pool'
    piece, not an error from ``load_state_dict`` once the networks are built."""
    def change(data, cfg):
        _weights(data).update(extra=torch.zeros(1))
    assert _checked(resume_piece, change) == "pool"
    assert _checked(resume_piece, lambda d, c: _weights(d).update(
        {k: v.double() for k, v in _weights(d).items()})) == "pool"
