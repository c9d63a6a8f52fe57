"""What callers hand the batched engine, checked before it changes anything: the device, a
tensor's layout, shape, dtype and device, and the rows a state's matches are taken from.  (An
explicit deal is tested as tensors by ``VectorEnv``, and
:func:`~sevenrocks_env.match_state.deal_problem` words the first bad env's problem.)"""

from __future__ import annotations

import torch

from ..checks import shown
from ..rules import legal_actions
from ..tiles import KNOCK, describe_action


def checked_device(device) -> torch.device:
    """``device`` as a ``torch.device`` the engine can run on: the CPU (``"cpu:0"`` is plain
    ``"cpu"``), or a CUDA device that is there (``"cuda"`` means the current one);
    ``ValueError`` otherwise, in words."""
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError):  # torch's words list some 20 device types we cannot use
        raise ValueError(f"device {shown(device)}: sevenrocks runs on 'cpu' or 'cuda' (or "
                         "'cuda:N', a torch.device of either)") from None
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


def _check_dense(name: str, value, expected: str) -> None:
    """``value`` is a dense (strided) tensor: ``TypeError`` naming ``name`` otherwise (a sparse
    one has a shape, dtype and device, and failed inside torch at its first comparison)."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name}: expected {expected}, got {type(value).__name__}")
    if value.layout is not torch.strided:
        raise TypeError(f"{name}: expected a dense tensor, got layout {value.layout} "
                        f"(pass .to_dense())")


def check_tensor(name: str, value, shape: tuple, dtype: torch.dtype, device: torch.device):
    """``value`` is a dense tensor of ``shape``, ``dtype`` and ``device``: a ``TypeError`` or
    ``ValueError`` naming ``name`` and what was expected otherwise (no synchronisation)."""
    _check_dense(name, value, f"a torch.Tensor of shape {list(shape)} dtype {dtype}")
    if tuple(value.shape) != shape:
        raise ValueError(f"{name}: expected shape {list(shape)}, got {list(value.shape)}")
    if value.dtype != dtype:
        raise TypeError(f"{name}: expected dtype {dtype}, got {value.dtype}")
    if value.device != device:
        raise ValueError(f"{name}: expected a tensor on device {device}, got {value.device}")


def check_rows(rows, num_envs: int, device: torch.device) -> None:
    """``rows`` picks matches of a state of ``num_envs`` on ``device``: a 1-D ``torch.long`` (or
    ``torch.int32``) tensor of row indices in ``[0, num_envs)``, repeats allowed, or a
    ``BoolTensor[num_envs]`` mask; a ``TypeError`` or ``ValueError`` saying what is wrong
    otherwise.  The range costs one synchronisation (a negative index would pick from the end;
    on a GPU one past it is a device-side assert)."""
    _check_dense("rows", rows, f"a 1-D LongTensor of row indices or a BoolTensor[{num_envs}]")
    if rows.dtype not in (torch.long, torch.int32, torch.bool):
        raise TypeError(f"rows: expected dtype torch.int64, torch.int32 or torch.bool, got "
                        f"{rows.dtype}")
    if rows.dim() != 1 or (rows.dtype == torch.bool and rows.numel() != num_envs):
        raise ValueError(f"rows: expected shape [n] (or [{num_envs}] for a bool mask), got "
                         f"{list(rows.shape)}")
    if rows.device != device:
        raise ValueError(f"rows: expected a tensor on device {device}, got {rows.device}")
    if rows.dtype != torch.bool and rows.numel():
        low, high = torch.aminmax(rows)
        if bool((low < 0) | (high >= num_envs)):  # the one synchronisation
            bad = int(rows[(rows < 0) | (rows >= num_envs)][0])
            raise ValueError(f"rows: row {bad} is not in [0, {num_envs - 1}] (the state holds "
                             f"{num_envs} matches)")


def check_action_range(actions: torch.Tensor) -> None:
    """Refuse an action outside ``[0, KNOCK]`` (one synchronisation), naming the first env."""
    low, high = torch.aminmax(actions)
    if bool((low >= 0) & (high <= KNOCK)):  # one synchronisation
        return
    outside = ((actions < 0) | (actions > KNOCK)).nonzero().squeeze(1).tolist()
    if outside:
        raise ValueError(f"action {int(actions[outside[0]])} for env {outside[0]} is not in "
                         f"[0, {KNOCK}] (validate=False checks the range only, and legality "
                         f"never)")


def check_legal(actions: torch.Tensor, words: torch.Tensor, turn: torch.Tensor, match_of) -> None:
    """Refuse an action that is not legal (one synchronisation), naming the first such env, its
    seat (``turn``), the action and the legal set (from ``match_of(env)``, a ``rules.Match``).
    ``words``: the legal sets as ``layout.legal_words`` packs them -- action ``a`` is bit
    ``a % 64`` of word ``a // 64``."""
    clamped = actions.clamp(0, KNOCK)
    words = words.gather(1, (clamped >> 6)[:, None]).squeeze(1)
    legal = ((words >> (clamped & 63)) & 1).bool() & (clamped == actions)
    if bool(legal.all()):  # the one synchronisation
        return
    bad = (~legal).nonzero().squeeze(1).tolist()
    env = bad[0]
    action = int(actions[env])
    named = f"{action} ({describe_action(action)})" if 0 <= action <= KNOCK else str(action)
    legal_set = ", ".join(f"{a} ({describe_action(a)})" for a in legal_actions(match_of(env)))
    more = f" (and {len(bad) - 1} other env{'s' if len(bad) > 2 else ''})" if len(bad) > 1 else ""
    raise ValueError(f"illegal action {named} for env {env}, seat {int(turn[env])}{more}; "
                     f"legal actions: [{legal_set}]")


__all__ = ["check_action_range", "check_legal", "check_rows", "check_tensor", "checked_device"]
