"""Agent spec parameters are read in one spelling: a spec names an agent (a pair log's header,
an engine's opponent keys), so ``samples=3`` must not have a second, odd spelling."""

import pytest

from sevenrocks_env.agents import make_agent
from sevenrocks_env.agents.base import parse_spec_params

TYPES = {"samples": int, "win_bonus": float, "rollout": str}


@pytest.mark.parametrize("spec, words", [
    ("search:samples=\u0663", r"samples must be int \(digits 0-9 only\), got '\u0663'"),  # Arabic 3
    ("search:samples=1_000", r"samples must be int \(digits 0-9 only\), got '1_000'"),
    ("search:samples=\uff13", "samples must be int"),  # fullwidth 3
    ("search:samples=\u00b3", "samples must be int"),  # superscript 3
    ("search:samples=+3", "samples must be int"),
    ("search:samples=-3", "samples must be int"),  # no int parameter takes a negative
    ("search:samples=3.0", "samples must be int"),
    ("search:win_bonus=1_0", r"win_bonus must be float, got '1_0'"),
    ("search:win_bonus=\u0663", "win_bonus must be float"),
    ("search:time_limit=0.\uff15", "time_limit must be float"),
    ("search:win_bonus=nan", "win_bonus must be in"),  # the agent's own bounds, in its words
    ("search:time_limit=inf", "time_limit must be in"),
    ("search:win_bonus=-1", "win_bonus must be in"),
])
def test_odd_spellings_of_a_number_are_refused_in_words(spec, words):
    with pytest.raises(ValueError, match=words):
        make_agent(spec)


def test_a_refused_value_is_shown_cut_short():
    with pytest.raises(ValueError) as error:
        parse_spec_params("samples=" + "9x" * 500, TYPES, "agent 'search'")
    assert len(str(error.value)) < 120


@pytest.mark.parametrize("rest, expected", [
    ("samples=64,win_bonus=50.0,rollout=greedy", {"samples": 64, "win_bonus": 50.0,
                                                  "rollout": "greedy"}),
    ("samples= 16 , win_bonus=1e3", {"samples": 16, "win_bonus": 1000.0}),
    ("win_bonus=.5", {"win_bonus": 0.5}), ("win_bonus=49", {"win_bonus": 49.0}),
    ("samples=0", {"samples": 0}),  # in range or not is the agent's business
])
def test_plain_numbers_are_read(rest, expected):
    assert parse_spec_params(rest, TYPES, "agent 'search'") == expected


@pytest.mark.parametrize("spec", [
    "search:samples=3,time_limit=0.5,rollout=heuristic", "search:samples=4,win_bonus=50.0",
    "search:time_limit=1", "search:win_bonus=1000.0",
])
def test_the_specs_the_docs_use_still_make_agents(spec):
    make_agent(spec)
