"""The oracle critic: a value network that also sees the other seats' hands (training only).

Seven Rocks is a game of hidden tiles: from one seat's observation the same position can be
won or lost depending on how the unseen tiles are split, so a value function of the
observation alone is a noisy baseline.  With ``critic: oracle`` the trainer estimates values
with a separate network whose input is the seat's observation *plus* the hands of the other
three seats (seat-relative, 3 x 28 bits): an asymmetric actor-critic, the "perfect-training,
imperfect-execution" scheme of PerfectDou (Yang et al., 2022).  Its input keeps the seat's
observation, which summarises the public history, so it is a value of (history, state) -- the
form that keeps the policy gradient unbiased (Baisero & Amato, 2022).

Only the policy (:class:`sevenrocks_env.policy.PolicyNet`) is shipped and played; it never sees
hidden tiles.  The critic lives in the training checkpoint (``critic`` key) for ``--resume``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from sevenrocks_env.agents.belief import HIDDEN_SEATS
from sevenrocks_env.observation import OBS_SIZE, tile_sets
from sevenrocks_env.policy import layer_init, mlp
from sevenrocks_env.rules import Match
from sevenrocks_env.tiles import NUM_TILES

#: Size of the hidden-hands input: the hands of relative seats 1 (left opponent), 2 (partner)
#: and 3 (right opponent) (``HIDDEN_SEATS``), 28 tile bits each.
HANDS_SIZE = len(HIDDEN_SEATS) * NUM_TILES


def hidden_hands(match: Match, seat: int, out: np.ndarray | None = None) -> np.ndarray:
    """The other seats' hands as seen from ``seat`` (relative seats 1, 2, 3), float32[84]."""
    hands = match.hands
    return tile_sets(tuple(hands[(seat + k) & 3] for k in HIDDEN_SEATS), out)


class OracleCritic(nn.Module):
    """MLP from ``[observation, hidden hands]`` (238 + 84) to the seat's team value."""

    def __init__(self, hidden_sizes=(256, 256)):
        super().__init__()
        self.trunk = mlp(OBS_SIZE + HANDS_SIZE, hidden_sizes)
        self.value_head = layer_init(nn.Linear(hidden_sizes[-1], 1), 1.0)

    def forward(self, obs: torch.Tensor, hands: torch.Tensor) -> torch.Tensor:
        """Values ``[B]`` of observations ``[B, 238]`` with the hidden hands ``[B, 84]``."""
        return self.value_head(self.trunk(torch.cat([obs, hands], dim=-1))).squeeze(-1)
