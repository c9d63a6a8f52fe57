"""A uniformly random legal action for every row of a batch of action masks.

Random play is the baseline of every benchmark and the exploration of many agents, so it should
cost less than the step it feeds.  ``torch.rand(mask.shape)`` followed by a masked ``argmax``
draws 113 floats per row and reduces them one row at a time (about 3 ms at 4,096 rows on one CPU
thread, more than the engine's step).  :func:`random_actions` draws one number per row instead
and finds the chosen legal action with a few operations on 8-byte words of the mask:

1. each word of 8 mask bytes (0 or 1) holds ``(word * 0x0101010101010101) >> 56`` legal actions
   (the multiplication sums the bytes into the top byte; no byte can carry);
2. ``r = floor(u * legal)`` picks the ``r``-th legal action of the row, uniformly;
3. the running count over words finds the word holding it, and a 256 x 8 table gives the
   position of the ``r'``-th set bit of that word, its 8 bytes gathered into one byte by
   ``(word * 0x0102040810204080) >> 56`` (each byte's 0/1 lands on its own bit; no carries).

The result is exact: every legal action of a row has probability ``1 / legal`` (up to the
2**-24 granularity of a float32 draw), and an illegal one is never chosen.

:func:`random_set_bits` makes the same draw from the legal set packed as bits, two 64-bit words
a row (``layout.legal_words``), without unpacking it: per-byte bit counts by the classic SWAR
popcount, their running sums by the same multiplication, and the byte holding the chosen bit
found by one subtraction on all 8 bytes at once (``VectorEnv.random_actions``).
"""

from __future__ import annotations

import numpy as np
import torch

from ..checks import shown

_BYTE_SUM = 0x0101010101010101                       # sums a word's 8 bytes into its top byte
_BYTE_HIGH = 0x8080808080808080 - (1 << 64)       # each byte's top bit (as an int64)
_PAIRS, _NIBBLES, _BYTES = 0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F
_BYTE_BITS = sum(1 << (56 - 7 * i) for i in range(8))  # byte i's lowest bit -> bit 56 + i
MAX_ACTIONS = (1 << 15) - 1                           # the running counts are int16


def _nth_bit_table() -> np.ndarray:
    """``table[8 v + n]``: the position of the ``n``-th set bit of the byte ``v`` (0 if none)."""
    table = np.zeros((256, 8), np.int64)
    for value in range(256):
        for n, position in enumerate(i for i in range(8) if value >> i & 1):
            table[value, n] = position
    return table.reshape(-1)


_NTH_BIT = _nth_bit_table()
_TABLES: dict[str, torch.Tensor] = {}


def _nth_bit(device: torch.device) -> torch.Tensor:
    key = str(device)
    if key not in _TABLES:
        _TABLES[key] = torch.from_numpy(_NTH_BIT).to(device)
    return _TABLES[key]


def random_actions(mask: torch.Tensor, generator: torch.Generator | None = None,
                   check: bool = True) -> torch.Tensor:
    """``LongTensor[N]``: a uniformly random legal action of each row of ``mask``
    (``BoolTensor[N, A]``, any device; ``generator`` on the mask's device, or the default one).

    A row with no legal action raises ``ValueError`` (one synchronisation; ``check=False``
    skips it, and such a row then gets an arbitrary action).
    """
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"mask must be a 2-d bool tensor, got {type(mask).__name__} {shown(mask)}")
    if mask.dtype != torch.bool or mask.dim() != 2:
        raise ValueError(f"mask must be a 2-d bool tensor, got {mask.dtype} of shape "
                         f"{tuple(mask.shape)}")
    _check_generator(generator)
    rows, width = mask.shape
    if width > MAX_ACTIONS:
        raise ValueError(f"mask has {width} actions; at most {MAX_ACTIONS} are supported")
    padded = torch.nn.functional.pad(mask.view(torch.uint8), (0, -width % 8) if width else (0, 8))
    if padded.stride(0) != padded.shape[1]:  # padded by nothing: one row of a wider mask, say
        padded = padded.clone(memory_format=torch.contiguous_format)
    words = padded.view(torch.long)                                   # [N, W], bytes 0 or 1
    counts = ((words * _BYTE_SUM) >> 56).to(torch.int16)              # legal actions per word
    running = counts.cumsum(1, dtype=torch.int16)
    legal = running[:, -1]
    if check and rows and not bool((legal > 0).all()):
        row = int((legal == 0).nonzero()[0])
        raise ValueError(f"row {row} of the mask has no legal action")
    draw = torch.rand(rows, generator=generator, device=mask.device)
    chosen = (draw * legal).to(torch.int16)                           # the chosen-th legal action
    below = running <= chosen[:, None]                                # words wholly before it
    word = below.view(torch.uint8).sum(1, dtype=torch.int16).long().clamp_(max=words.shape[1] - 1)
    skipped = (counts * below).sum(1, dtype=torch.int16)
    bits = ((words.gather(1, word[:, None]).squeeze(1) * _BYTE_BITS) >> 56) & 0xFF
    within = torch.index_select(_nth_bit(mask.device), 0, 8 * bits + (chosen - skipped))
    return 8 * word + within


def _check_generator(generator) -> None:
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got "
                        f"{type(generator).__name__} {shown(generator)}")


def _byte_running_counts(words: torch.Tensor) -> torch.Tensor:
    """Byte ``i`` of each result: the set bits in bytes ``0..i`` of the word (at most 64, so no
    byte carries; the top byte is the word's popcount).  int64 arithmetic wraps, which is all
    the bit tricks need: the words' sign bit is an ordinary bit."""
    pairs = words - ((words >> 1) & _PAIRS)
    nibbles = (pairs & _NIBBLES) + ((pairs >> 2) & _NIBBLES)
    return ((nibbles + (nibbles >> 4)) & _BYTES) * _BYTE_SUM


def random_set_bits(words: torch.Tensor, generator: torch.Generator | None = None,
                    check: bool = True) -> torch.Tensor:
    """``LongTensor[N]``: a uniformly random set bit of each row of ``words`` (``LongTensor[N,
    2]``: bit ``a`` of a row is bit ``a % 64`` of its word ``a // 64``, as in
    ``layout.legal_words``).  For a legal set it is the same draw as :func:`random_actions` on
    the unpacked mask with the same generator state: the ``floor(u * legal)``-th legal action.

    A row with no set bit raises ``ValueError`` (one synchronisation; ``check=False`` skips it).
    """
    if not isinstance(words, torch.Tensor):
        raise TypeError(f"words must be a LongTensor[N, 2], got {type(words).__name__} "
                        f"{shown(words)}")
    if words.dtype != torch.long or words.dim() != 2 or words.shape[1] != 2:
        raise ValueError(f"words must be a LongTensor[N, 2], got {words.dtype} of shape "
                         f"{tuple(words.shape)}")
    _check_generator(generator)
    low, high = words.t().contiguous()          # (two rows: operations on [N] run fastest)
    low_running, high_running = _byte_running_counts(low), _byte_running_counts(high)
    in_low = low_running >> 56
    legal = in_low + (high_running >> 56)
    if check and words.shape[0] and not bool((legal > 0).all()):
        raise ValueError(f"row {int((legal == 0).nonzero()[0])} of words has no set bit")
    draw = torch.rand(words.shape[0], generator=generator, device=words.device)
    chosen = (draw * legal).long()              # the chosen-th set bit of the row
    upper = chosen >= in_low                    # in the high word
    within_word = chosen - in_low * upper
    word = torch.where(upper, high, low)
    running = torch.where(upper, high_running, low_running)
    # a byte's top bit survives subtracting within_word + 1 from it exactly when the running
    # count to that byte is above within_word: the chosen bit lies after the bytes that lose it
    above = (((running | _BYTE_HIGH) - (within_word + 1) * _BYTE_SUM) & _BYTE_HIGH) >> 7
    shift = 8 * (8 - (((above & _BYTE_SUM) * _BYTE_SUM) >> 56))
    before = ((running << 8) >> shift) & 0xFF   # set bits in the bytes before the chosen one
    byte = (word >> shift) & 0xFF
    within = torch.index_select(_nth_bit(words.device), 0, 8 * byte + (within_word - before))
    return 64 * upper + shift + within


__all__ = ["MAX_ACTIONS", "random_actions", "random_set_bits"]
