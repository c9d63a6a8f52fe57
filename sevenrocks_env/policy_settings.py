"""A policy agent's settings, checked: the device it runs on, its sampling temperature, the seed
of its ``torch.Generator``, and the agent spec that names a sampling policy.

:class:`~sevenrocks_env.policy.PolicyAgent` and :func:`~sevenrocks_env.policy.load_policy`
check their arguments here, as do the agent spec parser, the policy-guided search agent and the
trainer, so a bad one is the same ``TypeError``/``ValueError`` everywhere;
:mod:`sevenrocks_env.policy` re-exports these names.
"""

from __future__ import annotations

import numbers

import torch

from .batched.inputs import checked_device
from .checks import checked_bool, is_int, shown


def generator_seed(seed: int) -> int:
    """``seed`` (any int, e.g. an arena's or the web page's up to 2**63 times 4) as a seed
    ``torch.Generator.manual_seed`` takes (``[0, 2**64)``); seeds in that range are unchanged."""
    return int(seed) % (1 << 64)


def policy_device(device) -> torch.device:
    """``device`` (a str or ``torch.device``) as one a policy can run on: the CPU or a CUDA
    device that is there (:func:`~sevenrocks_env.batched.inputs.checked_device`, as the arena
    and the trainer check theirs); ``TypeError`` or ``ValueError`` naming ``device`` otherwise
    (torch's were an ``AssertionError`` "Torch not compiled with CUDA enabled" and the like)."""
    if is_int(device, 0):  # torch's own shorthand: 1 is "cuda:1"
        device = torch.device("cuda", int(device))
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"device must be a str or torch.device ('cpu', 'cuda', 'cuda:1'), got "
                        f"{type(device).__name__} {shown(device)}")
    return checked_device(device)


#: The temperatures a sampling policy takes (``checked_temperature``).
TEMPERATURE_RANGE = (0.01, 100.0)


def checked_temperature(temperature, deterministic: bool = False) -> float:
    """``temperature`` (any real number type but bool) as a float in :data:`TEMPERATURE_RANGE`,
    and 1 for a ``deterministic`` policy (another was silently ignored); a ``ValueError`` saying
    so otherwise (0 would divide by zero, a NaN would make every action's probability NaN).
    ``deterministic`` must be a bool: a ``TypeError`` naming it otherwise (``None`` made a
    sampling policy, the string ``"False"`` a deterministic one)."""
    deterministic = checked_bool("deterministic", deterministic)
    low, high = TEMPERATURE_RANGE
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) \
            or not low <= temperature <= high:   # (False for NaN)
        hint = " (the most probable action, temperature 0: ckpt:PATH)" \
            if isinstance(temperature, numbers.Real) and temperature == 0 else ""
        raise ValueError(f"temperature must be a number in [{low:g}, {high:g}], got "
                         f"{temperature!r:.40}{hint}")
    if deterministic and temperature != 1.0:
        raise ValueError(f"temperature={temperature:g} applies to sampling: pass deterministic="
                         "False (a deterministic policy plays its most probable action)")
    return float(temperature)


def sampling_name(path, temperature: float = 1.0) -> str:
    """The agent spec of the policy at ``path`` sampling at ``temperature`` (its shortest text
    that reads back as the same float)."""
    return f"sample:policy={path}" + ("" if temperature == 1.0 else
                                      f",temperature={float(temperature)!r}")
