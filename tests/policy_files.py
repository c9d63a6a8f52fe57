"""Policy files for the checkpoint and shipping tests."""

from training.checkpoint import policy_entries, save_checkpoint
from sevenrocks_env.policy import PolicyNet

#: An error message is a line, not a dump of the input.
MESSAGE_LIMIT = 2000


def save_policy(path, net=None, **changes):
    data = policy_entries(net if net is not None else PolicyNet([16]), 0)
    data.update(changes)
    save_checkpoint(path, data)
    return path
