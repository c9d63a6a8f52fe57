"""Random OpenSpiel states of the Seven Rocks game, shared by the OpenSpiel tests (import it after
``pytest.importorskip("pyspiel")``)."""

import numpy as np
import pyspiel

from sevenrocks_env import rules
from sevenrocks_env.openspiel import GAME_NAME
from sevenrocks_env.tiles import NUM_TILES


def load(**params):
    return pyspiel.load_game(GAME_NAME, params)


def deal_chance(state, seed):
    """Feed the chance nodes of the round being dealt with ``rules.deal(seed, round)``."""
    if not state.is_chance_node():
        return
    round_index = 0 if state._match is None else len(state._match.history)
    hands, drawn = rules.deal(seed, round_index)
    tiles = [t for hand in hands for t in range(NUM_TILES) if (hand >> t) & 1]
    while state.is_chance_node():
        if state._drawing_opener:
            state.apply_action(drawn)
        else:
            state.apply_action(tiles[len(state._dealt)])


def random_state(game, rng, stop=None, at_chance=False):
    """Play uniformly random chance outcomes and moves; stop early when ``stop(state)`` holds
    (checked at the players' nodes, and at chance nodes too with ``at_chance``)."""
    state = game.new_initial_state()
    while not state.is_terminal():
        if stop is not None and (at_chance or not state.is_chance_node()) and stop(state):
            return state
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            state.apply_action(int(rng.choice(outcomes, p=probs)))
        else:
            state.apply_action(int(rng.choice(state.legal_actions())))
    return state


def first_state_where(game, stop, at_chance=False, seeds=range(200)):
    """The first state of random play (seed by seed) where ``stop`` holds."""
    for seed in seeds:
        state = random_state(game, np.random.default_rng(seed), stop, at_chance)
        if not state.is_terminal():
            return state
    raise AssertionError("no random match reached such a state")
