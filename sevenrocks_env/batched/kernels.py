"""The engine's per-step work, eager or fused by ``torch.compile`` (``VectorEnv(compile=True)``).

Eager, a step is a few hundred small torch operations, each a pass over B rows; at B = 4,096 on
one CPU thread their fixed costs dominate.  ``torch.compile`` (TorchInductor) fuses each of the
two functions below into one loop over the rows -- the same code, so there is still one
implementation of the rules (:mod:`.engine`, :mod:`.layout`), and the tests tie the compiled and
eager paths to each other:

* :func:`sevenrocks_env.batched.engine.place_and_score` -- the move of every row, its points and
  the round-end tests (the rare path after it, :func:`~sevenrocks_env.batched.engine.end_rounds`,
  stays eager: it works on a varying subset of rows, and it deals: the deal's hash
  (:func:`~sevenrocks_env.batched.deal.mix`) multiplies int64 values that wrap, which torch
  defines but the C++ that Inductor writes does not -- signed overflow is undefined behaviour,
  and at ``-O3`` a kernel fusing the hash with a gather failed its own bounds check; keep the
  hash out of compiled code);
* :func:`turn_legal_words` -- the legal actions of the seat on turn as two 64-bit words (the
  unpacking into the ``[B, 113]`` bool mask stays one eager table lookup).

On the CPU Inductor is told not to vectorise (``cpp.simdlen = 1``): it would vectorise over the
four seats or slots of a row, which measured slower than eager.  Compiling needs a C++ compiler
on the CPU (Triton on CUDA) and takes seconds per batch size, once per process; it is worth it
for long runs, not for a few steps.  The env calls the kernels outside inference mode and
without autograd, and gives the target as a tensor, so that a batch size is one variant of each
function; past torch's limit of 8 variants a process (``torch._dynamo.config.recompile_limit``)
torch warns and runs further batch sizes eagerly.  ``benchmarks/vector_speed.py --compile``
measures it.
"""

from __future__ import annotations

import functools
from collections import namedtuple

import torch

from . import layout
from .engine import place_and_score
from .state import BatchState

#: The functions of a step, as :class:`~sevenrocks_env.batched.VectorEnv` calls them.
Kernels = namedtuple("Kernels", "place_and_score turn_legal_words")


def turn_legal_words(state: BatchState) -> torch.Tensor:
    """``[B, 2]`` :func:`layout.legal_words` of the seat on turn in every match."""
    hands = state.hands.gather(1, state.turn[:, None]).squeeze(1)
    return layout.legal_words(hands, state.ends, state.placements == 0)


@functools.cache
def compiled(device_type: str) -> Kernels:
    """The :class:`Kernels` through ``torch.compile`` for ``device_type`` (one set per process
    and device type; each compiles once per batch size)."""
    options = {"cpp.simdlen": 1} if device_type == "cpu" else {}
    # torch >= 2.7 raises this for a failed build; imported here, as the eager engine (and
    # every policy) runs on older torch too
    import torch._inductor.exc as inductor
    build_failed = getattr(inductor, "InductorError", ())

    def fuse(fn):
        # not fullgraph: past torch's recompile limit (8 variants of a function in a process)
        # torch warns and runs the function eagerly instead of raising
        fused = torch.compile(fn, dynamic=False, options=options)

        @functools.wraps(fn)
        def call(*args):
            try:
                return fused(*args)
            except build_failed as error:  # e.g. no C++ compiler: say what to do
                raise RuntimeError(f"compile=True: torch.compile could not build the engine's "
                                   f"kernels ({str(error).strip()[:300]}); on the CPU it needs "
                                   f"a C++ compiler (g++); or use compile=False") from error
        return call

    return Kernels(fuse(place_and_score), fuse(turn_legal_words))


EAGER = Kernels(place_and_score, turn_legal_words)


__all__ = ["EAGER", "Kernels", "compiled", "turn_legal_words"]
