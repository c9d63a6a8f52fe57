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


@pytest.mark.parametrize("name", [None, 5, "", "  ", "two\nlines", b"bytes"], ids=repr)
def test_a_name_that_is_no_printable_text_is_the_class_name(name):
    """``name = None`` (or ``5``) played the whole run, then ``.table()`` failed on ``len()``."""
    class Unnamed(FirstLegal):
        pass
    Unnamed.name = name
    result = arena.evaluate(Unnamed(), "random", pairs=1, seed=1)
    assert result.agent_a == result.spec_a == "Unnamed" and "Unnamed" in result.table()
    ranked = arena.round_robin([Unnamed(), "greedy"], pairs=1)
    assert ranked.agents == ["Unnamed", "greedy"] and "Unnamed" in ranked.table()


def test_a_long_name_is_cut_and_a_good_one_kept():
    from sevenrocks_env.driver import MAX_AGENT_NAME, agent_name
    agent = FirstLegal()
    agent.name = "x" * 5000
    assert agent_name(agent) == "x" * (MAX_AGENT_NAME - 3) + "..."
    agent.name = "mine v2"
    assert agent_name(agent) == "mine v2"


def test_the_docs_say_a_non_integer_answer_is_an_agent_error_made_of_a_type_error():
    """docs/agents.md said "a `TypeError`": the arena and the driver raise an ``AgentError``
    (a RuntimeError) naming it; only ``driver.agent_action`` called directly raises it bare."""
    from pathlib import Path

    from sevenrocks_env import rules
    from sevenrocks_env.driver import MatchDriver, agent_action
    match = next(m for m in map(rules.Match.new, range(50)) if len(rules.legal_actions(m)) > 1)
    with pytest.raises(TypeError, match="act must return an int"):
        agent_action(FirstLegal(float), match, match.turn)
    with pytest.raises(AgentError, match="failed: TypeError: act must return an int") as info:
        MatchDriver(match, [FirstLegal(float)] * 4).run()
    assert isinstance(info.value, RuntimeError) and isinstance(info.value.__cause__, TypeError)
    docs = Path(__file__).parents[1] / "docs" / "agents.md"
    protocol = " ".join(docs.read_text().split("## Agents")[1].split("\n\n")[1].split())
    assert "is a `TypeError` saying so" not in protocol
    assert "an `AgentError` (a `RuntimeError`" in protocol and "`driver.agent_action`" in protocol
