"""PPO's update against the formulas it implements (CleanRL's ``ppo.py``), computed here
independently in float64 from the network's outputs: normalised advantages, the clipped
surrogate, the clipped value loss, and the entropy bonus pushing entropy up."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sevenrocks_env.observation import action_mask, encode  # noqa: E402
from sevenrocks_env.policy import MaskedCategorical, PolicyNet  # noqa: E402
from positions import random_state  # noqa: E402
from training.ppo import DivergenceError, ppo_update  # noqa: E402

RATIOS = np.array([0.5, 0.7, 1.0, 1.1, 1.5, 2.0, 0.9, 1.3])      # some outside 1 +- 0.2
ADVANTAGES = np.array([1.0, -2.0, 0.5, -1.0, 2.0, -0.5, 1.5, -3.0])
VALUE_SHIFT = np.array([0.5, -0.5, 0.1, -0.1, 0.3, -0.4, 0.0, 0.25])  # new - old values
RETURNS_SHIFT = np.array([1.0, -1.0, 0.2, 0.5, -0.8, 0.6, 0.0, -0.3])  # returns - new values


def config(**changes):
    base = dict(update_epochs=1, num_minibatches=1, clip_coef=0.2, norm_adv=True,
                clip_vloss=True, vf_coef=0.5, ent_coef=0.0, max_grad_norm=0.5, target_kl=None)
    return SimpleNamespace(**{**base, **changes})


def sampled(model, states):
    """``(obs, masks, logits, values, dist, actions)``: the seats on turn's inputs at ``states``,
    ``model``'s outputs and an action drawn from each row's distribution."""
    obs = torch.from_numpy(np.stack([encode(m, m.turn) for m in states]))
    masks = torch.from_numpy(np.stack([action_mask(m, m.turn) for m in states])).bool()
    with torch.no_grad():
        logits, values = model(obs, masks)
        dist = MaskedCategorical(logits, masks)
        return obs, masks, logits, values, dist, dist.sample()


def batch_and_outputs(model):
    states = [random_state(seed, 6 + seed) for seed in range(len(RATIOS))]
    obs, masks, logits, values, dist, actions = sampled(model, states)
    logprobs = dist.log_prob(actions)
    values64 = values.double().numpy()
    batch = {
        "obs": obs, "masks": masks, "actions": actions,
        "logprobs": logprobs - torch.from_numpy(np.log(RATIOS)).float(),  # old policy
        "advantages": torch.from_numpy(ADVANTAGES).float(),
        "values": torch.from_numpy(values64 - VALUE_SHIFT).float(),        # old values
        "returns": torch.from_numpy(values64 + RETURNS_SHIFT).float(),
    }
    probs = torch.softmax(logits.double().masked_fill(~masks, -np.inf), -1).numpy()
    entropy = -np.where(probs > 0, probs * np.log(np.where(probs > 0, probs, 1)), 0).sum(-1)
    return batch, values64, entropy


def test_reported_losses_are_the_clipped_objectives():
    torch.manual_seed(0)
    model = PolicyNet([16], action_features=0)
    batch, values, entropy = batch_and_outputs(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0)
    stats = ppo_update(model, optimizer, batch, config())

    ratio = RATIOS
    adv = (ADVANTAGES - ADVANTAGES.mean()) / (ADVANTAGES.std(ddof=1) + 1e-8)
    policy_loss = np.maximum(-adv * ratio, -adv * np.clip(ratio, 0.8, 1.2)).mean()
    old, returns = values - VALUE_SHIFT, values + RETURNS_SHIFT
    clipped = old + np.clip(values - old, -0.2, 0.2)
    value_loss = 0.5 * np.maximum((values - returns) ** 2, (clipped - returns) ** 2).mean()
    assert stats["losses/policy_loss"] == pytest.approx(policy_loss, rel=1e-4)
    assert stats["losses/value_loss"] == pytest.approx(value_loss, rel=1e-4)
    assert stats["losses/entropy"] == pytest.approx(entropy.mean(), rel=1e-4)
    assert stats["losses/clipfrac"] == pytest.approx(np.mean(np.abs(RATIOS - 1) > 0.2))
    # http://joschu.net/blog/kl-approx.html's k3 estimator, and the rollout values' fit
    assert stats["losses/approx_kl"] == pytest.approx(np.mean(ratio - 1 - np.log(ratio)), rel=1e-4)
    y_pred, y_true = batch["values"].double().numpy(), batch["returns"].double().numpy()
    assert stats["losses/explained_variance"] == pytest.approx(
        1 - np.var(y_true - y_pred) / np.var(y_true), rel=1e-4)
    # and the unclipped value loss when clip_vloss is off
    stats = ppo_update(model, optimizer, batch, config(clip_vloss=False))
    assert stats["losses/value_loss"] == pytest.approx(
        0.5 * ((values - returns) ** 2).mean(), rel=1e-4)



def test_without_norm_adv_the_surrogate_takes_the_advantages_as_they_are():
    """``norm_adv: false`` (CleanRL's ``--norm-adv False``): the clipped surrogate of the raw
    advantages, not of their normalised values."""
    torch.manual_seed(0)
    model = PolicyNet([16], action_features=0)
    batch, _, _ = batch_and_outputs(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0)
    stats = ppo_update(model, optimizer, batch, config(norm_adv=False))
    raw = np.maximum(-ADVANTAGES * RATIOS, -ADVANTAGES * np.clip(RATIOS, 0.8, 1.2)).mean()
    normalised = (ADVANTAGES - ADVANTAGES.mean()) / ADVANTAGES.std(ddof=1)
    assert raw != pytest.approx(
        np.maximum(-normalised * RATIOS, -normalised * np.clip(RATIOS, 0.8, 1.2)).mean())
    assert stats["losses/policy_loss"] == pytest.approx(raw, rel=1e-4)

def test_the_entropy_bonus_raises_entropy():
    """With no advantage and no value loss, the only gradient is the entropy bonus: a few
    updates must raise the policy's entropy on these states."""
    torch.manual_seed(1)
    model = PolicyNet([16], action_features=0)
    with torch.no_grad():  # a peaked policy (a fresh one is near uniform: entropy at its top)
        model.policy_head.bias.copy_(torch.randn(model.policy_head.bias.shape) * 3)
    batch, _, before = batch_and_outputs(model)
    batch["advantages"].zero_()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(5):
        ppo_update(model, optimizer, batch, config(vf_coef=0.0, update_epochs=2), ent_coef=1.0)
    _, _, after = batch_and_outputs(model)
    assert after.mean() > before.mean() + 0.05


def _weights(model):
    return {name: value.clone() for name, value in model.state_dict().items()}


def test_a_loss_that_is_not_finite_stops_before_the_optimizer_step():
    """A NaN advantage (or reward) would write NaN into every weight: DivergenceError names
    the part of the loss, and the weights are those of before the update."""
    torch.manual_seed(2)
    model = PolicyNet([16], action_features=0)
    batch, _, _ = batch_and_outputs(model)
    batch["advantages"][3] = float("nan")
    before = _weights(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    with pytest.raises(DivergenceError, match=r"PPO loss is not finite \(policy loss nan\) in "
                                              r"epoch 1, minibatch at 0"):
        ppo_update(model, optimizer, batch, config())
    for name, value in model.state_dict().items():
        assert torch.equal(value, before[name]), name


def test_gradients_that_are_not_finite_stop_before_the_optimizer_step():
    torch.manual_seed(3)
    model = PolicyNet([16], action_features=0)
    batch, _, _ = batch_and_outputs(model)
    before = _weights(model)
    model.policy_head.weight.register_hook(lambda grad: grad * float("inf"))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    with pytest.raises(DivergenceError, match="PPO gradients are not finite in epoch 1"):
        ppo_update(model, optimizer, batch, config())
    for name, value in model.state_dict().items():
        assert torch.equal(value, before[name]), name
