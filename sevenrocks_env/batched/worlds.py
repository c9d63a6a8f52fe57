"""Sampled worlds of many decisions as one batched state (for determinized search).

:func:`views_state` is the batched twin of :func:`sevenrocks_env.agents.belief.world_match`: row
``k`` is the current round of ``views[view_index[k]]`` in the observer's frame (seat 0 is the
observer, 1 the left opponent, 2 the partner, 3 the right opponent; team 0 is the observer's
partnership), with ``hidden[k]`` as the hands of relative seats 1-3.  Everything else -- the
layout, the tiles each seat played, the numbers knocks showed it lacks (R6), the scores -- is
what the observer saw, so the rows of one view differ only in the hidden hands.
``tests/test_batched_search.py`` ties it to ``world_match``.
"""

from __future__ import annotations

import torch

from ..observation import SeatView
from .inputs import check_tensor, checked_device
from .state import BatchState


def views_state(views: list[SeatView], view_index: torch.Tensor, hidden: torch.Tensor,
                device="cpu") -> BatchState:
    """``BatchState`` of ``len(view_index)`` worlds (module docstring).

    ``view_index``: ``LongTensor[N]`` into ``views``; ``hidden``: ``LongTensor[N, 3]`` tile sets
    of relative seats 1, 2, 3 (consistent with the view, e.g. from ``HandSampler``), both on
    ``device``.  Their shapes, dtypes, devices and the indices' range are checked (a
    ``TypeError``/``ValueError``), the hands' values are not (as ``VectorEnv.load_state``).
    ``device`` is read as ``VectorEnv`` reads it (``"cpu:0"`` is the CPU, ``"cuda"`` the current
    CUDA device, where torch puts a tensor made on ``"cuda"``).  The
    worlds are seedless rounds: ``opener`` 0 (unknown to the observer and irrelevant within the
    round), ``round_index`` and ``matches`` 0.
    """
    device = checked_device(device)
    if not (isinstance(view_index, torch.Tensor) and view_index.dim() == 1):
        raise TypeError("views_state: view_index must be a 1-D LongTensor of indices into "
                        f"views, got {type(view_index).__name__}")
    rows = view_index.shape[0]
    check_tensor("views_state: view_index", view_index, (rows,), torch.long, device)
    check_tensor("views_state: hidden", hidden, (rows, 3), torch.long, device)
    if rows and not bool(((view_index >= 0) & (view_index < len(views))).all()):  # -1: the last
        raise ValueError(f"views_state: view_index must lie in [0, {len(views) - 1}] (indices "
                         f"into the {len(views)} views)")

    def column(values, dtype=torch.long):
        return torch.tensor(values, dtype=dtype, device=device)[view_index]

    state = BatchState(rows, device)
    state.hands = torch.cat((column([v.hand for v in views])[:, None], hidden.to(device)), 1)
    state.played_by = column([list(v.played_by) for v in views])
    state.played = column([v.played for v in views])
    state.ends = column([list(v.ends) for v in views])
    state.end_double = column([list(v.end_double) for v in views], torch.bool)
    state.branch_started = column([list(v.branch_started) for v in views], torch.bool)
    state.spinner = column([v.spinner for v in views])
    state.turn = column([v.turn for v in views])
    state.placements = column([v.played.bit_count() for v in views])
    state.voids = column([list(v.voids) for v in views])
    state.scores = column([list(v.scores) for v in views])
    state.last_end_sum = column([v.end_sum for v in views])
    return state


__all__ = ["views_state"]
