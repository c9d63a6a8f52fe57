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


def assert_unseeded_agents_draw_fresh_seeds(first, second) -> None:
    """``seed(None)`` gives two sampling agents different generator seeds (a fixed 0 made every
    unseeded agent repeat the same moves); ``seed(7)`` gives both 7."""
    first.seed(None)
    second.seed(None)
    assert first._generator.initial_seed() != second._generator.initial_seed()
    first.seed(7)
    second.seed(7)
    assert first._generator.initial_seed() == second._generator.initial_seed() == 7

