"""Hostile training configs (issue 15), rules about several fields and what a run would build:
the field that broke a rule is blamed (``--set`` or the file), output folders come from the
command line, ``init_from`` must hold the config's network, and a network whose checkpoint
could not be read back is refused before training.  Bad YAML files and bad ``--set`` values:
test_hostile_configs.py."""

import pytest
import yaml

from training import config as config_module
from training.config import ConfigError, TrainConfig, config_from_dict, load_config

from test_hostile_configs import ROOT, SMOKE, write


def test_a_device_off_the_cpu_needs_the_batched_engine():
    with pytest.raises(ConfigError, match="only the batched engine runs off the CPU") as caught:
        load_config(SMOKE, ["device=cuda", "engine=python"])
    assert caught.value.key == "device" and caught.value.others == ("engine",)


@pytest.mark.parametrize("override, blamed", [
    ("opponents=[]", "--set"),                        # the file's opponent_fraction is 0.25
    ("num_minibatches=7", "--set"),                   # the file's batch is not divisible by 7
    ("num_minibatches=256", "--set"),                 # minibatches of 1: std of one value, NaN
])
def test_a_rule_about_several_fields_blames_the_set_that_broke_it(override, blamed):
    with pytest.raises(ConfigError) as caught:
        load_config(SMOKE, [override])
    assert str(caught.value).startswith(f"{blamed}: ")
    with pytest.raises(ConfigError) as caught:
        load_config(SMOKE, ["opponent_fraction=0.5", "opponents=[]"])
    assert caught.value.key == "opponent_fraction" and caught.value.others == ("opponents",)


def test_self_play_only_from_the_default_config_says_to_zero_the_fraction_too():
    """docs/training.md gave ``--set opponents=`` as "self-play only"; with make train's config
    (opponent_fraction 0.15) it is refused, and the message now says what else to set."""
    default = ROOT / "configs" / "default.yaml"
    with pytest.raises(ConfigError, match=r"^--set: .*\(self-play only: opponent_fraction=0 "
                                          r"too\)$"):
        load_config(default, ["opponents="])
    assert load_config(default, ["opponents=", "opponent_fraction=0"]).opponents == []


def test_minibatches_of_one_need_norm_adv_off_and_a_batch_of_one_says_so():
    """A batch of one sample said "give num_minibatches at most 0"; minibatches of one were
    refused for their normalisation with ``norm_adv: false`` too, where nothing is normalised."""
    with pytest.raises(ConfigError, match=r"num_matches \* num_steps \(1\) must be at least 2 "
                                          "with norm_adv") as caught:
        load_config(SMOKE, ["num_matches=1", "num_steps=1", "num_minibatches=1"])
    assert caught.value.key == "num_matches"
    with pytest.raises(ConfigError, match="give num_minibatches at most 128, or norm_adv false"):
        load_config(SMOKE, ["num_minibatches=256"])
    assert load_config(SMOKE, ["num_minibatches=256", "norm_adv=false"]).num_minibatches == 256
    assert load_config(SMOKE, ["num_matches=1", "num_steps=1", "num_minibatches=1",
                               "norm_adv=false", "total_steps=8"]).batch_size == 1


def test_rewards_that_are_all_zero_are_refused():
    with pytest.raises(ConfigError, match="every reward would be 0") as caught:
        load_config(SMOKE, ["points_scale=0", "win_reward=0"])
    assert caught.value.key == "points_scale" and caught.value.others == ("win_reward",)
    assert load_config(SMOKE, ["points_scale=0"]).win_reward == 1.0  # win/loss only: fine


def test_a_rule_broken_by_the_file_alone_blames_the_file(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("opponents: []\nopponent_fraction: 0.5\n")
    with pytest.raises(ConfigError, match=r"^.*bad\.yaml: opponent_fraction > 0 needs"):
        load_config(path, ["seed=3"])


@pytest.mark.parametrize("key", config_module.OUTPUT_FOLDERS)
def test_a_config_file_cannot_choose_where_a_run_writes(tmp_path, key):
    """Config files are shared between people: output folders come from the command line."""
    path = write(tmp_path, f"{key}: /tmp/elsewhere\n")
    with pytest.raises(ConfigError, match=rf"{key} is not read from a config file.*--set {key}="):
        load_config(path)
    assert getattr(load_config(None, [f"{key}={tmp_path / 'out'}"]), key) == str(tmp_path / "out")


def test_defaults_and_repo_configs_are_valid():
    paths = sorted((ROOT / "configs").glob("*.yaml"))
    assert {"default.yaml", "smoke.yaml"} <= {path.name for path in paths}
    for path in paths:
        assert load_config(path).total_steps > 0
    config_from_dict(TrainConfig().as_dict())
    assert yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text())["run_name"] == "smoke"


def test_init_from_must_be_a_policy_of_the_configs_network(tmp_path):
    """``init_from``: the file is read as an untrusted checkpoint and must hold this config's
    network; every refusal is a ConfigError naming the key, raised before a run folder exists."""
    import torch

    from sevenrocks_env.policy import PolicyNet
    from training.checkpoint import policy_entries
    from training.networks import build_networks, warm_start
    from training.train import train

    small = PolicyNet([16], action_features=1)
    path = tmp_path / "small.pt"
    torch.save(policy_entries(small, 0), path)
    fits = load_config(None, [f"init_from={path}", "hidden_sizes=[16]", "action_features=1"])
    model, _, _, _ = build_networks(fits)
    warm_start(model, fits)
    assert all(torch.equal(model.state_dict()[k], v) for k, v in small.state_dict().items())

    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    for overrides, words in [
        ([f"init_from={path}", "hidden_sizes=[32]", "action_features=1"],
         r"'hidden_sizes': \[16\].*builds \{'hidden_sizes': \[32\]"),
        ([f"init_from={path}", "hidden_sizes=[16]", "action_features=2"],
         r"'action_features': 1.*builds .*'action_features': 2"),
        ([f"init_from={tmp_path / 'junk.pt'}"], "not a readable checkpoint"),
        ([f"init_from={tmp_path / 'missing.pt'}"], "no such file"),
    ]:
        cfg = load_config(None, overrides + [f"log_dir={tmp_path / 'runs'}",
                                             f"checkpoint_dir={tmp_path / 'ckpt'}",
                                             "run_name=r", "progress=false"])
        with pytest.raises(ConfigError, match=words) as caught:
            train(cfg)
        assert caught.value.key == "init_from"
        assert not (tmp_path / "runs").exists() and not (tmp_path / "ckpt").exists()


def test_total_steps_below_one_rollout_is_refused():
    """A run shorter than one rollout would train nothing (no update)."""
    with pytest.raises(ConfigError, match="total_steps"):
        load_config(SMOKE, ["total_steps=255"])  # the smoke config: 16 x 16 = 256 a rollout
    assert load_config(SMOKE, ["total_steps=256"]).num_updates == 1


@pytest.mark.parametrize("overrides", [
    [], ["critic=oracle"], ["action_scorer=mlp", "opponents=[past]", "max_snapshots=3"],
    ["hidden_sizes=[32]", "action_features=0", "critic=oracle"],
    ["hidden_sizes=[48, 24]", "hand_coef=0.5"],
])
def test_checkpoint_estimate_counts_the_networks_it_would_build(overrides):
    """The size check reads shapes, not built networks: its figure is theirs."""
    from training.checkpoint import checkpoint_estimate
    from training.opponents import PAST
    from training.networks import build_networks
    cfg = load_config(SMOKE, overrides)
    model, critic, guess, _ = build_networks(cfg)

    def size(network):
        return 0 if network is None else sum(p.numel() * 4 for p in network.parameters())
    snapshots = cfg.max_snapshots if PAST in cfg.opponents else 0
    assert checkpoint_estimate(cfg) == (3 * size(model) + 3 * size(critic) + 3 * size(guess)
                                        + snapshots * size(model))


def test_a_network_too_large_to_read_back_is_refused_before_training(tmp_path, capsys):
    """hidden_sizes [4096]*4 with the oracle critic trained and wrote a 1.16 GiB checkpoint
    that --resume, ship and ckpt: then refused (past the 1 GiB bound on reading a file)."""
    from training.train import main
    args = ["--config", str(SMOKE), "--set", f"log_dir={tmp_path / 'runs'}",
            "--set", f"checkpoint_dir={tmp_path / 'ckpt'}", "--set", "critic=oracle",
            "--set", "hidden_sizes=[4096, 4096, 4096, 4096]"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "hidden_sizes [4096, 4096, 4096, 4096]: a training checkpoint would hold about" in err
    assert not (tmp_path / "runs").exists() and not (tmp_path / "ckpt").exists()


@pytest.mark.parametrize("hidden_sizes, refused_", [
    ("[4096, 4096]", False),         # about 0.75 GiB: within three quarters of the 1 GiB bound
    ("[4096, 4096, 1024]", True),    # about 0.91 GiB: under the bound, not under 3/4 of it
    ("[4096, 4096, 4096]", True),    # about 1.44 GiB
])
def test_checkpoints_must_fit_in_three_quarters_of_the_read_bound(hidden_sizes, refused_):
    """A quarter of the bound on reading a checkpoint is kept for snapshots still played after
    they leave the pool and the engine's state."""
    from training.checkpoint import check_checkpoint_size
    cfg = load_config(SMOKE, [f"hidden_sizes={hidden_sizes}", "critic=oracle"])
    if not refused_:
        check_checkpoint_size(cfg)
        return
    with pytest.raises(ConfigError, match=rf"hidden_sizes \[{hidden_sizes[1:-1]}\]: a training "
                                          "checkpoint would hold about") as caught:
        check_checkpoint_size(cfg)
    assert caught.value.key == "hidden_sizes"
