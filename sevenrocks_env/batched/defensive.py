"""The ``search`` agent's ``defensive`` rollout move for many sampled worlds at once (R3-R5).

The batched twin of :func:`sevenrocks_env.agents.search.defensive_choice`: among the legal
placements of the seat on turn, the one maximising

1. the points it scores (R5) minus the most points the **next** seat's hand in that world could
   score in reply (0 if the placement goes out: the round ends, R7);
2. then the tile with the most pips;
3. then the lowest action number.

It reads the next seat's hidden hand, so it is for rollouts inside sampled worlds only, never for
a seat at the real table.  ``tests/test_batched_search.py`` checks it against
``defensive_choice`` on random worlds.
"""

from __future__ import annotations

import torch

from ..tiles import KNOCK
from . import layout
from .greedy import PIPS_SPAN, _tile_pips
from .state import BatchState

_NONE = torch.iinfo(torch.long).min
_ACTION_SPAN = 128  # > every action number


def defensive_actions(state: BatchState, mask: torch.Tensor, envs: torch.Tensor) -> torch.Tensor:
    """``LongTensor[len(envs)]``: the defensive move of the seat on turn in each of ``envs``.

    ``mask`` is the env's ``[B, 113]`` action mask; every env in ``envs`` must have more than one
    legal action (so the knock, legal only alone, is never among them).
    """
    rows, actions = torch.nonzero(mask[envs][:, :KNOCK], as_tuple=True)
    env = envs[rows]
    tile, slot = actions >> 2, actions & 3
    placements = state.placements[env]
    ends, end_double, started, spinner = layout.place_tiles(
        state.ends[env], state.end_double[env], state.branch_started[env], state.spinner[env],
        placements, tile, slot)
    points = layout.placement_points(layout.end_sum(ends, end_double, started))
    hands, turn = state.hands[env], state.turn[env]
    going_out = hands.gather(1, turn[:, None]).squeeze(1) == (torch.ones_like(tile) << tile)
    reply_hand = hands.gather(1, ((turn + 1) & 3)[:, None]).squeeze(1) * ~going_out
    # every placement of the reply hand on the layout after the move, and its points
    reply_mask = layout.legal_mask(reply_hand, ends, torch.zeros_like(going_out))
    r_rows, r_actions = torch.nonzero(reply_mask[:, :KNOCK], as_tuple=True)
    r_ends, r_double, r_started, _ = layout.place_tiles(
        ends[r_rows], end_double[r_rows], started[r_rows], spinner[r_rows],
        placements[r_rows] + 1, r_actions >> 2, r_actions & 3)
    r_points = layout.placement_points(layout.end_sum(r_ends, r_double, r_started))
    reply = torch.zeros_like(points).scatter_reduce(0, r_rows, r_points, "amax")
    key = (points - reply) * PIPS_SPAN + _tile_pips(mask.device)[tile]
    # one max per env over (key, -action): ties go to the lowest action number
    ranked = key * _ACTION_SPAN + (_ACTION_SPAN - 1 - actions)
    best = torch.full((len(envs),), _NONE, dtype=torch.long, device=mask.device)
    best = best.scatter_reduce(0, rows, ranked, "amax")
    return _ACTION_SPAN - 1 - best % _ACTION_SPAN


__all__ = ["defensive_actions"]
