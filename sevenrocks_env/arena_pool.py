"""Worker processes for the arena: duplicate pairs played in parallel, results in pair order.

Each worker builds its own agents from the spec strings once and plays what it is sent: single
pairs with :func:`sevenrocks_env.arena.play_pair` (the unbatched arena; agents re-seeded per
match from ``(seed, pair, match, seat)``), or spans of pairs stepped together with
:func:`sevenrocks_env.arena_batched.play_pairs_batched` (the batched arena; every agent a
function of the env's own coordinates).  Either way the outcome does not depend on the number
of workers or on which worker plays what.
"""

from __future__ import annotations

import multiprocessing
import sys

from .agents import make_agent

_WORKER: dict = {}


def _pair_init(spec_a: str, spec_b: str, seed: int, target: int, max_rounds: int) -> None:
    _WORKER.update(a=[make_agent(spec_a), make_agent(spec_a)],
                   b=[make_agent(spec_b), make_agent(spec_b)],
                   seed=seed, target=target, max_rounds=max_rounds)


def _play_pair(pair: int):
    from .arena import play_pair
    w = _WORKER
    return play_pair(w["a"], w["b"], w["seed"], pair, w["target"], w["max_rounds"])


def _span_init(spec_a: str, spec_b: str, seed: int, target: int, max_rounds: int,
               threads: int) -> None:
    import torch

    from .arena_batched import batched_agent
    torch.set_num_threads(threads)
    _WORKER.update(a=batched_agent(spec_a), b=batched_agent(spec_b), seed=seed, target=target,
                   max_rounds=max_rounds)


def _play_span(span: tuple[int, int]):
    from .arena_batched import play_pairs_batched
    w, (first, count) = _WORKER, span
    return play_pairs_batched(w["a"], w["b"], w["seed"], first, count, w["target"],
                              w["max_rounds"])


def pool_context():
    """Fork, unless torch is loaded here: a forked child of a process whose torch thread pool
    has started can hang, so then use a fork server (the caller needs the usual
    ``if __name__ == "__main__":`` guard, as with any non-fork start method)."""
    return multiprocessing.get_context("forkserver" if "torch" in sys.modules else "fork")


def _in_pool(initializer, settings: tuple, work, items, workers: int, chunksize: int = 1):
    with pool_context().Pool(workers, initializer, settings) as pool:
        yield from pool.imap(work, items, chunksize=chunksize)


def play_pairs_in_pool(spec_a: str, spec_b: str, seed: int, pairs: range, target: int,
                       max_rounds: int, workers: int):
    """Yield the :class:`~sevenrocks_env.arena.PairOutcome` of each pair in ``pairs`` from
    ``workers`` processes, in pair order, as each is ready."""
    workers = max(1, min(workers, len(pairs)))  # no idle processes for a short run
    chunk = max(1, min(8, len(pairs) // (4 * workers)))
    yield from _in_pool(_pair_init, (spec_a, spec_b, seed, target, max_rounds), _play_pair,
                        pairs, workers, chunk)


def play_spans_in_pool(spec_a: str, spec_b: str, seed: int, spans: list[tuple[int, int]],
                       target: int, max_rounds: int, workers: int, threads: int = 1):
    """Yield the outcome list of each ``(first pair, count)`` span, played on the batched
    engine (CPU, ``threads`` torch threads a worker) by ``workers`` processes, in span order,
    as each is ready."""
    workers = max(1, min(workers, len(spans)))
    yield from _in_pool(_span_init, (spec_a, spec_b, seed, target, max_rounds, threads),
                        _play_span, spans, workers)


__all__ = ["play_pairs_in_pool", "play_spans_in_pool", "pool_context"]
