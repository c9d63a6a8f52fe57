"""What each placement would do, computed from a seat's observation alone (R3-R5, R7).

:class:`ActionFeatures` is a parameter-free part of :class:`sevenrocks_env.policy.PolicyNet`: for
every legal placement it rebuilds the layout after it (new end, spinner, opened branches) from the
observation's slot pieces with the batched engine's own rule functions
(:func:`sevenrocks_env.batched.layout.place_tiles`, :func:`~sevenrocks_env.batched.layout.end_sum`),
scores it (R5), and looks one move further: what the next player -- the left opponent -- and the
partner could score in reply with tiles they may still hold (tiles not in our hand, not played,
without a number that seat showed it lacks by knocking).  Only what the seat may know is used, so
the policy stays a function of the observation.

The replies are not the engine's: which tiles fit an open number and what a slot adds to the end
sum are tables here (``reply_table``, ``fits_table``, ``_values``), a second statement of R5's
counting in the form the features need (``_values`` counts a slot as it will count once another
tile is down: an opening spinner's second side too, which ``layout.counted_ends`` leaves out
before that tile); their points are the engine's ``layout.placement_points``.
``tests/test_policy_features.py`` ties every feature to ``rules.apply_action`` on random
positions.
"""

from __future__ import annotations

import torch
from torch import nn

from .batched import layout
from .observation import OFFSETS
from .tiles import NUM_TILES, OTHER_HALF, TILE_IS_DOUBLE, TILE_NUMBERS_NP, TILE_PIPS

WEST, EAST, NORTH = 0, 1, 2

#: One name per feature, in order (see the table in :class:`ActionFeatures`).
FEATURE_NAMES: tuple[str, ...] = (
    "points", "scores", "end_sum", *(f"end_sum_mod5_{r}" for r in range(5)),
    "tile_pips", "tile_double", *(f"open_number_{n}" for n in range(7)),
    "left_best_reply", "left_reply_sum", "partner_best_reply", "partner_reply_sum",
    "left_must_knock", "partner_must_knock", "own_tiles_fitting",
    "right_best_reply", "right_reply_sum", "own_next_best", "partner_played_fitting",
    "partner_void_open", "our_need", "their_need", "wins_match", "left_can_win",
)


#: Largest sum the other three slots of a layout can show (three doubles of six: 3 x 12).
MAX_OTHER_SLOTS = 36


def reply_table() -> torch.Tensor:
    """``[(MAX_OTHER_SLOTS + 1) * 7 + 1, 28]``: row ``base * 7 + number``, column ``tile``: the
    points (R5) that ``tile`` scores joined at a slot showing ``number`` while the other slots add
    ``base`` to the end sum (0 where it does not fit or does not score); the last row, for a
    closed slot, is all zeros."""
    other = torch.tensor(OTHER_HALF, dtype=torch.long).T                  # [7, 28], -1: no fit
    counted = other.clamp(min=0) * (1 + torch.tensor(TILE_IS_DOUBLE, dtype=torch.long))
    total = torch.arange(MAX_OTHER_SLOTS + 1).view(-1, 1, 1) + counted      # [37, 7, 28]
    points = layout.placement_points(total) * (other >= 0)
    return torch.cat([points.reshape(-1, NUM_TILES), torch.zeros(1, NUM_TILES, dtype=torch.long)]
                     ).float()


def fits_table() -> torch.Tensor:
    """``[128, 28]``: row ``numbers`` (a set of open numbers, bit ``n`` for number ``n``), column
    ``tile``: 1 if the tile shows one of them (it fits one of those ends, R3)."""
    tile_bits = (torch.from_numpy(TILE_NUMBERS_NP) > 0).long() @ (1 << torch.arange(7))  # [28]
    return ((torch.arange(128).view(-1, 1) & tile_bits) != 0).float()


class ActionFeatures(nn.Module):
    """Features ``[P, SIZE]`` of placements (zeros where the tile does not fit):

    | index | name                    | feature                                                 |
    |------:|-------------------------|---------------------------------------------------------|
    | 0     | points                  | points the placement scores / 35 (R5)                   |
    | 1     | scores                  | 1 if it scores                                          |
    | 2     | end_sum                 | end sum after it / 36                                   |
    | 3-7   | end_sum_mod5_0 .. 4     | one-hot of that end sum mod 5                           |
    | 8     | tile_pips               | the tile's pips / 12 (what it would cost in hand, R7)   |
    | 9     | tile_double             | the tile is a double                                    |
    | 10-16 | open_number_0 .. 6      | one-hot of the number it leaves open at that slot       |
    | 17    | left_best_reply         | most points / 35 the left opponent (next to play) could |
    |       |                         | score next, over the tiles it may hold                  |
    | 18    | left_reply_sum          | share-weighted sum of reply points / 35 of the left     |
    |       |                         | opponent: sum over the tiles it may hold of the most    |
    |       |                         | points that tile scores next, times the opponent's      |
    |       |                         | share of the hidden tiles (the expected total of its    |
    |       |                         | tiles' best replies -- not an expected maximum)         |
    | 19    | partner_best_reply      | as 17, for the partner, same layout                     |
    | 20    | partner_reply_sum       | as 18, for the partner                                  |
    | 21    | left_must_knock         | P(the left opponent must knock on the new layout) (R6,  |
    |       |                         | version 2)                                              |
    | 22    | partner_must_knock      | P(the partner must knock on the new layout) (version 2) |
    | 23    | own_tiles_fitting       | own remaining tiles that fit the new layout / tiles in  |
    |       |                         | hand (version 2)                                        |
    | 24    | right_best_reply        | as 17, for the right opponent, same layout (as if the   |
    |       |                         | left opponent and the partner knocked; version 3)       |
    | 25    | right_reply_sum         | as 18, for the right opponent (version 3)               |
    | 26    | own_next_best           | most points / 35 one of our remaining tiles could score |
    |       |                         | on the new layout: our next turn if the three others    |
    |       |                         | knocked, a two-move look-ahead of the end sum (v3)      |
    | 27    | partner_played_fitting  | tiles the partner played this round that fit the new    |
    |       |                         | layout / 7: the open numbers it has been playing (v3)   |
    | 28    | partner_void_open       | share of the new layout's open numbers the partner      |
    |       |                         | showed it lacks by knocking (R6; version 3)             |
    | 29    | our_need                | (target - our score) / target, clipped to [0, 1] (R8)   |
    | 30    | their_need              | (target - their score) / target, clipped to [0, 1]      |
    | 31    | wins_match              | 1 if the placement scores at least what we still need:  |
    |       |                         | it wins the match at once (R8; version 3)               |
    | 32    | left_can_win            | 1 if the left opponent's best reply (17) would win the  |
    |       |                         | match for its team (R8; version 3)                      |

    Names are :data:`FEATURE_NAMES`.  Features 18 and 20 were once documented as an "expected
    best reply"; the values were always the sum above (the shipped policy was trained on them,
    so they stay).  ``tests/test_policy_features.py`` checks every feature against the rules
    engine on random states.

    The end sum after a placement is the sum of the slots' counted values (an opening spinner,
    which the observation counts once, stops being exposed on both sides with any placement).
    A seat's chance of holding a hidden tile is its share of the hidden tiles (as in
    ``heuristic``), holdings independent.  Version 1 (checkpoints from before version 2) is
    the first 21 features, version 2 the first 24; version 3 adds what a strong player weighs
    and the heuristic does not (the right opponent's reply, our own next score, the partner's
    plays and knocks, the match score near the target).  Features 29 and 30 are the same for
    every placement of a state: only a non-linear scorer (``action_scorer: mlp``) can use them.
    """

    SIZES = {1: 21, 2: 24, 3: 33}
    #: The version a new network gets (not the newest: 3 stays a choice until its ablation wins).
    DEFAULT = 2

    def __init__(self, version: int = DEFAULT):
        super().__init__()
        if version not in self.SIZES:
            raise ValueError(f"action feature version must be one of {sorted(self.SIZES)}, "
                             f"got {version!r}")
        self.version = version
        self.size = self.SIZES[version]
        self.offsets = {k: (v.start, v.stop) for k, v in OFFSETS.items()}
        other = torch.tensor(OTHER_HALF, dtype=torch.long)              # [28, 7], -1: no fit
        buffers = {
            "fits": (other >= 0).float(), "other": other.clamp(min=0),
            "tile_double": torch.tensor(TILE_IS_DOUBLE, dtype=torch.float32),
            "tile_pips": torch.tensor(TILE_PIPS, dtype=torch.float32),
            "number_bits": (1 << torch.arange(7)).float(),                   # [7]
            "reply_points": reply_table(),                                  # [37 * 7 + 1, 28]
            "set_fits": fits_table(),                                       # [128, 28]
            }
        for name, tensor in buffers.items():
            self.register_buffer(name, tensor, persistent=False)

    def _piece(self, obs, name):
        start, stop = self.offsets[name]
        return obs[:, start:stop]

    @torch.no_grad()
    def forward(self, obs: torch.Tensor, rows: torch.Tensor, actions: torch.Tensor
                ) -> torch.Tensor:
        """Features of placement ``actions[p]`` (< 112) in observation ``rows[p]``.

        Written with few, whole-tensor operations: a policy agent calls this for one state per
        decision, where the per-operation overhead is what costs.  What a row's placements share
        (its layout, who may hold which tile) is read once per row, then gathered; the replies
        are looked up in :attr:`reply_points` instead of being summed tile by tile.
        """
        state = self._row_state(obs)
        opening, open_, number, double, started, spinner, hand, possible, share = (
            part[rows] for part in state)
        size = len(actions)
        tile, slot = actions // 4, actions % 4
        index = torch.arange(size, device=obs.device)
        tile_double = self.tile_double[tile]

        # -- this placement and the layout after it (R3-R5), by the batched engine's rules ----
        joined = number[index, slot]
        fits = torch.where(opening, (slot == WEST).float(),
                           self.fits[tile, joined] * open_[index, slot])
        new_end = self.other[tile, joined]
        ends = torch.where(open_ > 0.5, number, -1)
        ends, end_double, branch_started, _ = layout.place_tiles(
            ends, double > 0.5, started > 0.5, spinner, (~opening).long(), tile, slot)
        end_sum = layout.end_sum(ends, end_double, branch_started).float() * fits
        remainder = end_sum.remainder(5)
        scores = ((remainder == 0) & (end_sum > 0)).float()
        open_ = (ends >= 0).float()
        # (rows where the tile does not fit hold garbage, zeroed at the end: keep it in range)
        number, double, started = ends.clamp(0, 6), end_double.float(), branch_started.float()
        after = self._values(open_, number, double, started)                    # [P, 4]

        # -- replies: every tile at every open slot of the new layout -------------------------
        # what the other three slots add and the number showing index the reply table (closed
        # slots its last row, all zeros); the open numbers, as a 7-bit set, which tiles fit
        base = (after.sum(-1, keepdim=True) - after).long()                       # [P, 4]
        at_slot = torch.where(ends >= 0, base * 7 + number, len(self.reply_points) - 1)
        replies = self.reply_points.index_select(0, at_slot.view(-1)).view(size, 4, NUM_TILES)
        best_reply = torch.maximum(torch.maximum(replies[:, 0], replies[:, 1]),
                                   torch.maximum(replies[:, 2], replies[:, 3]))   # [P, 28]
        numbers = torch.where(ends >= 0, 1 << number, 0)
        fits_after = self.set_fits.index_select(
            0, (numbers[:, 0] | numbers[:, 1]) | (numbers[:, 2] | numbers[:, 3]))  # [P, 28]
        candidates = best_reply.unsqueeze(1) * possible
        best, reply_sum = candidates.amax(-1) / 35.0, candidates.sum(-1) * share / 35.0
        possible, share = possible[:, :2], share[:, :2]  # left opponent, partner

        # -- version 2: who may have to knock on the new layout (R6), own tiles still fitting -
        must_knock = (1.0 - fits_after.unsqueeze(1) * possible * share.unsqueeze(-1)).prod(-1)
        rest = hand.clone()
        rest[index, tile] = 0.0
        control = (rest * fits_after).sum(-1) / hand.sum(-1).clamp(min=1.0)

        parts = [
            torch.stack([end_sum * scores / 35.0, scores, end_sum / 36.0], -1),
            nn.functional.one_hot(remainder.long(), 5).float(),
            torch.stack([self.tile_pips[tile] / 12.0, tile_double], -1),
            nn.functional.one_hot(torch.where(opening, 7, new_end), 8)[:, :7].float(),
            torch.stack([best[:, 0], reply_sum[:, 0], best[:, 1], reply_sum[:, 1]], -1),
            must_knock, control.unsqueeze(-1),
        ]
        if self.version >= 3:
            parts.append(self._version3(obs[rows], end_sum * scores, best, reply_sum, best_reply,
                                        rest, fits_after, number, open_))
        return torch.cat(parts, -1)[:, :self.size] * fits.unsqueeze(-1)

    def _version3(self, obs, points, best, reply_sum, best_reply, rest, fits_after, number,
                  open_) -> torch.Tensor:
        """Features 24-32 (see the table): the right opponent's reply, our own next best score,
        the partner's plays and knocks against the new layout, the match score (R8)."""
        own_next = (best_reply * rest).amax(-1) / 35.0
        partner_played = self._piece(obs, "played_by").reshape(-1, 4, NUM_TILES)[:, 2]
        partner_fitting = (partner_played * fits_after).sum(-1) / 7.0
        open_numbers = (nn.functional.one_hot(number, 7).float()
                        * open_.unsqueeze(-1)).amax(1)                           # [P, 7]
        partner_voids = self._piece(obs, "voids").reshape(-1, 3, 7)[:, 1]
        void_open = (open_numbers * partner_voids).sum(-1) / open_numbers.sum(-1).clamp(min=1.0)
        scores = self._piece(obs, "scores")
        target = (scores[:, 2] * 1000.0).round()
        ours, theirs = (scores[:, 0] * target).round(), (scores[:, 1] * target).round()
        our_need, their_need = target - ours, target - theirs
        left_points = best[:, 0] * 35.0
        wins = ((points > 0) & (points >= our_need)).float()
        left_wins = ((left_points > 0) & (left_points >= their_need)).float()
        return torch.stack([
            best[:, 2], reply_sum[:, 2], own_next, partner_fitting, void_open,
            (our_need / target.clamp(min=1.0)).clamp(0.0, 1.0),
            (their_need / target.clamp(min=1.0)).clamp(0.0, 1.0), wins, left_wins], -1)

    def _row_state(self, obs) -> tuple[torch.Tensor, ...]:
        """Per observation row: opening, slots open / number / double / branch started, the
        spinner's number (-1: none), the hand, and :meth:`_holdings`."""
        spinner = self._piece(obs, "spinner")
        possible, share = self._holdings(obs, 3 if self.version >= 3 else 2)
        return (self._piece(obs, "opening")[:, 0] > 0.5, self._piece(obs, "slot_open"),
                self._piece(obs, "slot_number").reshape(-1, 4, 7).argmax(-1),
                self._piece(obs, "slot_double"), self._piece(obs, "branch_started"),
                torch.where(spinner[:, 0] > 0.5, spinner[:, 1:].argmax(-1), -1),
                self._piece(obs, "hand"), possible, share)

    @staticmethod
    def _values(open_, number, double, started) -> torch.Tensor:
        """What each slot adds to the end sum (R5; an unopened branch adds 0)."""
        counted = torch.cat([open_[:, :NORTH], open_[:, NORTH:] * started[:, NORTH:]], -1)
        return counted * number * (1.0 + double)

    def _holdings(self, obs, seats: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
        """For the left opponent, the partner (and with ``seats=3`` the right opponent) of each of
        the ``N`` observations: which hidden tiles each may hold (not in our hand, not played, no
        number it is void in) ``[N, seats, 28]``, and its share of the hidden tiles ``[N, seats]``
        (the chance it holds any one of them)."""
        played = self._piece(obs, "played_by").reshape(-1, 4, NUM_TILES).amax(1)
        hidden = (1.0 - self._piece(obs, "hand")) * (1.0 - played)                # [N, 28]
        voids = self._piece(obs, "voids").reshape(-1, 3, 7)[:, :seats] @ self.number_bits
        # (a seat may hold the tiles showing none of its void numbers)
        lacking = 1.0 - self.set_fits.index_select(0, voids.long().clamp(0, 127).view(-1))
        possible = hidden.unsqueeze(1) * lacking.view(len(obs), seats, NUM_TILES)  # [N, S, 28]
        holds = self._piece(obs, "tile_counts")[:, 1:1 + seats] * 7.0               # [N, S]
        share = (holds / hidden.sum(-1, keepdim=True).clamp(min=1.0)).clamp(max=1.0)
        return possible, share
