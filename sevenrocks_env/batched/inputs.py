"""What callers hand the batched engine, checked before it changes anything: the device, a
tensor's shape, dtype and device, and an explicit deal (R1, R2)."""

from __future__ import annotations

import itertools

import torch

from ..checks import shown
from ..tiles import ALL_TILES, tile_name, tiles_of


def checked_device(device) -> torch.device:
    """``device`` as a ``torch.device`` the engine can run on: the CPU (``"cpu:0"`` is plain
    ``"cpu"``), or a CUDA device that is there (``"cuda"`` means the current one);
    ``ValueError`` otherwise, in words."""
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError) as error:
        raise ValueError(f"device {shown(device)}: {str(error)[:120]}") from None
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"device {str(device)!r}: sevenrocks runs on 'cpu' or 'cuda' (the batched "
                         "engine, and policies, whose action features use it)")
    if device.type == "cpu":  # torch puts CPU tensors on plain "cpu" whatever index is asked for
        return torch.device("cpu")
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device {str(device)!r}: CUDA is not available here")
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        elif device.index >= torch.cuda.device_count():
            raise ValueError(f"device {str(device)!r}: this machine has "
                             f"{torch.cuda.device_count()} CUDA device(s)")
    return device


def deal_problem(hands: list[int], opener: int) -> str:
    """What is wrong with one env's deal (it failed the batched check), in tile names."""
    def names(mask: int) -> str:
        return " ".join(tile_name(tile) for tile in tiles_of(mask))
    for seat, hand in enumerate(hands):
        if not 0 <= hand <= ALL_TILES:
            return f"seat {seat}'s hand {hand} is not a set of the 28 tiles (0 to 2**28 - 1)"
    for seat, other in itertools.combinations(range(4), 2):
        if hands[seat] & hands[other]:
            return f"seats {seat} and {other} both hold {names(hands[seat] & hands[other])}"
    for seat, hand in enumerate(hands):
        if hand.bit_count() != 7:
            return f"seat {seat} holds {hand.bit_count()} tiles ({names(hand) or 'none'}), not 7"
    if not 0 <= opener <= 3:
        return f"the opener is {opener}, not a seat 0-3"
    return "its hands are not a deal"  # not reached: the checks above cover the batched one


def check_tensor(name: str, value, shape: tuple, dtype: torch.dtype, device: torch.device):
    """``value`` is a tensor of ``shape``, ``dtype`` and ``device``: a ``TypeError`` or
    ``ValueError`` naming ``name`` and what was expected otherwise (no synchronisation)."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor of shape {list(shape)} dtype {dtype}, "
                        f"got {type(value).__name__}")
    if tuple(value.shape) != shape:
        raise ValueError(f"{name}: expected shape {list(shape)}, got {list(value.shape)}")
    if value.dtype != dtype:
        raise TypeError(f"{name}: expected dtype {dtype}, got {value.dtype}")
    if value.device != device:
        raise ValueError(f"{name}: expected a tensor on device {device}, got {value.device}")
