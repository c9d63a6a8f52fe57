"""Checks shared by both rollout engines' ``load_state_dict`` (state from an untrusted file).

Every function raises ``ValueError`` naming the bad piece (``engine state: <piece> ...``) and
changes nothing: the engines call them all before they touch their own state.
"""

from __future__ import annotations

import numpy as np
import torch

from sevenrocks_env.batched import BatchState
from sevenrocks_env.batched.state import BOOL_FIELDS, FIELDS
from sevenrocks_env.checks import shown
from sevenrocks_env.tiles import NUM_SEATS

MAX_COUNT = 2 ** 62
#: Valid ``learner`` rows: self-play (no opponent) or one team against an opponent.
LEARNER_ROWS = {True: [[True] * 4], False: [[True, False] * 2, [False, True] * 2]}


def is_count(value) -> bool:
    return type(value) is int and 0 <= value <= MAX_COUNT


def check_keys(state, keys: set) -> None:
    if not isinstance(state, dict) or set(state) != keys:
        got = sorted(map(str, state)) if isinstance(state, dict) else type(state).__name__
        raise ValueError(f"engine state must be a dict with keys {sorted(keys)}, "
                         f"got {got!s:.200}")


def accepts(setter, state) -> bool:
    """Whether a scratch generator's ``setter`` takes ``state`` (a state of the right shape can
    still be one the generator refuses, e.g. all zeros)."""
    try:
        setter(state)
    except (TypeError, ValueError, KeyError, RuntimeError, OverflowError):
        return False
    return True


def is_numpy_state(state) -> bool:
    """A state numpy's default generator (PCG64) takes (it checks the state's shape itself),
    with an odd increment, as numpy's seeding always makes it: the generator takes an even one,
    and from ``{"state": 0, "inc": 0}`` draws 0 for ever (``integers(3)`` never returns)."""
    inner = state.get("state") if isinstance(state, dict) else None
    increment = inner.get("inc") if isinstance(inner, dict) else None
    return type(increment) is int and increment & 1 == 1 and accepts(
        lambda value: setattr(np.random.default_rng().bit_generator, "state", value), state)


def is_live_mersenne_key(words) -> bool:
    """MT19937's 624 key words (ints) hold a state it can leave: not all of its 19,937 bits
    zero (word 0's top bit and words 1-623), from which Python's and numpy's generators, which
    both take it, draw 0 for ever."""
    return bool(words[0] & 0x80000000) or any(words[1:624])


def is_torch_state(state: torch.Tensor) -> bool:
    """A ``uint8`` tensor a ``torch.Generator`` takes as its state."""
    return (isinstance(state, torch.Tensor) and state.dtype == torch.uint8
            and accepts(torch.Generator().set_state, state))


def check_rng(value) -> None:
    """``value`` must be a numpy PCG64 bit-generator state."""
    if not is_numpy_state(value):
        raise ValueError("engine state: rng is not a PCG64 state")


def check_per_match(state: dict, keys, n: int) -> None:
    """Each of ``keys`` is a list with one entry per match."""
    for key in keys:
        if not isinstance(state[key], list) or len(state[key]) != n:
            raise ValueError(f"engine state: {key} must be a list of {n} entries (one per "
                             f"match; num_matches must not change on resume)")


def check_players(state: dict, n: int, pool) -> tuple[np.ndarray, list]:
    """The ``learner`` rows ``[n, 4]`` and the restored ``(name, agent)`` opponents."""
    learner = np.zeros((n, NUM_SEATS), dtype=bool)
    for i, (row, key) in enumerate(zip(state["learner"], state["opponents"])):
        if row not in LEARNER_ROWS[key is None]:
            raise ValueError(f"engine state: learner[{i}] must be four bools, all True in "
                             f"self-play or one team's seats with an opponent, got {shown(row)}")
        learner[i] = row
    if any(key is not None for key in state["opponents"]) and pool is None:
        raise ValueError("engine state: matches against opponents but the run has none")
    opponents = []
    for i, key in enumerate(state["opponents"]):
        try:
            opponents.append((None, None) if key is None else pool.restore(key))
        except ValueError as error:
            raise ValueError(f"engine state: opponents[{i}]: {error}") from None
    return learner, opponents


def check_counters(state: dict, n: int) -> None:
    """``counters`` (placements, points, decisions per match) and ``env_steps``."""
    counters = state["counters"]
    if not (isinstance(counters, list) and len(counters) == 3 and all(
            isinstance(c, list) and len(c) == n and all(is_count(v) for v in c)
            for c in counters)):
        raise ValueError(f"engine state: counters must be 3 lists of {n} counts in "
                         f"[0, {MAX_COUNT}]")
    if not is_count(state["env_steps"]):
        raise ValueError(f"engine state: env_steps must be a count in [0, {MAX_COUNT}], "
                         f"got {shown(state['env_steps'])}")


#: Row widths of the batched state fields that are per seat, per slot or per team.
WIDTHS = {name: 4 for name in ("hands", "played_by", "ends", "voids", "end_double",
                                 "branch_started")} | {"scores": 2}


def check_batch(fields, n: int, target: int, max_rounds) -> BatchState:
    """The batched engine's matches (``BatchState`` fields as lists), every row checked by
    ``rules.Match.from_state``."""
    if not isinstance(fields, dict) or set(fields) != set(FIELDS):
        raise ValueError(f"engine state: matches must be a dict with keys {sorted(FIELDS)}")
    batch = BatchState(n, "cpu")
    for name in FIELDS:
        value, width = fields[name], WIDTHS.get(name)
        rows = value if isinstance(value, list) and len(value) == n else None
        ok = rows is not None and all(
            type(v) in ((bool,) if name in BOOL_FIELDS else (int,)) and abs(v) < 2 ** 62
            for row in rows for v in (row if width and isinstance(row, list)
                                      and len(row) == width else [None] if width else [row]))
        if not ok:
            raise ValueError(f"engine state: matches.{name} must be {n} "
                             f"{'rows of ' + str(width) + ' ' if width else ''}"
                             f"{'bools' if name in BOOL_FIELDS else 'ints'}")
        getattr(batch, name).copy_(torch.tensor(value))
    if not bool((batch.matches >= 0).all()):
        raise ValueError("engine state: matches.matches must be counts >= 0")
    for i in range(n):
        try:
            match = batch.match(i, target, max_rounds)
        except ValueError as error:
            raise ValueError(f"engine state: matches row {i}: {error}") from None
        if match.over or match.turn < 0:
            raise ValueError(f"engine state: matches row {i} is not a match in progress")
    return batch
