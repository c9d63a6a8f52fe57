"""The mlp action scorer (``action_scorer: mlp``), the bilinear scorer it sits beside, and the
trainer's new fields (``scorer_sizes``, ``ent_coef_final``).

The shipped policy (bilinear, saved before ``action_scorer`` existed) must load and give the
logits of the bilinear formula, recomputed here from its weights; the mlp scorer must touch the
legal placements only, learn (gradients reach every part of it), survive export and loading, and
a checkpoint declaring an absurd scorer is refused before anything is allocated.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sevenrocks_env import rules
from sevenrocks_env.observation import action_mask, encode
from sevenrocks_env.policy import CheckpointError, PolicyNet, build_model, expected_shapes, \
    load_policy, read_checkpoint, shipped_path
from sevenrocks_env.policy_scorer import PlacementScorer
from sevenrocks_env.tiles import KNOCK
from training.checkpoint import export_policy, policy_entries
from training.config import ConfigError, load_config
from training.ppo import ppo_update

SMOKE = "configs/smoke.yaml"


def decisions(count: int = 40, target: int = 250) -> tuple[torch.Tensor, torch.Tensor]:
    """Observations and masks of seats on turn in random states of random matches."""
    obs, masks = [], []
    for seed in range(10 * count):
        rng = np.random.default_rng(seed)
        match = rules.Match.new(seed, target=target, max_rounds=4)
        for _ in range(int(rng.integers(0, 90))):
            if match.over:
                break
            legal = rules.legal_actions(match)
            rules.apply_action(match, legal[int(rng.integers(len(legal)))])
        if match.over or match.awaiting_deal:
            continue
        obs.append(encode(match, match.turn))
        masks.append(action_mask(match, match.turn))
        if len(obs) == count:
            break
    return torch.from_numpy(np.stack(obs)), torch.from_numpy(np.stack(masks)).bool()


def save(tmp_path, model: PolicyNet, name="p.pt", **changes):
    data = policy_entries(model, 0)
    data.update(changes)
    path = tmp_path / name
    torch.save(data, path)
    return path


# -- the shipped (bilinear) policy ------------------------------------------------------------

def test_shipped_policy_is_bilinear_and_gives_the_bilinear_logits():
    data = read_checkpoint(shipped_path())
    assert "action_scorer" not in data["model_config"]  # saved before the key existed
    model = load_policy("shipped").model
    assert model.action_scorer == "bilinear" and not hasattr(model, "scorer")
    assert model.model_config() == data["model_config"]  # re-export writes the same config
    obs, masks = decisions()
    weights = data["model"]
    with torch.no_grad():
        logits, _ = model(obs, masks)
        hidden = obs
        for index in range(len(model.hidden_sizes)):
            hidden = torch.relu(hidden @ weights[f"trunk.{2 * index}.weight"].T
                                + weights[f"trunk.{2 * index}.bias"])
        want = hidden @ weights["policy_head.weight"].T + weights["policy_head.bias"]
        feature_weights = hidden @ weights["feature_weights.weight"].T \
            + weights["feature_weights.bias"]
        for row in range(len(obs)):
            legal = torch.nonzero(masks[row, :KNOCK]).flatten()
            rows = torch.full_like(legal, row)
            features = model.action_features(obs, rows, legal)
            want[row, legal] += features @ feature_weights[row]
    assert torch.allclose(logits, want, atol=1e-4)
    assert torch.equal(logits.argmax(-1), want.argmax(-1))


# -- the mlp scorer ---------------------------------------------------------------------------

@pytest.mark.parametrize("features", [1, 2, 3])
def test_mlp_scorer_changes_only_legal_placement_logits(features):
    torch.manual_seed(0)
    model = PolicyNet([32], action_features=features, action_scorer="mlp").eval()
    obs, masks = decisions()
    with torch.no_grad():
        logits, values = model(obs, masks)
        head = model.policy_head(model.trunk(obs))
    assert logits.shape == (len(obs), 113) and values.shape == (len(obs),)
    changed = logits != head
    placements = masks.clone()
    placements[:, KNOCK] = False
    assert not (changed & ~placements).any()           # illegal placements and the knock
    assert changed[placements].float().mean() > 0.99   # (a term exactly 0 is possible, rare)
    # near-uniform start: the scorer's term is small
    assert (logits - head)[placements].abs().max() < 0.5


def test_mlp_scorer_term_equals_the_network_on_each_placement():
    torch.manual_seed(1)
    model = PolicyNet([16], action_features=3, action_scorer="mlp", scorer_sizes=[8]).eval()
    obs, masks = decisions(12)
    with torch.no_grad():
        logits, _ = model(obs, masks)
        hidden = model.trunk(obs)
        head = model.policy_head(hidden)
        scorer = model.scorer
        for row in range(len(obs)):
            for action in torch.nonzero(masks[row, :KNOCK]).flatten().tolist():
                features = model.action_features(obs, torch.tensor([row]), torch.tensor([action]))
                inputs = torch.cat([scorer.state(hidden[row]), features[0],
                                    scorer.tile_embedding.weight[action >> 2],
                                    scorer.slot_embedding.weight[action & 3]])
                want = head[row, action] + scorer.layers(inputs)[0]
                assert logits[row, action] == pytest.approx(float(want), abs=1e-5)


def test_cached_features_give_the_same_logits_per_minibatch():
    """``ppo_update`` computes ``legal_features`` once and indexes it per minibatch."""
    torch.manual_seed(2)
    model = PolicyNet([32], action_features=3, action_scorer="mlp").eval()
    obs, masks = decisions()
    with torch.no_grad():
        cached = model.legal_features(obs, masks)
        minibatch = torch.tensor([5, 0, 17, 3])
        got, _ = model(obs[minibatch], masks[minibatch],
                       (cached[0][minibatch], cached[1][minibatch]))
        want, _ = model(obs[minibatch], masks[minibatch])
    assert torch.allclose(got, want, atol=1e-6)


def test_gradients_reach_every_part_of_the_scorer():
    torch.manual_seed(3)
    model = PolicyNet([32], action_features=2, action_scorer="mlp")
    obs, masks = decisions()
    logits, _ = model(obs, masks)
    masked = torch.where(masks, logits, torch.full_like(logits, -1e8))
    log_probs = masked.log_softmax(-1)
    (-(log_probs.exp() * log_probs).where(masks, torch.zeros_like(log_probs)).sum()).backward()
    for name, parameter in model.scorer.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name
    assert model.trunk[0].weight.grad.abs().sum() > 0  # through the state projection too


def test_ppo_update_trains_the_mlp_scorer():
    torch.manual_seed(4)
    cfg = load_config(SMOKE, ["action_scorer=mlp", "action_features=3"])
    model = PolicyNet([32], action_features=3, action_scorer="mlp").eval()
    obs, masks = decisions(32)
    with torch.no_grad():
        logits, values = model(obs, masks)
    from sevenrocks_env.policy import MaskedCategorical
    dist = MaskedCategorical(logits, masks)
    actions = dist.sample()
    batch = {"obs": obs, "masks": masks, "actions": actions, "logprobs": dist.log_prob(actions),
             "values": values, "advantages": torch.randn(len(obs)),
             "returns": torch.randn(len(obs))}
    before = [p.detach().clone() for p in model.scorer.parameters()]
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    stats = ppo_update(model, optimizer, batch, cfg, ent_coef=0.05)
    assert np.isfinite(stats["losses/entropy"])
    assert all(not torch.equal(b, p) for b, p in zip(before, model.scorer.parameters()))


@pytest.mark.parametrize("features, sizes", [(1, [8]), (2, [128, 64]), (3, [4, 5, 6, 7])])
def test_expected_shapes_cover_the_mlp_scorer(features, sizes):
    model = PolicyNet([16, 8], action_features=features, action_scorer="mlp", scorer_sizes=sizes)
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    assert expected_shapes([16, 8], features, action_scorer="mlp", scorer_sizes=sizes) == shapes


def test_mlp_checkpoint_round_trip_through_export(tmp_path):
    torch.manual_seed(5)
    model = PolicyNet([32], action_features=3, action_scorer="mlp", scorer_sizes=[16, 8]).eval()
    source = save(tmp_path, model, "full.pt")
    exported = export_policy(source, tmp_path / "small.pt")
    config = read_checkpoint(exported)["model_config"]
    assert config["action_scorer"] == "mlp" and config["scorer_sizes"] == [16, 8]
    agent = load_policy(exported)
    assert isinstance(agent.model.scorer, PlacementScorer)
    obs, masks = decisions(16)
    with torch.no_grad():
        want, _ = model(obs, masks)
        got, _ = agent.model(obs, masks)
    assert torch.equal(got, want)
    assert agent.act(obs[0].numpy(), masks[0].numpy()) == int(
        torch.where(masks[0], want[0], torch.tensor(-1e8)).argmax())


@pytest.mark.parametrize("change, words", [
    ({"scorer_sizes": [10 ** 9]}, "scorer_sizes"),
    ({"scorer_sizes": [64] * 100}, "scorer_sizes"),
    ({"scorer_sizes": [64, True]}, "scorer_sizes"),
    ({"scorer_sizes": [8, 0]}, "scorer_sizes"),  # a layer of no units: a constant scorer
    ({"scorer_sizes": "64"}, "scorer_sizes"),
    ({"action_scorer": "evil"}, "action_scorer"),
    ({"action_scorer": ["mlp"]}, "action_scorer"),
    ({"action_scorer": "mlp", "action_features": 0}, "needs action features"),
])
def test_hostile_scorer_configs_are_refused_before_allocation(tmp_path, monkeypatch, change,
                                                              words):
    model = PolicyNet([16], action_features=2, action_scorer="mlp", scorer_sizes=[8])
    data = policy_entries(model, 0)
    data["model_config"].update(change)
    built = []
    monkeypatch.setattr(PlacementScorer, "__init__",
                        lambda *args, **kwargs: built.append(args) or None)
    with pytest.raises(CheckpointError, match=words):
        build_model(data, "hostile.pt")
    assert not built


def test_scorer_weights_must_match_the_declared_scorer(tmp_path):
    mlp = PolicyNet([16], action_features=2, action_scorer="mlp", scorer_sizes=[8])
    bilinear = PolicyNet([16], action_features=2)
    lying = policy_entries(mlp, 0)
    lying["model_config"] = bilinear.model_config()          # mlp weights, bilinear config
    with pytest.raises(CheckpointError, match="do not fit"):
        load_policy(save(tmp_path, mlp, "lying.pt", model_config=lying["model_config"]))
    wider = policy_entries(mlp, 0)
    wider["model_config"]["scorer_sizes"] = [9]
    with pytest.raises(CheckpointError, match="scorer.layers.0.weight"):
        build_model(wider, "wider.pt")


# -- config ---------------------------------------------------------------------------------

@pytest.mark.parametrize("override, words", [
    ("action_scorer=deep", "action_scorer"),
    ("scorer_sizes=[0]", "scorer_sizes"),
    ("scorer_sizes=[2000]", "scorer_sizes"),
    ("scorer_sizes=[8, 8, 8, 8, 8]", "scorer_sizes"),
    ("ent_coef_final=nan", "ent_coef_final"),
    ("ent_coef_final=-0.1", "ent_coef_final"),
    ("ent_coef_final=1000", "ent_coef_final"),
    ("ent_coef_final=[0.1]", "ent_coef_final"),
])
def test_bad_new_fields_fail_clearly(override, words):
    with pytest.raises(ConfigError, match=words):
        load_config(SMOKE, [override])


def test_mlp_scorer_needs_action_features():
    with pytest.raises(ConfigError, match="action_features"):
        load_config(SMOKE, ["action_scorer=mlp", "action_features=0"])


def test_entropy_coefficient_schedule():
    constant = load_config(SMOKE, ["ent_coef=0.02"])
    assert constant.ent_coef_final is None
    assert [constant.ent_coef_at(u, 4) for u in (1, 2, 4)] == [0.02, 0.02, 0.02]
    cfg = load_config(SMOKE, ["ent_coef=0.03", "ent_coef_final=0.005"])
    values = [cfg.ent_coef_at(u, 5) for u in range(1, 6)]
    assert values[0] == 0.03 and values == sorted(values, reverse=True)
    assert values[-1] == pytest.approx(0.03 - 0.025 * 4 / 5)  # like the learning rate
    assert np.allclose(np.diff(values), -0.005)


def test_smoke_run_with_mlp_scorer_features_3_and_entropy_anneal(tmp_path):
    from training.train import train
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    cfg = load_config(SMOKE, [f"log_dir={tmp_path / 'runs'}", f"checkpoint_dir={tmp_path / 'ckpt'}",
                              "action_scorer=mlp", "action_features=3", "total_steps=768",
                              "eval_every=0", "ent_coef=0.03", "ent_coef_final=0.005"])
    result = train(cfg, final_table=False)
    assert result["global_step"] == 768
    agent = load_policy(result["checkpoint"])
    assert agent.model.model_config()["action_scorer"] == "mlp"
    events = EventAccumulator(str(tmp_path / "runs" / "smoke"), size_guidance={"scalars": 0})
    events.Reload()
    coefs = [e.value for e in events.Scalars("charts/ent_coef")]
    assert coefs == pytest.approx([0.03, 0.03 - 0.025 / 3, 0.03 - 0.05 / 3])
    assert all(np.isfinite(e.value) for e in events.Scalars("losses/entropy"))


def test_mlp_run_resumes_and_keeps_its_scorer(tmp_path, capsys):
    """--resume of an MLP-scorer run with past snapshots in its pool (the pool's networks have the
    scorer's parameters too); the scorer cannot change on resume."""
    from training.train import main
    dirs = [f"--set=log_dir={tmp_path / 'runs'}", f"--set=checkpoint_dir={tmp_path / 'ckpt'}"]
    assert main(["--config", SMOKE, "--set=action_scorer=mlp", "--set=total_steps=512",
                 "--set=eval_every=0", *dirs]) == 0
    latest = str(tmp_path / "ckpt" / "smoke" / "latest.pt")
    assert main(["--resume", latest, "--set=total_steps=1024", *dirs]) == 0
    assert "resumed from step 512" in capsys.readouterr().out
    assert main(["--resume", latest, "--set=action_scorer=bilinear", *dirs]) == 2
    assert "action_scorer cannot change on --resume" in capsys.readouterr().err
