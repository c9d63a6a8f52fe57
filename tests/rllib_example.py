"""For the RLlib tests (they run in ``.venv-rllib``: test_rllib.py, test_rllib_inputs.py,
test_rllib_example.py, test_rllib_mutants.py): ``examples/rllib_ppo.py`` as a module, loaded
once per process, and a stand-in for RLlib's env context."""

from __future__ import annotations

import functools

from script_modules import example


@functools.cache
def load_example():
    # registered before it runs: the module registers itself to pickle by value
    return example("rllib_ppo", register=True)


class Context(dict):
    """RLlib's EnvContext: a dict (the env config) with the worker and vector index."""

    def __init__(self, worker, vector=0, **config):
        super().__init__(config)
        self.worker_index, self.vector_index = worker, vector


def first_hands(env, seed=None):
    """The hands of the first round ``env`` (a ``SevenRocksMultiAgentEnv``) deals after a reset."""
    env.reset(seed=seed)
    return env._aec.match.history[0].hands
