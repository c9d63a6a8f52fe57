"""Random positions for tests: a match after some uniformly random legal moves."""

import numpy as np

from sevenrocks_env import rules


def random_state(seed: int, moves: int, target: int = rules.DEFAULT_TARGET,
                 max_rounds: int | None = None) -> rules.Match:
    """A match after ``moves`` uniformly random legal actions (possibly across rounds)."""
    rng = np.random.default_rng(seed)
    match = rules.Match.new(seed, target=target, max_rounds=max_rounds)
    for _ in range(moves):
        if match.over:
            break
        legal = rules.legal_actions(match)
        rules.apply_action(match, legal[int(rng.integers(len(legal)))])
    return match
