"""Seven Rocks, version 0: ``env()`` with PettingZoo's standard wrappers, ``raw_env`` the class.

See :mod:`sevenrocks_env.env` for the documentation page (observation, actions, rewards).
"""

from . import wrappers
from .env import raw_env


def env(**kwargs):
    """The env wrapped like PettingZoo's classic games: an illegal move ends the match with
    reward -1 for the mover, an action outside the action space is a ``TypeError`` or
    ``ValueError`` naming it (also an ``AssertionError``, as PettingZoo's wrapper raised), and
    call order is enforced.

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
    return wrappers.TurnBasedParallel(env(**kwargs))


def vector_env(num_envs: int = 4096, device="cpu", **kwargs):
    """``num_envs`` matches stepped together as torch tensors on ``device`` (CPU or GPU): the
    batched engine, :class:`sevenrocks_env.batched.VectorEnv` (see ``docs/vector.md``).

    Keyword arguments: ``target``, ``max_rounds``, ``reward`` (``"win"``, ``"points"``,
    ``"shaped"`` with ``points_scale``, ``win_reward``), ``records``, ``validate``,
    ``deal_streams``, ``compile``.  Importing
    this module does not import torch; calling this function does (without it: an
    ``ImportError`` naming the extra to install)."""
    from .extras import needs_torch

    with needs_torch("sevenrocks_v0.vector_env"):
        from .batched import VectorEnv  # torch is needed only here

    return VectorEnv(num_envs=num_envs, device=device, **kwargs)


__all__ = ["env", "parallel_env", "raw_env", "vector_env"]
