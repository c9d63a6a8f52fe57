"""Counter-based per-match randomness: every deal is a pure function of its coordinates (R1, R2).

Round ``r`` of the ``m``-th match played in env ``i`` after ``reset(seed=s)`` is dealt from
``hash(s, i, m, r)`` alone, so it does not depend on the batch size, on the device, or on what
other envs did.  The hash is SplitMix64's finaliser in int64 torch arithmetic (multiplication
wraps modulo 2**64; right shifts are made logical by masking), so CPU and GPU give the same bits.

The deal is the permutation that sorts 28 hashed keys (seat ``k`` gets positions ``7k .. 7k+6``),
and the drawn opener is two bits of a 29th key: every seat equally likely (R2's fair draw).
"""

from __future__ import annotations

import torch

from ..dealing import MAX_SEED
from ..tiles import NUM_SEATS, NUM_TILES

_M1 = 0xBF58476D1CE4E5B9 - (1 << 64)
_M2 = 0x94D049BB133111EB - (1 << 64)
_GOLDEN = 0x9E3779B97F4A7C15 - (1 << 64)
_LOW63 = (1 << 63) - 1


def _shr(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Logical right shift of int64 values."""
    return (x >> bits) & ((1 << (64 - bits)) - 1)


def mix(x: torch.Tensor) -> torch.Tensor:
    """SplitMix64's finaliser: a bijection of 64-bit words with good avalanche."""
    x = x ^ _shr(x, 30)
    x = x * _M1
    x = x ^ _shr(x, 27)
    x = x * _M2
    return x ^ _shr(x, 31)


def as_int64(x: int) -> int:
    """A 64-bit word as torch's int64 holds it."""
    x &= (1 << 64) - 1
    return x - (1 << 64) if x >> 63 else x


def mix_int(x: int) -> int:
    """:func:`mix` of one Python int (a word given as a signed int64 value): the same bits."""
    x &= (1 << 64) - 1
    x ^= x >> 30
    x = (x * _M1) & ((1 << 64) - 1)
    x ^= x >> 27
    x = (x * _M2) & ((1 << 64) - 1)
    return as_int64(x ^ (x >> 31))


def stream_keys(seed: int, env_ids: torch.Tensor) -> torch.Tensor:
    """``[N]`` int64 key of each deal stream (seed, env): what :func:`deal_key` hashes first,
    kept by the env so that a step's deals hash only the match and round."""
    return mix(mix_int(as_int64(seed + _GOLDEN)) + env_ids * _GOLDEN)


def deal_key(seed: int, env_ids, matches, rounds) -> torch.Tensor:
    """``[N]`` int64 key of each (seed, env, match count, round)."""
    return round_key(stream_keys(seed, env_ids), matches, rounds)


def round_key(streams: torch.Tensor, matches, rounds) -> torch.Tensor:
    """:func:`deal_key` from the :func:`stream_keys` of the envs."""
    if isinstance(matches, torch.Tensor) and isinstance(rounds, torch.Tensor):
        # the same sums, each one operation (alpha: multiplied in int64, wrapping)
        return mix(torch.add(mix(torch.add(streams, matches, alpha=_GOLDEN)), rounds,
                             alpha=_GOLDEN))
    return mix(mix(streams + matches * _GOLDEN) + rounds * _GOLDEN)


def counter_key(seed: int, salt: int, *coordinates: torch.Tensor) -> torch.Tensor:
    """A 62-bit non-negative key per element, a hash of ``(seed, salt, coordinates...)`` alone:
    counter-based randomness (a draw that depends only on where it is made, not on the batch or
    the order of draws).  The seed and the salt are mixed in separate steps (hashed as one sum,
    seed s with salt a drew as seed s + 1 with salt a - 1).  Sums wrap modulo 2**64 as in
    :func:`deal_key`, so a seed near :data:`MAX_SEED` does not overflow."""
    key = mix(torch.full_like(coordinates[0], as_int64(seed + _GOLDEN)))
    key = mix(key + as_int64(salt * _GOLDEN))
    for coordinate in coordinates:
        key = mix(key + coordinate * _GOLDEN)
    return key & ((1 << 62) - 1)


def counter_uniform(key: torch.Tensor) -> torch.Tensor:
    """A float64 in [0, 1) from each :func:`counter_key` (its top 53 bits)."""
    return (key >> 9).double() * 2.0 ** -53


def deal(seed: int, env_ids: torch.Tensor, matches: torch.Tensor, rounds: torch.Tensor):
    """Hands ``[N, 4]`` (28-bit tile sets, 7 tiles each) and drawn openers ``[N]`` (R1, R2)."""
    return deal_from_streams(stream_keys(seed, env_ids), matches, rounds)


def deal_from_streams(streams: torch.Tensor, matches: torch.Tensor, rounds: torch.Tensor):
    """:func:`deal` from the :func:`stream_keys` of the envs."""
    key = round_key(streams, matches, rounds)
    keys = mix(key[:, None] + _counter_steps(streams.device)) & _LOW63          # [N, 29]
    order = torch.sort(keys[:, :NUM_TILES], dim=1, stable=True).indices   # a permutation
    bits = torch.index_select(_counter_steps(streams.device, bits=True), 0, order.view(-1))
    hands = bits.view(-1, NUM_SEATS, NUM_TILES // NUM_SEATS).sum(2)
    opener = (keys[:, NUM_TILES] >> 40) & 3    # (the key is non-negative: a logical shift)
    return hands, opener


_STEPS: dict[tuple[str, bool], torch.Tensor] = {}


def _counter_steps(device: torch.device, bits: bool = False) -> torch.Tensor:
    """``counter * _GOLDEN`` (wrapped) for the counters 1..29 of a deal's keys, or (``bits``)
    ``1 << t`` for the tiles 0..27, cached per device."""
    key = (str(device), bits)
    if key not in _STEPS:
        values = ([1 << t for t in range(NUM_TILES)] if bits else
                  [as_int64(c * _GOLDEN) for c in range(1, NUM_TILES + 2)])
        _STEPS[key] = torch.tensor(values, dtype=torch.long, device=device)
    return _STEPS[key]


__all__ = ["MAX_SEED", "as_int64", "counter_key", "counter_uniform", "deal", "deal_key",
           "deal_from_streams", "mix", "mix_int", "round_key", "stream_keys"]
