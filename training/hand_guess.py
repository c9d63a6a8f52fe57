"""An auxiliary task for the policy's trunk: guess who holds each hidden tile (training only).

From one seat's observation a tile it has not seen played and does not hold is in one of three
hands: the left opponent's, the partner's or the right opponent's.  Who holds what decides the
round's end -- who can go out (R7's domino), who is left holding heavy tiles (R7's deduction) --
and the policy sees it only through the tile counts, the plays and the knocks.  With
``hand_coef > 0`` a linear head on the policy's trunk guesses, for each of the 28 tiles, which of
the three seats holds it, trained by cross-entropy against the real hands on the tiles hidden
from the seat (the rollout stores them for the oracle critic, :func:`training.critic.hidden_hands`),
weighted by ``hand_coef`` beside PPO's loss.  The gradient shapes the trunk the policy reads
(the auxiliary-task idea of UNREAL, Jaderberg et al., 2017, and of the belief heads of card-game
agents); the head itself is never shipped: the policy still plays from its observation alone.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from sevenrocks_env.agents.belief import HIDDEN_SEATS
from sevenrocks_env.policy import layer_init
from sevenrocks_env.tiles import NUM_TILES

from .critic import HANDS_SIZE

#: How many seats a hidden tile may be with (seat-relative, as in
#: :func:`training.critic.hidden_hands`).
HOLDERS = len(HIDDEN_SEATS)


class HandGuess(nn.Module):
    """Linear head ``[B, width] -> [B, 3, 28]``: for each tile, logits of the relative seats 1
    (left opponent), 2 (partner) and 3 (right opponent) holding it."""

    def __init__(self, width: int):
        super().__init__()
        self.head = layer_init(nn.Linear(width, HANDS_SIZE), 0.01)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.head(hidden).view(-1, HOLDERS, NUM_TILES)

    def loss(self, hidden: torch.Tensor, hands: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(cross-entropy, accuracy)`` over the tiles hidden from each row's seat: the mean
        over rows and their hidden tiles of -log P(the seat that holds it), and how often the
        most probable seat is that one.  ``hands`` is the rollout's ``[B, 84]`` (3 x 28 bits);
        rows with no hidden tile add nothing."""
        holders = hands.view(-1, HOLDERS, NUM_TILES)
        hidden_tiles = holders.sum(1) > 0                                      # [B, 28]
        target = holders.argmax(1)                                             # [B, 28]
        logits = self(hidden)
        loss = F.cross_entropy(logits, target, reduction="none")               # [B, 28]
        count = hidden_tiles.sum().clamp(min=1)
        with torch.no_grad():
            right = (logits.argmax(1) == target) & hidden_tiles
        return (loss * hidden_tiles).sum() / count, right.sum() / count
