"""Policy files for the checkpoint and shipping tests."""

import numpy as np
import torch

from training.checkpoint import policy_entries, save_checkpoint
from sevenrocks_env.policy import PolicyNet, probe_positions

#: An error message is a line, not a dump of the input.
MESSAGE_LIMIT = 2000


def save_policy(path, net=None, **changes):
    data = policy_entries(net if net is not None else PolicyNet([16]), 0)
    data.update(changes)
    save_checkpoint(path, data)
    return path


def save_policy_gone_non_finite(path, seen=(), hidden=(16,), action_features: int = 0):
    """A policy whose first layer is huge (3e38) on the inputs that are zero at every position
    the load check tries (``policy.probe_positions``) and at ``seen`` (observations): it loads,
    and overflows to non-finite outputs at a later position -- a hostile checkpoint."""
    positions = [probe_positions()[0].numpy(), *(np.asarray(obs)[None] for obs in seen)]
    zero = np.flatnonzero(np.all(np.concatenate(positions) == 0, axis=0))
    net = PolicyNet(list(hidden), action_features=action_features)
    with torch.no_grad():
        net.trunk[0].weight[:, zero] = 3e38
    save_checkpoint(path, policy_entries(net, 0))
    return path


def assert_unseeded_agents_draw_fresh_seeds(first, second) -> None:
    """``seed(None)`` gives two sampling agents different generator seeds (a fixed 0 made every
    unseeded agent repeat the same moves); ``seed(7)`` gives both 7."""
    first.seed(None)
    second.seed(None)
    assert first._generator.initial_seed() != second._generator.initial_seed()
    first.seed(7)
    second.seed(7)
    assert first._generator.initial_seed() == second._generator.initial_seed() == 7


def trained_looking(network: PolicyNet) -> PolicyNet:
    """``network`` with every weight drawn at random: a fresh network's heads start near 0,
    which hides units the widening connected wrongly or a per-action term computed wrongly."""
    with torch.no_grad():
        for parameter in network.parameters():
            parameter.normal_(0, 0.3)
    return network.eval()
