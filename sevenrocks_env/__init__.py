"""Seven Rocks: an exact rules engine and a PettingZoo AEC environment (``sevenrocks_v0``)."""

from . import sevenrocks_v0

__version__ = "0.1.0"


def load_policy(path, device: str = "cpu"):
    """Load a trained policy checkpoint as an agent (needs torch; see :mod:`sevenrocks_env.policy`)."""
    from .policy import load_policy as _load_policy

    return _load_policy(path, device=device)


__all__ = ["load_policy", "sevenrocks_v0", "__version__"]
from .registration import register as _register; _register()
