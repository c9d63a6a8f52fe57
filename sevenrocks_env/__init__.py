"""Seven Rocks: an exact rules engine and a PettingZoo AEC environment (``sevenrocks_v0``).

Importing the package registers ``sevenrocks/SevenRocks-v0`` with Gymnasium (the single-agent
view) and ``sevenrocks/sevenrocks-v0`` with PettingZoo's registry where it has one.
"""

from . import sevenrocks_v0
from .registration import register as _register

__version__ = "0.1.0"


def load_policy(path, device: str = "cpu", deterministic: bool = True,
                temperature: float = 1.0):
    """Load a trained policy checkpoint as an agent (needs torch; see :mod:`sevenrocks_env.policy`)."""
    from .extras import needs_torch

    with needs_torch("load_policy"):
        from .policy import load_policy as _load_policy

    return _load_policy(path, device=device, deterministic=deterministic,
                        temperature=temperature)


_register()

__all__ = ["load_policy", "sevenrocks_v0", "__version__"]
