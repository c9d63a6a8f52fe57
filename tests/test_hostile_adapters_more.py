"""The single-agent view's settings given as NumPy arrays (a hostile or careless caller): a clear
error naming the setting, never NumPy's "truth value of an array is ambiguous" from a bare
``==`` or ``in``.  The RLlib adapter's own hostile inputs are in ``tests/test_rllib_inputs.py``
(Ray)."""

import numpy as np
import pytest

from sevenrocks_env.single_agent import SingleAgentEnv

TWO = np.array([0, 1])


@pytest.mark.parametrize("kwargs, error, words", [
    ({"seat": TWO}, TypeError, r"seat must be 0-3 or 'random', got ndarray"),
    ({"seat": np.array(["random", "random"])}, TypeError, "seat must be 0-3"),
    ({"seat": "north"}, ValueError, "seat must be 0-3 or 'random', got str 'north'"),
    ({"partner": np.array(["self", "self"])}, ValueError, "agent spec must be"),
    ({"illegal_action": TWO}, ValueError, "illegal_action must be one of"),
])
def test_array_settings_are_refused_by_name(kwargs, error, words):
    with pytest.raises(error, match=words):
        SingleAgentEnv(opponents="random", **kwargs)


def test_a_checked_seat_is_kept_as_a_plain_int():
    env = SingleAgentEnv(opponents="random", seat=np.int64(3))
    assert (env.seat, env.seat_option) == (3, 3) and type(env.seat_option) is int
    assert SingleAgentEnv(opponents="random", seat="random").seat_option == "random"
