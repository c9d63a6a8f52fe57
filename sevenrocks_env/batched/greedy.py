"""``greedy`` for many matches at once: the action :class:`~sevenrocks_env.agents.greedy.GreedyAgent`
picks, computed from the batched state's layout with :mod:`.layout` (R3-R5).

Order of preference among the legal actions, as in ``agents/greedy.py``:

1. the most points the placement scores (R5);
2. then the tile with the most pips (R7);
3. then the lowest action number.

A knock is chosen only when it is the one legal action (R6).  Only public information is read:
the layout (ends, doubles, started branches, spinner, placements) and the seat's action mask.
``tests/test_arena_batched.py`` checks the choice against ``GreedyAgent`` on random states.
"""

from __future__ import annotations

import torch

from ..tiles import KNOCK, NUM_ACTIONS, TILE_PIPS
from . import layout
from .state import BatchState

#: The key is ``points * PIPS_SPAN + pips``: pips (at most 12) never outweigh a point step (5).
PIPS_SPAN = 16

_PIPS: dict[torch.device, torch.Tensor] = {}


def _tile_pips(device: torch.device) -> torch.Tensor:
    if device not in _PIPS:
        _PIPS[device] = torch.tensor(TILE_PIPS, dtype=torch.long, device=device)
    return _PIPS[device]


def placement_points(state: BatchState, envs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """``[P]`` points placement ``actions[p]`` (< 112, legal) would score in env ``envs[p]``
    (R5), from :func:`.layout.place_tiles` and :func:`.layout.end_sum`."""
    ends, end_double, started, _ = layout.place_tiles(
        state.ends[envs], state.end_double[envs], state.branch_started[envs],
        state.spinner[envs], state.placements[envs], actions >> 2, actions & 3)
    return layout.placement_points(layout.end_sum(ends, end_double, started))


def greedy_actions(state: BatchState, mask: torch.Tensor, envs: torch.Tensor) -> torch.Tensor:
    """``LongTensor[len(envs)]``: greedy's action for the seat on turn in each of ``envs``.

    ``mask`` is the env's ``[B, 113]`` action mask (the seats on turn's legal actions).
    """
    legal = mask[envs]                                             # [N, 113]
    rows, actions = torch.nonzero(legal[:, :KNOCK], as_tuple=True)
    points = placement_points(state, envs[rows], actions)
    key = torch.full((len(envs), NUM_ACTIONS), -1, dtype=torch.long, device=mask.device)
    key[rows, actions] = points * PIPS_SPAN + _tile_pips(mask.device)[actions >> 2]
    key[:, KNOCK] = legal[:, KNOCK].long() - 1                     # 0 when legal (then alone)
    return key.argmax(1)  # the first maximum: ties go to the lowest action number


__all__ = ["PIPS_SPAN", "greedy_actions", "placement_points"]
