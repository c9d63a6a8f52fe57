"""The trainer core's small contracts, on hand-made cases with known answers: GAE at a ``done``,
what ``rollout_batch`` hands to the update, and the knobs of ``ppo_update`` that the reported
losses alone do not show (epochs, ``target_kl``, ``vf_coef``, ``hand_coef``, gradient clipping,
the oracle critic's values)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sevenrocks_env.policy import PolicyNet  # noqa: E402
from positions import random_state  # noqa: E402
from test_ppo_loss import ADVANTAGES, RATIOS, batch_and_outputs, config, sampled  # noqa: E402
from training.critic import OracleCritic, hidden_hands  # noqa: E402
from training.hand_guess import HandGuess  # noqa: E402
from training.ppo import compute_gae, ppo_update, rollout_batch  # noqa: E402
from training.seats import RolloutBuffer  # noqa: E402

# -- GAE ------------------------------------------------------------------------------------------


def test_gae_at_a_done_ignores_any_successor_and_bootstrap():
    """``done`` ends the trace: neither a stale link nor a stale bootstrap leaks into it."""
    gamma, lam = 0.9, 0.8
    rewards = np.array([1.0, 0.5, 2.0], dtype=np.float32)
    values = np.array([0.2, 0.4, 0.3], dtype=np.float32)
    dones = np.array([False, True, False])
    next_index = np.array([1, 2, -1])
    bootstrap = np.array([0.0, 7.0, 0.5], dtype=np.float32)
    adv, ret = compute_gae(rewards, values, dones, next_index, bootstrap, gamma, lam)
    a2 = 2.0 + 0.9 * 0.5 - 0.3
    a1 = 0.5 - 0.4                       # done: no next value, no next advantage
    a0 = 1.0 + 0.9 * 0.4 - 0.2 + 0.72 * a1
    np.testing.assert_allclose(adv, [a0, a1, a2], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ret, adv + values, rtol=1e-6)


# -- rollout_batch --------------------------------------------------------------------------------


def test_rollout_batch_hands_each_buffer_array_to_its_key():
    rng = np.random.default_rng(0)
    buffer = RolloutBuffer(5)
    for name in ("obs", "hands", "logprobs", "values", "rewards"):
        getattr(buffer, name)[:] = rng.normal(size=getattr(buffer, name).shape)
    buffer.masks[:] = rng.random(buffer.masks.shape) < 0.5
    buffer.actions[:] = rng.integers(0, 113, size=5)
    advantages = rng.normal(size=5).astype(np.float32)
    returns = rng.normal(size=5).astype(np.float32)
    batch = rollout_batch(buffer, advantages, returns)
    assert "hands" not in batch
    expected = {"obs": buffer.obs, "masks": buffer.masks, "actions": buffer.actions,
                "logprobs": buffer.logprobs, "values": buffer.values,
                "advantages": advantages, "returns": returns}
    assert set(batch) == set(expected)
    for key, array in expected.items():
        np.testing.assert_array_equal(batch[key].numpy(), array, err_msg=key)
    hands = rollout_batch(buffer, advantages, returns, hands=True)["hands"]
    np.testing.assert_array_equal(hands.numpy(), buffer.hands)


# -- ppo_update's knobs ---------------------------------------------------------------------------


def _counted_steps(model, batch, cfg) -> int:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    steps = []
    step = optimizer.step
    optimizer.step = lambda *a, **k: (steps.append(1), step(*a, **k))[1]
    ppo_update(model, optimizer, batch, cfg)
    return len(steps)


def test_update_runs_every_epoch_unless_approx_kl_passes_target_kl():
    """lr 0 keeps the rollout's ratios (not 1), so approx_kl > 0 after every minibatch."""
    torch.manual_seed(0)
    model = PolicyNet([16], action_features=0)
    batch, _, _ = batch_and_outputs(model)
    base = dict(update_epochs=3, num_minibatches=2)
    assert _counted_steps(model, batch, config(**base)) == 6
    assert _counted_steps(model, batch, config(**base, target_kl=10.0)) == 6
    assert _counted_steps(model, batch, config(**base, target_kl=1e-6)) == 2  # one epoch


def _step(module, update) -> torch.Tensor:
    """The change of ``module``'s parameters, flattened, made by ``update()``."""
    before = torch.cat([p.detach().flatten().clone() for p in module.parameters()])
    update()
    return torch.cat([p.detach().flatten() for p in module.parameters()]) - before


def test_vf_coef_scales_the_value_gradient():
    """No advantage and no entropy bonus: the value head moves by vf_coef times the value loss'
    gradient (plain SGD, no clipping)."""
    torch.manual_seed(1)
    model = PolicyNet([16], action_features=0)
    batch, _, _ = batch_and_outputs(model)
    batch["advantages"].zero_()

    def step_at(vf_coef):
        net = copy.deepcopy(model)
        cfg = config(vf_coef=vf_coef, clip_vloss=False, norm_adv=False, max_grad_norm=1e9)
        return _step(net.value_head, lambda: ppo_update(
            net, torch.optim.SGD(net.parameters(), lr=0.1), batch, cfg))
    assert_half_the_step_at_half_the_coefficient(step_at)


def test_hand_coef_scales_the_hand_guess_gradient():
    torch.manual_seed(2)
    model = PolicyNet([16], action_features=0)
    batch, _, _ = batch_and_outputs(model)
    states = [random_state(seed, 6 + seed) for seed in range(len(batch["actions"]))]
    batch["hands"] = torch.from_numpy(np.stack([hidden_hands(m, m.turn) for m in states]))
    guess = HandGuess(16)

    def step_at(coef):
        net, head = copy.deepcopy(model), copy.deepcopy(guess)
        optimizer = torch.optim.SGD(list(net.parameters()) + list(head.parameters()), lr=0.1)
        cfg = config(hand_coef=coef, max_grad_norm=1e9)
        return _step(head, lambda: ppo_update(net, optimizer, batch, cfg, guess=head))
    assert_half_the_step_at_half_the_coefficient(step_at)


def assert_half_the_step_at_half_the_coefficient(step_at) -> None:
    """SGD's step of the weights a loss term reaches is linear in that term's coefficient."""
    steps = {coef: step_at(coef) for coef in (0.5, 1.0)}
    assert steps[1.0].abs().max() > 1e-4
    torch.testing.assert_close(steps[0.5], 0.5 * steps[1.0], rtol=1e-4, atol=1e-7)


def test_gradients_are_clipped_to_max_grad_norm():
    """Plain SGD at lr 1 moves the weights by exactly the clipped gradient."""
    torch.manual_seed(3)
    model = PolicyNet([16], action_features=0)
    batch, _, _ = batch_and_outputs(model)
    step = _step(model, lambda: ppo_update(
        model, torch.optim.SGD(model.parameters(), lr=1.0), batch, config(max_grad_norm=1e-3)))
    assert float(step.norm()) == pytest.approx(1e-3, rel=1e-3)


def test_with_an_oracle_critic_the_value_loss_is_the_critic_s():
    torch.manual_seed(4)
    model, critic = PolicyNet([16], action_features=0), OracleCritic((16,))
    states = [random_state(seed, 6 + seed) for seed in range(8)]
    obs, masks, _, values, dist, actions = sampled(model, states)
    hands = torch.from_numpy(np.stack([hidden_hands(m, m.turn) for m in states]))
    returns = torch.linspace(-1.0, 1.0, 8)
    batch = {"obs": obs, "masks": masks, "actions": actions, "logprobs": dist.log_prob(actions),
             "advantages": torch.zeros(8), "values": values, "returns": returns,
             "hands": hands}
    with torch.no_grad():
        expected = 0.5 * float(((critic(obs, hands) - returns) ** 2).mean())
        assert expected != pytest.approx(0.5 * float(((values - returns) ** 2).mean()))
    optimizer = torch.optim.SGD(list(model.parameters()) + list(critic.parameters()), lr=0.0)
    stats = ppo_update(model, optimizer, batch, config(clip_vloss=False), critic)
    assert stats["losses/value_loss"] == pytest.approx(expected, rel=1e-5)


def test_each_epoch_trains_on_every_row_once_in_a_fresh_order():
    """CleanRL's minibatches: every epoch a new permutation of the rows, cut into
    ``num_minibatches`` parts (each row once an epoch; not the same order each epoch)."""
    torch.manual_seed(5)
    model = PolicyNet([16], action_features=0)
    batch, _, _ = batch_and_outputs(model)
    obs = batch["obs"]
    size = len(obs)
    assert len({tuple(row.tolist()) for row in obs}) == size   # rows told apart by their obs
    minibatches = []

    def record(module, inputs):
        (seen,) = inputs
        minibatches.append([int(torch.nonzero((obs == row).all(1))[0, 0]) for row in seen])

    model.trunk.register_forward_pre_hook(record)
    ppo_update(model, torch.optim.SGD(model.parameters(), lr=0.0), batch,
               config(update_epochs=2, num_minibatches=2))
    assert [len(rows) for rows in minibatches] == [size // 2] * 4
    epochs = [minibatches[0] + minibatches[1], minibatches[2] + minibatches[3]]
    for rows in epochs:
        assert sorted(rows) == list(range(size)), epochs
    assert epochs[0] != epochs[1]
    assert epochs[0] != list(range(size)) or epochs[1] != list(range(size))


def test_gradient_clipping_covers_the_oracle_critic_too():
    """One norm over every trained parameter (the policy's and the critic's, as CleanRL clips
    its one agent): plain SGD at lr 1 moves them together by exactly max_grad_norm."""
    torch.manual_seed(6)
    model, critic = PolicyNet([16], action_features=0), OracleCritic((16,))
    states = [random_state(seed, 6 + seed) for seed in range(8)]
    obs, masks, _, values, dist, actions = sampled(model, states)
    hands = torch.from_numpy(np.stack([hidden_hands(m, m.turn) for m in states]))
    batch = {"obs": obs, "masks": masks, "actions": actions, "logprobs": dist.log_prob(actions),
             "advantages": torch.linspace(-1.0, 1.0, 8), "values": values,
             "returns": torch.linspace(-3.0, 3.0, 8), "hands": hands}
    both = torch.nn.ModuleList([model, critic])
    optimizer = torch.optim.SGD(both.parameters(), lr=1.0)
    step = _step(both, lambda: ppo_update(model, optimizer, batch, config(max_grad_norm=1e-3),
                                          critic))
    assert float(step.norm()) == pytest.approx(1e-3, rel=1e-3)
    critic_size = sum(p.numel() for p in critic.parameters())
    assert float(step[-critic_size:].norm()) > 1e-5   # the critic moved too


def test_the_value_loss_trains_the_shared_trunk():
    """``critic: shared``: the value head sits on the policy's trunk, and its loss's gradient
    flows into the trunk (no advantage, no entropy bonus: the value loss is the only loss)."""
    torch.manual_seed(7)
    model = PolicyNet([16], action_features=0)
    batch, _, _ = batch_and_outputs(model)
    batch["advantages"].zero_()
    first = model.trunk[0].weight
    before = first.detach().clone()
    ppo_update(model, torch.optim.SGD(model.parameters(), lr=0.1), batch,
               config(vf_coef=1.0, ent_coef=0.0, clip_vloss=False, norm_adv=False,
                      max_grad_norm=1e9))
    assert float((first.detach() - before).abs().max()) > 1e-6


# -- minibatch statistics, the clipped value loss's gradient, explained variance -------------------


def test_advantages_are_normalised_within_each_minibatch_and_clipfrac_averages_them_all():
    """docs/training.md: per-minibatch advantage normalisation (CleanRL: ``mb_advantages`` are
    normalised, not the whole batch).  lr 0 keeps the rollout's ratios, so with two minibatches
    the reported policy loss and approx_kl are those of the last minibatch, computed here from
    its own rows, and clipfrac is the mean over every minibatch (here: the whole batch's share)."""
    torch.manual_seed(8)
    model = PolicyNet([16], action_features=0)
    batch, _, _ = batch_and_outputs(model)
    obs = batch["obs"]
    minibatches = []

    def record(module, inputs):
        (seen,) = inputs
        minibatches.append([int(torch.nonzero((obs == row).all(1))[0, 0]) for row in seen])

    model.trunk.register_forward_pre_hook(record)
    stats = ppo_update(model, torch.optim.SGD(model.parameters(), lr=0.0), batch,
                       config(num_minibatches=2))
    assert len(minibatches) == 2
    last = np.array(minibatches[-1])
    ratio, adv = RATIOS[last], ADVANTAGES[last]
    adv = (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8)
    policy_loss = np.maximum(-adv * ratio, -adv * np.clip(ratio, 0.8, 1.2)).mean()
    whole = (ADVANTAGES[last] - ADVANTAGES.mean()) / (ADVANTAGES.std(ddof=1) + 1e-8)
    assert policy_loss != pytest.approx(                # the check can tell the two apart
        np.maximum(-whole * ratio, -whole * np.clip(ratio, 0.8, 1.2)).mean(), rel=1e-3)
    assert stats["losses/policy_loss"] == pytest.approx(policy_loss, rel=1e-4)
    assert stats["losses/approx_kl"] == pytest.approx(np.mean(ratio - 1 - np.log(ratio)),
                                                      rel=1e-4)
    assert stats["losses/clipfrac"] == pytest.approx(np.mean(np.abs(RATIOS - 1) > 0.2))
    for rows in minibatches:   # 5 of 8 rows clipped: no minibatch of 4 has that share alone
        assert np.mean(np.abs(RATIOS[rows] - 1) > 0.2) != stats["losses/clipfrac"]


def test_inside_the_clip_range_the_clipped_value_loss_trains_like_the_unclipped_one():
    """CleanRL's clipped value loss ``max((v - R)^2, (old + clip(v - old) - R)^2)``: where the
    new value is within ``clip_coef`` of the rollout's, both terms are the same function of
    ``v`` and the gradient is the plain squared error's (plain SGD, no advantage, no entropy)."""
    torch.manual_seed(9)
    model = PolicyNet([16], action_features=0)
    batch, values, _ = batch_and_outputs(model)
    batch["advantages"].zero_()
    batch["values"] = torch.from_numpy(values).float()          # old values = the new ones

    def step_at(clip_vloss):
        net = copy.deepcopy(model)
        cfg = config(clip_vloss=clip_vloss, norm_adv=False, max_grad_norm=1e9)
        return _step(net.value_head, lambda: ppo_update(
            net, torch.optim.SGD(net.parameters(), lr=0.1), batch, cfg))
    unclipped = step_at(False)
    assert unclipped.abs().max() > 1e-4
    torch.testing.assert_close(step_at(True), unclipped, rtol=1e-4, atol=1e-7)


def test_explained_variance_is_nan_when_the_returns_do_not_vary():
    """CleanRL: ``np.nan if var_y == 0`` -- not a made-up 0 (or 1) when nothing is explained."""
    torch.manual_seed(10)
    model = PolicyNet([16], action_features=0)
    batch, _, _ = batch_and_outputs(model)
    batch["returns"] = torch.full_like(batch["returns"], 0.25)
    stats = ppo_update(model, torch.optim.SGD(model.parameters(), lr=0.0), batch, config())
    assert np.isnan(stats["losses/explained_variance"])


# -- the oracle critic ----------------------------------------------------------------------------


def test_the_oracle_critic_s_value_depends_on_the_hidden_hands():
    """training/critic.py: the critic reads the observation *plus* the other seats' hands, so
    one observation with two different splits of the hidden tiles gets two values, each the
    MLP of the concatenated input."""
    torch.manual_seed(11)
    critic = OracleCritic((16,))
    states = [random_state(seed, 6 + seed) for seed in range(4)]
    model = PolicyNet([16], action_features=0)
    obs = sampled(model, states)[0]
    hands = torch.from_numpy(np.stack([hidden_hands(m, m.turn) for m in states]))
    swapped = hands.reshape(4, 3, -1).flip(1).reshape(4, -1)   # the two opponents' swapped
    assert not torch.equal(hands, swapped)
    with torch.no_grad():
        values, other = critic(obs, hands), critic(obs, swapped)
        by_hand = critic.value_head(critic.trunk(torch.cat([obs, hands], -1))).squeeze(-1)
    assert values.shape == (4,)
    torch.testing.assert_close(values, by_hand)
    assert (values - other).abs().min() > 1e-6


def test_the_hidden_hands_are_those_of_the_left_opponent_partner_and_right_opponent():
    """The critic's (and the hand guess') extra input, pinned to the match: relative seats 1, 2, 3
    (seats ``(s + 1) % 4``, ``(s + 2) % 4``, ``(s + 3) % 4``, the observation's order), 28 bits
    each in tile order, in both engines' forms."""
    from training.batched_rollout import hidden_hands_batch

    for seed in range(3):
        match = random_state(seed, 4 + seed)
        for seat in range(4):
            expected = [[(match.hands[(seat + k) % 4] >> tile) & 1 for tile in range(28)]
                        for k in (1, 2, 3)]
            np.testing.assert_array_equal(hidden_hands(match, seat).reshape(3, 28), expected)
        batched = hidden_hands_batch(torch.tensor([match.hands] * 4), torch.arange(4))
        np.testing.assert_array_equal(
            batched.numpy(), np.stack([hidden_hands(match, seat) for seat in range(4)]))
