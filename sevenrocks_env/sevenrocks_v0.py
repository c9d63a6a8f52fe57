"""Seven Rocks, version 0: ``env()`` with PettingZoo's standard wrappers, ``raw_env`` the class.

See :mod:`sevenrocks_env.env` for the documentation page (observation, actions, rewards).
"""

from pettingzoo.utils import wrappers

from .env import raw_env


def env(**kwargs):
    """The env wrapped like PettingZoo's classic games: an illegal move ends the match with
    reward -1 for the mover, out-of-range actions assert, and call order is enforced."""
    wrapped = raw_env(**kwargs)
    wrapped = wrappers.TerminateIllegalWrapper(wrapped, illegal_reward=-1)
    wrapped = wrappers.AssertOutOfBoundsWrapper(wrapped)
    wrapped = wrappers.OrderEnforcingWrapper(wrapped)
    return wrapped


__all__ = ["env", "raw_env"]
