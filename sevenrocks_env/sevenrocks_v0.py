"""Seven Rocks, version 0: ``env()`` with PettingZoo's standard wrappers, ``raw_env`` the class.

See :mod:`sevenrocks_env.env` for the documentation page (observation, actions, rewards).
"""

from pettingzoo.utils.conversions import turn_based_aec_to_parallel

from . import wrappers
from .env import raw_env


def env(**kwargs):
    """The env wrapped like PettingZoo's classic games: an illegal move ends the match with
    reward -1 for the mover, out-of-range actions assert, and call order is enforced.

    The wrappers are PettingZoo's own classes (see :mod:`sevenrocks_env.wrappers` for why they
    are subclassed)."""
    wrapped = raw_env(**kwargs)
    wrapped = wrappers.TerminateIllegalWrapper(wrapped, illegal_reward=-1)
    wrapped = wrappers.AssertOutOfBoundsWrapper(wrapped)
    wrapped = wrappers.OrderEnforcingWrapper(wrapped)
    return wrapped


def parallel_env(**kwargs):
    """Parallel API view (PettingZoo's turn-based conversion): each step takes a dict of actions,
    of which only the acting agent's is used; every observation carries its action mask (all
    zeros for agents not on turn)."""
    return turn_based_aec_to_parallel(env(**kwargs))


__all__ = ["env", "parallel_env", "raw_env"]
