"""Registering Seven Rocks with the standard registries (done by ``import sevenrocks_env``).

| registry                         | id                          | makes                                    |
|----------------------------------|-----------------------------|------------------------------------------|
| Gymnasium                        | ``sevenrocks/SevenRocks-v0`` | :class:`~sevenrocks_env.single_agent.SingleAgentEnv` |
| PettingZoo ``"aec"`` (>= 1.27)   | ``sevenrocks/sevenrocks-v0`` | ``sevenrocks_v0.env(**kwargs)``          |
| PettingZoo ``"parallel"`` (>= 1.27) | ``sevenrocks/sevenrocks-v0`` | ``sevenrocks_v0.parallel_env(**kwargs)`` |

    import gymnasium, pettingzoo, sevenrocks_env
    env = gymnasium.make("sevenrocks/SevenRocks-v0", opponents="heuristic", seat=0, partner="self")
    aec = pettingzoo.make("aec", "sevenrocks/sevenrocks-v0")          # PettingZoo >= 1.27 only
    par = pettingzoo.make("parallel", "sevenrocks/sevenrocks-v0")

``gymnasium.make("sevenrocks_env:sevenrocks/SevenRocks-v0")`` also works without importing first
(Gymnasium imports the module before the id).  Keyword arguments pass through unchanged, e.g.
``reward="shaped", points_scale=0.01, win_reward=1.0`` (:mod:`sevenrocks_env.rewards`) or the
single-agent view's ``illegal_action="raise"``.  PettingZoo releases before 1.27 have no registry;
there ``sevenrocks_v0.env()`` is the way in.  Registering twice is a no-op.
"""

from __future__ import annotations

import gymnasium

GYMNASIUM_ID = "sevenrocks/SevenRocks-v0"
PETTINGZOO_ID = "sevenrocks/sevenrocks-v0"


def _aec_env(max_cycles=None, **kwargs):
    """``sevenrocks_v0.env``; refuses PettingZoo's ``max_cycles`` (a match is cut by ``max_rounds``)."""
    if max_cycles is not None:
        raise ValueError("sevenrocks_v0 has no max_cycles: truncate matches with max_rounds=N")
    from .sevenrocks_v0 import env

    return env(**kwargs)


def _parallel_env(max_cycles=None, **kwargs):
    """``sevenrocks_v0.parallel_env`` (see :func:`_aec_env` about ``max_cycles``)."""
    if max_cycles is not None:
        raise ValueError("sevenrocks_v0 has no max_cycles: truncate matches with max_rounds=N")
    from .sevenrocks_v0 import parallel_env

    return parallel_env(**kwargs)


def pettingzoo_has_registry() -> bool:
    """Whether the installed PettingZoo has ``pettingzoo.make``/``register`` (1.27 and later)."""
    import pettingzoo

    return hasattr(pettingzoo, "register") and hasattr(pettingzoo, "aec_registry")


def register() -> None:
    """Register the Gymnasium id and, where PettingZoo has a registry, the AEC and parallel ids."""
    if GYMNASIUM_ID not in gymnasium.registry:
        gymnasium.register(id=GYMNASIUM_ID, entry_point="sevenrocks_env.single_agent:SingleAgentEnv",
                           disable_env_checker=False)
    if pettingzoo_has_registry():
        import pettingzoo

        if PETTINGZOO_ID not in pettingzoo.aec_registry:
            pettingzoo.register("aec", PETTINGZOO_ID, entry_point=_aec_env)
        if PETTINGZOO_ID not in pettingzoo.parallel_registry:
            pettingzoo.register("parallel", PETTINGZOO_ID, entry_point=_parallel_env)


__all__ = ["GYMNASIUM_ID", "PETTINGZOO_ID", "pettingzoo_has_registry", "register"]
