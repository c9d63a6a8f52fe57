"""The state of B matches as a few int tensors on one device (no Python object per match).

| field            | shape  | dtype | meaning (as the field of the same name in ``rules.Match``)     |
|------------------|--------|-------|-----------------------------------------------------------------|
| `hands`          | [B, 4] | int64 | each seat's tiles, a 28-bit set                                 |
| `played_by`      | [B, 4] | int64 | tiles each seat played this round                               |
| `played`         | [B]    | int64 | union of `played_by`                                            |
| `ends`           | [B, 4] | int64 | open number at west, east, north, south; -1 = not open          |
| `end_double`     | [B, 4] | bool  | the outer tile at the slot is a double (R5; see `counted_ends`) |
| `branch_started` | [B, 4] | bool  | a tile was played on the branch (north/south, R5)               |
| `spinner`        | [B]    | int64 | number of the round's spinner, -1 before the first double (R4)  |
| `turn`           | [B]    | int64 | seat on turn, 0..3                                              |
| `opener`         | [B]    | int64 | the round's opener (R2)                                         |
| `placements`     | [B]    | int64 | tiles placed this round (0 = opening, R3)                       |
| `voids`          | [B, 4] | int64 | per seat, 7-bit set of numbers it showed it lacks by knocking   |
| `scores`         | [B, 2] | int64 | the partnerships' raw scores                                    |
| `last_end_sum`   | [B]    | int64 | end sum after the last placement (R5)                           |
| `round_index`    | [B]    | int64 | rounds finished in this match                                   |
| `matches`        | [B]    | int64 | matches this env finished since reset (the deal stream's counter) |

That is 8 * (4 + 4 + 1 + 4 + 1 + 1 + 1 + 1 + 4 + 2 + 1 + 1 + 1) + 4 + 4 = 216 bytes per match
(:data:`STATE_BYTES`); the env's cached action mask and observation add 120 + 952 bytes (mask
rows are 120 bytes apart) and the observation's scratch tensors 1,052 (docs/vector.md).  A match that ends is replaced at once by the next one (auto-reset),
so no match is ever stored finished: ``winner``/``truncated`` exist only as the step's return
values.
"""

from __future__ import annotations

import torch

from ..rules import Match
from .inputs import check_rows, checked_device

INT_FIELDS = ("hands", "played_by", "played", "ends", "spinner", "turn", "opener", "placements",
              "voids", "scores", "last_end_sum", "round_index", "matches")
BOOL_FIELDS = ("end_double", "branch_started")
FIELDS = INT_FIELDS + BOOL_FIELDS
_WIDTH = {"hands": 4, "played_by": 4, "ends": 4, "voids": 4, "scores": 2,
          "end_double": 4, "branch_started": 4}
STATE_BYTES = sum(8 * _WIDTH.get(name, 1) for name in INT_FIELDS) + sum(
    _WIDTH[name] for name in BOOL_FIELDS)


def _shape(name: str, num_envs: int) -> tuple[int, ...]:
    return (num_envs, _WIDTH[name]) if name in _WIDTH else (num_envs,)


def _dtype(name: str) -> torch.dtype:
    return torch.bool if name in BOOL_FIELDS else torch.long


class BatchState:
    """The tensors above for ``num_envs`` matches (created zeroed; fill with a deal or load)."""

    __slots__ = FIELDS

    def __init__(self, num_envs: int, device):
        for name in FIELDS:
            setattr(self, name, torch.zeros(_shape(name, num_envs), dtype=_dtype(name),
                                            device=device))

    def layout_problem(self, num_envs: int, device: torch.device) -> str | None:
        """What is wrong with the tensors' shapes, dtypes, devices or layouts for ``num_envs``
        matches on ``device`` (``None``: nothing; the values are not looked at, so no
        synchronisation)."""
        for name in FIELDS:
            value = getattr(self, name, None)
            expected = (_shape(name, num_envs), _dtype(name), device)
            if not isinstance(value, torch.Tensor) or (
                    tuple(value.shape), value.dtype, value.device) != expected:
                got = (f"{tuple(value.shape)} {value.dtype} on {value.device}"
                       if isinstance(value, torch.Tensor) else type(value).__name__)
                return (f"field {name!r} must be {expected[0]} {expected[1]} on {device}, "
                        f"got {got}")
            if value.layout is not torch.strided or not value.is_contiguous():
                strides = value.stride() if value.layout is torch.strided else value.layout
                return (f"field {name!r} must be a dense contiguous tensor (a view such as "
                        f"expand() makes envs share one element: pass .contiguous()), got "
                        f"strides {strides}")
        return None

    @property
    def num_envs(self) -> int:
        return self.turn.shape[0]

    def nbytes(self) -> int:
        """Bytes held by the state tensors."""
        return sum(getattr(self, name).element_size() * getattr(self, name).nelement()
                   for name in FIELDS)

    def take(self, rows: torch.Tensor | None = None) -> "BatchState":
        """A copy of the matches in ``rows``, all if ``None`` (docs/vector.md: save and restore):
        ``rows`` a 1-D ``LongTensor`` of row indices (repeats allowed) or a ``BoolTensor[B]``
        mask, on the state's device, checked (:func:`.inputs.check_rows`; the range costs one
        synchronisation, and a copy of all of them none)."""
        if rows is not None:
            check_rows(rows, self.num_envs, self.turn.device)
        copy = BatchState.__new__(BatchState)
        for name in FIELDS:
            value = getattr(self, name)
            setattr(copy, name, value.clone() if rows is None else value[rows])
        return copy

    def to(self, device) -> "BatchState":
        """These matches on ``device`` (the same object when they are there already)."""
        if self.turn.device == checked_device(device):
            return self
        moved = BatchState.__new__(BatchState)
        for name in FIELDS:
            setattr(moved, name, getattr(self, name).to(device))
        return moved

    def start_rounds(self, rows, hands: torch.Tensor, opener: torch.Tensor) -> None:
        """Lay out fresh rounds in ``rows`` (a 1-D ``LongTensor``, or ``slice(None)``: all) with
        these hands and openers (R1, R2)."""
        if isinstance(rows, slice):
            rows = torch.arange(self.num_envs, device=self.turn.device)[rows]
        # index_copy_ / index_fill_: one operation each, cheaper than x[rows] = ...
        self.hands.index_copy_(0, rows, hands)
        self.turn.index_copy_(0, rows, opener)
        self.opener.index_copy_(0, rows, opener)
        for name in ("played_by", "played", "end_double", "branch_started", "placements",
                     "voids", "last_end_sum"):
            getattr(self, name).index_fill_(0, rows, 0)
        self.ends.index_fill_(0, rows, -1)
        self.spinner.index_fill_(0, rows, -1)

    def set_match(self, row: int, match: Match) -> None:
        """Copy a ``rules.Match`` (in progress) into ``row``."""
        for name in FIELDS:
            if name == "matches":
                continue
            value = getattr(match, name)
            getattr(self, name)[row] = torch.as_tensor(value, device=self.turn.device)

    def match(self, row: int, target: int, max_rounds: int | None = None) -> Match:
        """Row ``row`` as a ``rules.Match`` (seedless, without history): for tests and search."""
        state = {name: getattr(self, name)[row].tolist() for name in FIELDS if name != "matches"}
        state.update(seed=None, target=target, max_rounds=max_rounds, winner=None,
                     truncated=False)
        return Match.from_state(state)


__all__ = ["BOOL_FIELDS", "BatchState", "FIELDS", "INT_FIELDS", "STATE_BYTES"]
