"""``heuristic`` for many matches at once: :class:`~sevenrocks_env.agents.heuristic.HeuristicAgent`'s
values and choice, computed from the batched state with :mod:`.layout` (R3-R7).

For every legal placement of the seat on turn (module docstring of ``agents/heuristic.py``)::

    value = points - threat * E[left opponent's best reply] + partner * E[partner's best reply]
            + knock * P(left opponent must knock) + control * fitting tiles kept / hand size
            + pips * pips + double * [double]           (all but the points: only if tiles remain)

Only what the seat may know is read: its hand, the tiles played, every seat's tile count, the
numbers each seat showed it lacks by knocking, the layout.  The arithmetic is the Python agent's,
in float64 and in the same order (sequential products and sums, :func:`torch.cumprod` /
:func:`torch.cumsum`), so on CPU the values are equal and so are the choices, ties included
(``tests/test_batched_heuristic.py``; on a GPU the scans may round differently in the last bit,
which the choice's 1e-9 tolerance absorbs: ``test_cuda_gives_the_same_choices_as_the_cpu``, run
by ``benchmarks/gpu_checks.sh``).  A reply's points come from the policy features' reply
table (:func:`sevenrocks_env.policy_features.reply_table`, tied to the rules by its own test).
"""

from __future__ import annotations

import torch

from ..agents.heuristic import HeuristicWeights
from ..policy_features import fits_table, reply_table
from ..tiles import KNOCK, NUM_TILES, TILE_IS_DOUBLE, TILE_PIPS
from . import layout
from .state import BatchState
from .tables import tables

#: The opponent and partner, relative to the seat on turn; and every hidden seat.
LEFT_OPPONENT, PARTNER, HIDDEN = 1, 2, (1, 2, 3)
_TABLES: dict[torch.device, dict] = {}


def _tables(device: torch.device) -> dict:
    if device not in _TABLES:
        bits = 1 << torch.arange(NUM_TILES)
        _TABLES[device] = {  # number_set_tiles: the tiles showing a number of each 7-bit set
            "number_set_tiles": (fits_table().long() * bits).sum(1).to(device),
            "bits": bits.to(device),
            "reply_points": reply_table().double().to(device),         # [37 * 7 + 1, 28]
            "pips": torch.tensor(TILE_PIPS, dtype=torch.float64, device=device),
            "double": torch.tensor(TILE_IS_DOUBLE, dtype=torch.float64, device=device),
        }
    return _TABLES[device]


def _tile_flags(sets: torch.Tensor, bits: torch.Tensor) -> torch.Tensor:
    """``[..., 28]`` bool of 28-bit tile sets."""
    return (sets.unsqueeze(-1) & bits) != 0


def heuristic_values(state: BatchState, mask: torch.Tensor, envs: torch.Tensor,
                     weights: HeuristicWeights = HeuristicWeights()):
    """``(rows, actions, values)``: every legal placement ``actions[p]`` of env ``envs[rows[p]]``
    (ascending actions within a row) and its float64 value, as ``HeuristicAgent.values``."""
    t = _tables(mask.device)
    rows, actions = torch.nonzero(mask[envs][:, :KNOCK], as_tuple=True)
    seat = state.turn[envs]
    hands = state.hands[envs]
    hand = hands.gather(1, seat[:, None]).squeeze(1)                               # [N]

    # -- what the seat knows of the hidden seats: counts, voids, the odds of each tile (per env)
    unseen = ((1 << NUM_TILES) - 1) & ~hand & ~state.played[envs]
    hidden = (seat[:, None] + torch.tensor(HIDDEN, device=mask.device)) & 3       # [N, 3]
    counts = layout.popcount(hands.gather(1, hidden)).double()                    # [N, 3]
    excluded = t["number_set_tiles"][state.voids[envs].gather(1, hidden)]         # [N, 3]
    may_hold = _tile_flags(unseen[:, None] & ~excluded, t["bits"])              # [N, 3, 28]
    share = (counts[:, :, None] * ~_tile_flags(excluded, t["bits"])).sum(1)       # [N, 28]
    odds = torch.where(may_hold & (counts[:, :, None] > 0),
                       counts[:, :, None] / share.clamp(min=1.0)[:, None], 0.0)   # [N, 3, 28]
    odds, hand, env, tile = odds[rows], hand[rows], envs[rows], actions >> 2     # per placement

    # -- the layout after each placement, its points, the replies on it -----------------------
    ends, end_double, started, _ = layout.place_tiles(
        state.ends[env], state.end_double[env], state.branch_started[env], state.spinner[env],
        state.placements[env], tile, actions & 3)
    points = layout.placement_points(layout.end_sum(ends, end_double, started)).double()
    matching = layout.matching_tiles(ends)
    fitting = _tile_flags(matching, t["bits"])                                    # [P, 28]
    best = _best_replies(ends, end_double, started, t)                           # [P, 28]
    opponent, partner = odds[:, LEFT_OPPONENT - 1], odds[:, PARTNER - 1]

    rest = hand & ~t["bits"][tile]
    hand_size = layout.popcount(hand).double()
    kept = layout.popcount(rest & matching).double()
    w = weights
    value = points - w.threat * _expected_best(best, opponent, fitting)
    value = value + w.partner * _expected_best(best, partner, fitting)
    value = value + w.knock * _must_knock(opponent, fitting)
    value = value + w.control * kept / hand_size
    value = value + (w.pips * t["pips"][tile] + w.double * t["double"][tile])
    return rows, actions, torch.where(rest != 0, value, points)


def _best_replies(ends, end_double, started, t) -> torch.Tensor:
    """``[P, 28]`` the most points each tile scores on the layout (``LookaheadLayout.best_points``,
    R5): at each open slot, what the other slots add plus the tile's counted half, from the
    reply table (an opening spinner alone counts on both sides once a tile covers one)."""
    counted = (ends >= 0) & (tables(ends.device).straight | started)
    values = (ends + end_double * ends) * counted                                 # [P, 4]
    base = values.sum(1, keepdim=True) - values
    index = torch.where(ends >= 0, base * 7 + ends.clamp(min=0), len(t["reply_points"]) - 1)
    replies = t["reply_points"].index_select(0, index.view(-1)).view(len(ends), 4, NUM_TILES)
    return replies.amax(1)


def _expected_best(best: torch.Tensor, odds: torch.Tensor, fitting: torch.Tensor):
    """``expected_best``: E[most points of the seat's best reply], its tiles held independently
    with ``odds``; options sorted by (points, odds) descending, then the sequential sum."""
    scoring = (odds > 0) & fitting & (best > 0)
    p = torch.where(scoring, odds, 0.0)
    points = torch.where(scoring, best, 0.0)
    # lexicographic sort, descending: by odds first, then (stable) by points
    order = torch.sort(p, dim=1, descending=True, stable=True).indices
    points, p = points.gather(1, order), p.gather(1, order)
    order = torch.sort(points, dim=1, descending=True, stable=True).indices
    points, p = points.gather(1, order), p.gather(1, order)
    none_better = torch.cumprod(torch.cat([torch.ones_like(p[:, :1]), 1.0 - p[:, :-1]], 1), 1)
    return torch.cumsum(points * p * none_better, 1)[:, -1]


def _must_knock(odds: torch.Tensor, fitting: torch.Tensor) -> torch.Tensor:
    """``must_knock``: P(the seat holds none of the tiles that fit), in tile order."""
    return torch.cumprod(torch.where((odds > 0) & fitting, 1.0 - odds, 1.0), 1)[:, -1]


def heuristic_actions(state: BatchState, mask: torch.Tensor, envs: torch.Tensor,
                      weights: HeuristicWeights = HeuristicWeights()) -> torch.Tensor:
    """``LongTensor[len(envs)]``: ``HeuristicAgent``'s action for the seat on turn in each env
    (the first legal action of the best value, a later one only if it is better by over 1e-9;
    the knock when no tile fits)."""
    legal = mask[envs]
    chosen = legal.long().argmax(1)                      # a forced move or the knock
    rows, actions, values = heuristic_values(state, mask, envs, weights)
    if not len(rows):
        return chosen
    counts = layout.legal_counts(legal[:, :KNOCK]).long()
    starts = torch.cumsum(counts, 0) - counts
    position = torch.arange(len(rows), device=mask.device) - starts[rows]
    width = int(counts.max())
    padded = torch.full((len(envs), width), -torch.inf, dtype=torch.float64, device=mask.device)
    padded[rows, position] = values
    placed = torch.full((len(envs), width), KNOCK, dtype=torch.long, device=mask.device)
    placed[rows, position] = actions
    best_value, best = padded[:, 0].clone(), placed[:, 0].clone()
    for k in range(1, width):                            # the agent's sequential rule
        better = padded[:, k] > best_value + 1e-9
        best_value = torch.where(better, padded[:, k], best_value)
        best = torch.where(better, placed[:, k], best)
    return torch.where(counts > 0, best, chosen)


__all__ = ["heuristic_actions", "heuristic_values"]
