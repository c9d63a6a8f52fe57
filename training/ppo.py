"""PPO's two computations: GAE over per-seat trajectories and the clipped-objective update.

Read top to bottom like CleanRL's ``ppo.py``; the only difference is that a transition's successor
is ``next_index`` (the same seat's next decision, see :mod:`training.seats`) instead of the
next row of a ``[steps, envs]`` array.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from sevenrocks_env.policy import MASKED_LOGIT, MaskedCategorical


def compute_gae(rewards, values, dones, next_index, bootstrap, gamma: float, gae_lambda: float):
    """Generalised advantage estimation along linked trajectories.

    For transition ``t`` with successor ``n = next_index[t]``::

        next_value = 0 if dones[t] else values[n] if n >= 0 else bootstrap[t]
        delta[t]   = rewards[t] + gamma * next_value - values[t]
        adv[t]     = delta[t] + gamma * lambda * adv[n]   (adv[n] = 0 when done or cut)

    Successors always come later in the arrays, so one backward pass suffices.
    Returns ``(advantages, returns)`` with ``returns = advantages + values``.
    """
    size = len(rewards)
    advantages = np.zeros(size, dtype=np.float32)
    for t in range(size - 1, -1, -1):
        n = next_index[t]
        if dones[t]:
            next_value, next_adv = 0.0, 0.0
        elif n >= 0:
            next_value, next_adv = values[n], advantages[n]
        else:
            next_value, next_adv = bootstrap[t], 0.0
        delta = rewards[t] + gamma * next_value - values[t]
        advantages[t] = delta + gamma * gae_lambda * next_adv
    return advantages, advantages + np.asarray(values, dtype=np.float32)


class DivergenceError(FloatingPointError):
    """The PPO loss or its gradients were not finite: training diverged.  Raised before the
    optimizer step, so the weights are still those the last update left."""


class LogitsError(DivergenceError):
    """A rollout's policy outputs were not usable (not finite, or legal actions' logits down at
    the mask's scale): the network as the last update (or the start of the run: ``init_from``,
    ``--resume``) left it."""


def check_logits(logits: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """``logits`` (a rollout's policy outputs), or :class:`LogitsError` counting the rows that
    are not finite (sampling them fails deep inside, or picks an action past the knock) or,
    given the legal-action ``mask``, whose legal logits are at or below half the mask's
    ``MASKED_LOGIT`` (the masked distribution could then draw an illegal action, as
    ``sevenrocks_env.policy`` refuses to load such a network)."""
    bad = ~torch.isfinite(logits).all(1)
    if mask is not None:
        bad |= (mask.bool() & (logits <= MASKED_LOGIT / 2)).any(1)
    if bool(bad.any()):
        what = "not finite" if mask is None else \
            f"not finite, or for legal actions at or below {MASKED_LOGIT / 2:g},"
        raise LogitsError(f"the policy's logits are {what} in {int(bad.sum())} of "
                          f"{len(logits)} rows")
    return logits


def _check_finite(loss, pg_loss, v_loss, entropy_loss, epoch: int, start: int) -> None:
    """One synchronisation a minibatch: ``DivergenceError`` naming the parts that are not
    finite (the optimizer step would write NaN into every weight)."""
    if bool(torch.isfinite(loss)):
        return
    parts = {"policy loss": pg_loss, "value loss": v_loss, "entropy": entropy_loss}
    bad = ", ".join(f"{name} {float(value.detach())}" for name, value in parts.items()
                    if not bool(torch.isfinite(value)))
    raise DivergenceError(f"the PPO loss is not finite ({bad or float(loss.detach())}) in epoch "
                          f"{epoch + 1}, minibatch at {start}")


def trained_parameters(*networks) -> list:
    """The parameters the optimizer holds, in its order: those of each network given, ``None``s
    skipped (the policy, the oracle critic, the hand-guess head: ``networks.build_networks``)."""
    return [p for network in networks if network is not None for p in network.parameters()]


def rollout_batch(buffer, advantages, returns, device="cpu", hands: bool = False) -> dict:
    """The tensors :func:`ppo_update` trains on, on ``device``: the rollout buffer's arrays (a
    :class:`training.seats.RolloutBuffer`; views of them on the CPU) and GAE's output, with the
    hidden ``hands`` only when asked (an oracle critic reads them)."""
    arrays = {"obs": buffer.obs, "masks": buffer.masks, "actions": buffer.actions,
              "logprobs": buffer.logprobs, "values": buffer.values, "advantages": advantages,
              "returns": returns, **({"hands": buffer.hands} if hands else {})}
    return {key: torch.from_numpy(array).to(device) for key, array in arrays.items()}


def ppo_update(model: nn.Module, optimizer: torch.optim.Optimizer, batch: dict, cfg,
               critic: nn.Module | None = None, ent_coef: float | None = None,
               guess: nn.Module | None = None) -> dict:
    """Minibatch epochs of the clipped PPO objective; returns the CleanRL loss statistics.

    ``ent_coef`` is this update's entropy coefficient (the trainer's schedule,
    ``TrainConfig.ent_coef_at``); ``None``: ``cfg.ent_coef``.

    ``batch`` holds tensors ``obs, masks, actions, logprobs, values, advantages, returns`` (and
    ``hands`` with an oracle ``critic``, which then gives the values instead of the model's
    value head), on the networks' device
    (:func:`rollout_batch`).  With ``guess`` (a :class:`training.hand_guess.HandGuess`, which also
    reads ``hands``) its loss on the policy's trunk, times ``cfg.hand_coef``, is added to PPO's.
    The optimizer holds every given network's parameters (:func:`trained_parameters`).  The
    minibatch order is drawn on the CPU generator whatever the
    device, so a seed shuffles alike everywhere (and ``--resume`` restores it).
    """
    ent_coef = cfg.ent_coef if ent_coef is None else ent_coef
    size = len(batch["actions"])
    minibatch_size = size // cfg.num_minibatches
    clipfracs, approx_kl = [], torch.tensor(0.0)
    model.train()
    parameters = trained_parameters(model, critic, guess)
    guess_losses, guess_accuracies = [], []
    features = None
    if getattr(model, "action_features", None) is not None:  # no gradient: compute once
        with torch.no_grad():
            features = model.legal_features(batch["obs"], batch["masks"])
    for epoch in range(cfg.update_epochs):
        order = torch.randperm(size).to(batch["actions"].device)
        for start in range(0, size, minibatch_size):
            mb = order[start:start + minibatch_size]
            obs, masks = batch["obs"][mb], batch["masks"][mb]
            hands = batch["hands"][mb] if "hands" in batch else None
            hidden = model.trunk(obs)
            logits, new_values = model.heads(hidden, obs, masks, None if features is None else
                                             (features[0][mb], features[1][mb]))
            if critic is not None:
                new_values = critic(obs, hands)
            dist = MaskedCategorical(logits, masks)
            new_logprobs = dist.log_prob(batch["actions"][mb])
            entropy = dist.entropy()
            log_ratio = new_logprobs - batch["logprobs"][mb]
            ratio = log_ratio.exp()
            with torch.no_grad():
                approx_kl = ((ratio - 1) - log_ratio).mean()  # http://joschu.net/blog/kl-approx.html
                clipfracs.append(((ratio - 1.0).abs() > cfg.clip_coef).float().mean().item())

            advantages = batch["advantages"][mb]
            if cfg.norm_adv:
                advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)

            # policy loss: the clipped surrogate
            pg_loss1 = -advantages * ratio
            pg_loss2 = -advantages * torch.clamp(ratio, 1 - cfg.clip_coef, 1 + cfg.clip_coef)
            pg_loss = torch.max(pg_loss1, pg_loss2).mean()

            # value loss, optionally clipped around the rollout's values
            returns, old_values = batch["returns"][mb], batch["values"][mb]
            if cfg.clip_vloss:
                v_loss_unclipped = (new_values - returns) ** 2
                v_clipped = old_values + torch.clamp(new_values - old_values,
                                                     -cfg.clip_coef, cfg.clip_coef)
                v_loss_clipped = (v_clipped - returns) ** 2
                v_loss = 0.5 * torch.max(v_loss_unclipped, v_loss_clipped).mean()
            else:
                v_loss = 0.5 * ((new_values - returns) ** 2).mean()

            entropy_loss = entropy.mean()
            loss = pg_loss - ent_coef * entropy_loss + v_loss * cfg.vf_coef
            if guess is not None:  # the auxiliary task (training/hand_guess.py)
                guess_loss, guess_accuracy = guess.loss(hidden, hands)
                loss = loss + cfg.hand_coef * guess_loss
                guess_losses.append(guess_loss.detach())
                guess_accuracies.append(guess_accuracy)

            _check_finite(loss, pg_loss, v_loss, entropy_loss, epoch, start)
            optimizer.zero_grad()
            loss.backward()
            try:
                nn.utils.clip_grad_norm_(parameters, cfg.max_grad_norm, error_if_nonfinite=True)
            except RuntimeError:  # torch's message names no part of the model
                raise DivergenceError(f"the PPO gradients are not finite in epoch {epoch + 1}, "
                                      f"minibatch at {start}") from None
            optimizer.step()

        if cfg.target_kl and approx_kl > cfg.target_kl:
            break
    model.eval()

    y_pred, y_true = batch["values"].cpu().numpy(), batch["returns"].cpu().numpy()
    var_y = np.var(y_true)
    explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y
    guessed = {} if guess is None else {
        "losses/hand_guess_loss": float(torch.stack(guess_losses).mean()),
        "charts/hand_guess_accuracy": float(torch.stack(guess_accuracies).mean())}
    return {
        **guessed,
        "losses/value_loss": v_loss.item(),
        "losses/policy_loss": pg_loss.item(),
        "losses/entropy": entropy_loss.item(),
        "losses/approx_kl": approx_kl.item(),
        "losses/clipfrac": float(np.mean(clipfracs)),
        "losses/explained_variance": float(explained_var),
    }
