"""The mlp action scorer of :class:`sevenrocks_env.policy.PolicyNet` (``action_scorer: mlp``).

The bilinear scorer gives each placement ``features . w(state)``: a logit linear in features that
are essentially the heuristic's own terms.  :class:`PlacementScorer` scores each legal placement
with a small network over

| input            | size | what                                                   |
|------------------|-----:|--------------------------------------------------------|
| state            |   64 | a linear projection of the trunk's output              |
| action features  |    F | :class:`~sevenrocks_env.policy_features.ActionFeatures` |
| tile embedding   |   16 | learned, one per tile (28)                             |
| slot embedding   |    4 | learned, one per slot (west, east, north, south)       |

through ReLU layers ``sizes`` (default 128, 64) to one number, so it can learn which feature
matters when, and per tile.  Its last layer starts near 0 (orthogonal gain 0.01): the initial
policy is near uniform, as with the bilinear term.  It runs on the real placements only, so its
cost grows with the number of legal placements, not with the 112 possible ones.
"""

from __future__ import annotations

import contextlib
import contextvars

import numpy as np
import torch
from torch import nn

from .tiles import KNOCK

STATE, TILE, SLOT = 64, 16, 4
NUM_TILES = KNOCK // 4
DEFAULT_SIZES = (128, 64)
#: Bounds on the scorer's hidden layers a checkpoint (an untrusted file) may declare.
MAX_LAYERS = 4
MAX_WIDTH = 1024


_LOADING_WEIGHTS = contextvars.ContextVar("sevenrocks_loading_weights", default=False)


@contextlib.contextmanager
def loading_weights():
    """Build networks whose every weight is loaded next: :func:`layer_init` leaves layers as
    ``nn.Linear`` made them.  Orthogonal initialisation is a QR decomposition per layer, about
    85 s on this machine for the widest trunk a checkpoint may declare, all of it overwritten."""
    token = _LOADING_WEIGHTS.set(True)
    try:
        yield
    finally:
        _LOADING_WEIGHTS.reset(token)


def layer_init(layer: nn.Linear, gain: float) -> nn.Linear:
    """Orthogonal weights, zero bias (CleanRL's ``layer_init``; :mod:`sevenrocks_env.policy`
    uses it too); nothing inside :func:`loading_weights`."""
    if not _LOADING_WEIGHTS.get():
        nn.init.orthogonal_(layer.weight, gain)
        nn.init.constant_(layer.bias, 0.0)
    return layer


class PlacementScorer(nn.Module):
    """``scorer(hidden [B, H], actions [B, K], features [B, K, F]) -> [B, K]``: one score per
    padded placement (padding points at the knock and gets 0)."""

    def __init__(self, width: int, num_features: int, sizes=DEFAULT_SIZES):
        super().__init__()
        self.sizes = [int(size) for size in sizes]
        self.state = layer_init(nn.Linear(width, STATE), np.sqrt(2))
        self.tile_embedding = nn.Embedding(NUM_TILES, TILE)
        self.slot_embedding = nn.Embedding(4, SLOT)
        layers: list[nn.Module] = []
        inputs = STATE + num_features + TILE + SLOT
        for size in self.sizes:
            layers += [layer_init(nn.Linear(inputs, size), np.sqrt(2)), nn.ReLU()]
            inputs = size
        layers.append(layer_init(nn.Linear(inputs, 1), 0.01))  # near-uniform start
        self.layers = nn.Sequential(*layers)

    def forward(self, hidden: torch.Tensor, actions: torch.Tensor,
                features: torch.Tensor) -> torch.Tensor:
        rows, position = torch.nonzero(actions < KNOCK, as_tuple=True)
        placed = actions[rows, position]
        inputs = torch.cat([self.state(hidden)[rows], features[rows, position],
                            self.tile_embedding(placed >> 2), self.slot_embedding(placed & 3)],
                           -1)
        term = torch.zeros(actions.shape, dtype=hidden.dtype, device=hidden.device)
        return term.index_put((rows, position), self.layers(inputs).squeeze(-1))


def scorer_shapes(width: int, num_features: int, sizes=DEFAULT_SIZES,
                  prefix: str = "scorer.") -> dict:
    """Parameter name -> shape of a :class:`PlacementScorer`, computed without building it."""
    shapes = {f"{prefix}state.weight": (STATE, width), f"{prefix}state.bias": (STATE,),
              f"{prefix}tile_embedding.weight": (NUM_TILES, TILE),
              f"{prefix}slot_embedding.weight": (4, SLOT)}
    inputs = STATE + num_features + TILE + SLOT
    for index, size in enumerate([*sizes, 1]):
        shapes[f"{prefix}layers.{2 * index}.weight"] = (size, inputs)
        shapes[f"{prefix}layers.{2 * index}.bias"] = (size,)
        inputs = size
    return shapes
