"""Worker processes for the arena: duplicate pairs played in parallel, results in pair order.

Each worker builds its own agents from the spec strings once and plays the pairs it is sent with
:func:`sevenrocks_env.arena.play_pair`; agents are re-seeded per match from ``(seed, pair, match,
seat)``, so the outcome does not depend on the number of workers or on which worker plays what.
"""

from __future__ import annotations

import multiprocessing
import sys

from .agents import make_agent

_WORKER: dict = {}


def _worker_init(spec_a: str, spec_b: str, seed: int, target: int, max_rounds: int) -> None:
    _WORKER.update(a=[make_agent(spec_a), make_agent(spec_a)],
                   b=[make_agent(spec_b), make_agent(spec_b)],
                   seed=seed, target=target, max_rounds=max_rounds)


def _worker_pair(pair: int):
    from .arena import play_pair
    w = _WORKER
    return play_pair(w["a"], w["b"], w["seed"], pair, w["target"], w["max_rounds"])


def pool_context():
    """Fork, unless torch is loaded here: a forked child of a process whose torch thread pool
    has started can hang, so then use a fork server (the caller needs the usual
    ``if __name__ == "__main__":`` guard, as with any non-fork start method)."""
    return multiprocessing.get_context("forkserver" if "torch" in sys.modules else "fork")


def play_pairs_in_pool(spec_a: str, spec_b: str, seed: int, pairs: range, target: int,
                       max_rounds: int, workers: int):
    """Yield the :class:`~sevenrocks_env.arena.PairOutcome` of each pair in ``pairs`` from
    ``workers`` processes, in pair order, as each is ready."""
    workers = max(1, min(workers, len(pairs)))  # no idle processes for a short run
    with pool_context().Pool(workers, _worker_init,
                             (spec_a, spec_b, seed, target, max_rounds)) as pool:
        chunk = max(1, min(8, len(pairs) // (4 * workers)))
        yield from pool.imap(_worker_pair, pairs, chunksize=chunk)


__all__ = ["play_pairs_in_pool", "pool_context"]
