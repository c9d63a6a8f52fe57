"""What each placement would do, computed from a seat's observation alone (R3-R5, R7).

:class:`ActionFeatures` is a parameter-free part of :class:`sevenrocks_env.policy.PolicyNet`: for
every legal placement it rebuilds the layout after it (new end, spinner, opened branches) from the
observation's slot pieces, scores it (R5), and looks one move further: what the next player -- the
left opponent -- and the partner could score in reply with tiles they may still hold (tiles not in
our hand, not played, without a number that seat showed it lacks by knocking).  Only what the seat
may know is used, so the policy stays a function of the observation.
"""

from __future__ import annotations

import torch
from torch import nn

from .observation import OFFSETS
from .tiles import NUM_TILES, OTHER_HALF, TILE_HIGH, TILE_IS_DOUBLE, TILE_LOW, TILE_NUMBERS_NP, \
    TILE_PIPS

WEST, EAST, NORTH = 0, 1, 2


class ActionFeatures(nn.Module):
    """Features ``[P, SIZE]`` of placements (zeros where the tile does not fit):

    | index | feature                                                                  |
    |------:|--------------------------------------------------------------------------|
    | 0     | points the placement scores / 35 (R5)                                    |
    | 1     | 1 if it scores                                                           |
    | 2     | end sum after it / 36                                                    |
    | 3-7   | one-hot of that end sum mod 5                                            |
    | 8     | the tile's pips / 12 (what it would cost in hand, R7)                    |
    | 9     | the tile is a double                                                     |
    | 10-16 | one-hot of the number it leaves open at that slot                        |
    | 17    | best reply score / 35 of the left opponent (next to play), over its possible tiles |
    | 18    | expected best reply of the left opponent / 35 (each possible tile weighted by the share of hidden tiles it holds) |
    | 19    | best reply score / 35 of the partner, same layout                        |
    | 20    | expected best reply of the partner / 35                                  |

    The end sum after a placement is the sum of the slots' counted values (an opening spinner,
    which the observation counts once, stops being exposed on both sides with any placement).
    """

    SIZE = 21

    def __init__(self):
        super().__init__()
        self.offsets = {k: (v.start, v.stop) for k, v in OFFSETS.items()}
        other = torch.tensor(OTHER_HALF, dtype=torch.long)              # [28, 7], -1: no fit
        buffers = {
            "fits": (other >= 0).float(), "other": other.clamp(min=0),
            "tile_double": torch.tensor(TILE_IS_DOUBLE, dtype=torch.float32),
            "tile_pips": torch.tensor(TILE_PIPS, dtype=torch.float32),
            "tile_low": torch.tensor(TILE_LOW), "tile_high": torch.tensor(TILE_HIGH),
            "tile_numbers": torch.from_numpy(TILE_NUMBERS_NP),         # [28, 7]
        }
        for name, tensor in buffers.items():
            self.register_buffer(name, tensor, persistent=False)

    def _piece(self, obs, name):
        start, stop = self.offsets[name]
        return obs[:, start:stop]

    @torch.no_grad()
    def forward(self, obs: torch.Tensor, rows: torch.Tensor, actions: torch.Tensor
                ) -> torch.Tensor:
        """Features of placement ``actions[p]`` (< 112) in observation ``rows[p]``."""
        batch = obs.shape[0]
        opening = self._piece(obs, "opening")[rows, 0] > 0.5                      # [P]
        open_ = self._piece(obs, "slot_open")[rows]                                # [P, 4]
        number = self._piece(obs, "slot_number").reshape(batch, 4, 7).argmax(-1)[rows]
        double = self._piece(obs, "slot_double")[rows]
        started = self._piece(obs, "branch_started")[rows]
        spinner_piece = self._piece(obs, "spinner")[rows]
        spinner = torch.where(spinner_piece[:, 0] > 0.5, spinner_piece[:, 1:].argmax(-1), -1)
        tile, slot = actions // 4, actions % 4
        index = torch.arange(len(actions))

        # -- this placement (R3-R5) -----------------------------------------------------------
        joined = number[index, slot]
        fits = torch.where(opening, (slot == WEST).float(),
                           self.fits[tile, joined] * open_[index, slot])
        new_end = self.other[tile, joined]
        before = self._values(open_, number, double, started)
        end_sum = before.sum(-1) - before[index, slot] + new_end * (1 + self.tile_double[tile])
        end_sum = torch.where(opening, self.tile_pips[tile], end_sum) * fits
        remainder = end_sum.remainder(5)
        scores = ((remainder == 0) & (end_sum > 0)).float()
        left_open = torch.where(opening, -1, new_end)

        # -- the layout after it (R4: spinner, branches opening) ------------------------------
        number, double, open_, started = number.clone(), double.clone(), open_.clone(), \
            started.clone()
        number[index, slot] = new_end
        double[index, slot] = self.tile_double[tile]
        started[index, slot] = (slot >= NORTH).float()
        new_spinner = (spinner < 0) & (self.tile_double[tile] > 0)
        spinner = torch.where(new_spinner, self.tile_low[tile], spinner)
        low, high, is_double = self.tile_low[tile], self.tile_high[tile], self.tile_double[tile]
        first = opening.unsqueeze(-1)
        number = torch.where(first, torch.stack([low, high, low, low], -1), number)
        double = torch.where(first, torch.stack([is_double, is_double] + [0 * is_double] * 2, -1),
                             double)
        open_ = torch.where(first, torch.tensor([1.0, 1.0, 0.0, 0.0]), open_)
        started = torch.where(first, torch.zeros_like(started), started)
        exposed = ((double[:, WEST] > 0) & (number[:, WEST] == spinner)) | (
            (double[:, EAST] > 0) & (number[:, EAST] == spinner))
        opens = (spinner >= 0) & (open_[:, NORTH] < 0.5) & ~exposed
        branch = opens.unsqueeze(-1) & (torch.arange(4) >= NORTH)
        number = torch.where(branch, spinner.unsqueeze(-1).expand(-1, 4), number)
        double = torch.where(branch, torch.zeros_like(double), double)
        open_ = torch.where(branch, torch.ones_like(open_), open_)
        after = self._values(open_, number, double, started)                      # [P, 4]

        # -- replies: every tile at every open slot of the new layout -------------------------
        reply_fits = self.fits[:, number].permute(1, 0, 2) * open_.unsqueeze(1)   # [P, 28, 4]
        reply_value = self.other[:, number].permute(1, 0, 2) * (
            1 + self.tile_double).view(1, -1, 1)
        reply_sum = after.sum(-1).view(-1, 1, 1) - after.unsqueeze(1) + reply_value
        reply_points = reply_sum * ((reply_sum.remainder(5) == 0) & (reply_sum > 0)) * reply_fits
        best_reply = reply_points.amax(-1)                                        # [P, 28]
        left_max, left_mean = self._holder(obs, rows, best_reply, relative_seat=1)
        partner_max, partner_mean = self._holder(obs, rows, best_reply, relative_seat=2)

        parts = [
            end_sum * scores / 35.0, scores, end_sum / 36.0,
            *(fits * (remainder == r).float() for r in range(5)),
            fits * self.tile_pips[tile] / 12.0, fits * self.tile_double[tile],
            *(fits * (left_open == n).float() for n in range(7)),
            fits * left_max, fits * left_mean, fits * partner_max, fits * partner_mean,
        ]
        return torch.stack(parts, dim=-1)

    @staticmethod
    def _values(open_, number, double, started) -> torch.Tensor:
        """What each slot adds to the end sum (R5; an unopened branch adds 0)."""
        counted = torch.cat([open_[:, :NORTH], open_[:, NORTH:] * started[:, NORTH:]], -1)
        return counted * number * (1.0 + double)

    def _holder(self, obs, rows, best_reply, relative_seat: int):
        """Best and expected reply (/ 35) of a seat over the hidden tiles it may hold."""
        hand = self._piece(obs, "hand")
        played = self._piece(obs, "played_by").reshape(-1, 4, NUM_TILES).amax(1)
        hidden = (1.0 - hand) * (1.0 - played)                                    # [B, 28]
        voids = self._piece(obs, "voids").reshape(-1, 3, 7)[:, relative_seat - 1]  # [B, 7]
        possible = hidden * (voids @ self.tile_numbers.T == 0).float()            # [B, 28]
        holds = self._piece(obs, "tile_counts")[:, relative_seat] * 7.0
        share = (holds / hidden.sum(-1).clamp(min=1.0)).clamp(max=1.0)           # [B]
        candidates = best_reply * possible[rows]
        return candidates.amax(-1) / 35.0, candidates.sum(-1) * share[rows] / 35.0
