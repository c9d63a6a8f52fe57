"""A researcher's own agent, written as docs/agents.md says: ``act`` and ``seed``, no ``name``
(it was refused as "not an Agent"); an answer that is not an integer is named as such (a
forgotten ``.item()`` read as an illegal move "tensor(49)" among the legal ones)."""

import numpy as np
import pytest
import torch

from sevenrocks_env import arena
from sevenrocks_env.agents import make_agent
from sevenrocks_env.agents.layout import legal_from_mask
from sevenrocks_env.driver import AgentError


class FirstLegal:
    """The docs' protocol and nothing more; ``answer`` turns the chosen action into what
    ``act`` returns."""

    def __init__(self, answer=int):
        self.answer = answer

    def act(self, observation, action_mask):
        return self.answer(legal_from_mask(action_mask)[0])

    def seed(self, seed):
        pass


def test_an_agent_without_a_name_plays_and_is_shown_by_its_class_name():
    assert make_agent(FirstLegal()).act is not None
    result = arena.evaluate(FirstLegal(), "random", pairs=2, seed=1)
    assert result.agent_a == "FirstLegal" and result.pairs == 2


def test_an_object_without_seed_is_refused_naming_what_it_lacks():
    class NoSeed:
        def act(self, observation, action_mask):
            return 0
    with pytest.raises(ValueError, match=r"got NoSeed \(an Agent has methods act\(observation, "
                                         r"action_mask\) and seed\(seed\); it lacks seed\)"):
        arena.evaluate(NoSeed(), "random", pairs=1)
    class Network:  # a model passed where an agent belongs
        pass
    with pytest.raises(ValueError, match="got Network .* it lacks act and seed"):
        make_agent(Network())
    with pytest.raises(ValueError, match="got int$"):
        make_agent(3)


@pytest.mark.parametrize("answer, shown", [
    (torch.tensor, r"got <Tensor>; a tensor or array needs \.item\(\)"),
    (lambda a: np.array([a]), r"got <ndarray>; a tensor or array needs \.item\(\)"),
    (float, r"got float \d+\.0$"),
    (lambda a: True, r"got bool True$"),
    (str, r"got str '\d+'$"),
])
def test_an_answer_that_is_not_an_integer_is_named(answer, shown):
    with pytest.raises(AgentError, match=r"agent 'FirstLegal' at seat \d failed: TypeError: "
                                         r"act must return an int \(a Python or NumPy integer\), "
                       + shown):
        arena.evaluate(FirstLegal(answer), "random", pairs=1, seed=2)


def test_numpy_integers_are_integers():
    plain = arena.evaluate(FirstLegal(), "random", pairs=2, seed=3).as_dict(timing=False)
    numpy = arena.evaluate(FirstLegal(np.int64), "random", pairs=2, seed=3).as_dict(timing=False)
    assert numpy == plain
