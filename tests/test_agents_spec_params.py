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


@pytest.mark.parametrize("seed, error", [(True, TypeError), (1.5, TypeError), ("3", TypeError),
                                         (-1, ValueError)])
def test_make_agent_checks_its_seed(seed, error):
    """``True`` passed as seed 1, and ``-1``/``1.5`` failed deep in numpy without naming it."""
    for spec in ("random", "ckpt:shipped", "search:samples=2"):
        with pytest.raises(error, match="seed must be a non-negative int or None"):
            make_agent(spec, seed=seed)


def test_unseeded_sampling_policies_draw_afresh():
    """A sampling policy built without a seed started every generator at 0: every such agent
    in every run played the same moves (seed(None) did not; now the constructor calls it)."""
    first, second = (make_agent("sample:policy=shipped,temperature=100") for _ in range(2))
    assert first._generator.initial_seed() != second._generator.initial_seed()


def test_search_policy_names_the_parameter_that_is_wrong():
    from sevenrocks_env.agents.policy_search import PolicySearchAgent
    for params, words in (({"horizon": 0}, r"horizon must be an int in \[1, 100\], got 0$"),
                          ({"reach": -1}, r"reach must be an int in \[0, 1e6\], got -1$"),
                          ({"samples": 0}, r"samples must be an int in \[1, \d+\], got 0$"),
                          ({"threads": 0}, r"threads must be an int in \[1, \d+\], got 0$")):
        with pytest.raises(ValueError, match=words):
            PolicySearchAgent(**params)


def test_the_arena_help_lists_every_spec_whole_on_its_own_line(capsys):
    """The help wrapped specs mid-word ('sea' / 'rch:policy=...'): copied, they failed."""
    from sevenrocks_env.agents import valid_specs
    from sevenrocks_env.arena_cli import main
    assert main(["--help"]) == 0
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
    for spec in valid_specs("\n").splitlines():
        assert spec in lines, spec


def test_only_search_reads_a_policy_parameter_as_the_policy_search():
    """``policy=`` makes ``search:`` the policy-guided search; any other agent refuses it as a
    parameter it does not have (not a policy search under another name)."""
    for spec in ("greedy:policy=shipped", "heuristic:policy=shipped"):
        with pytest.raises(ValueError, match="policy"):
            make_agent(spec)


def test_the_policy_search_spec_is_read_with_spaces_around_its_names():
    """Spaces around a parameter's name are allowed (``samples= 16``), ``policy`` included."""
    from sevenrocks_env.agents.policy_search import PolicySearchAgent

    agent = make_agent("search: policy = shipped , samples=2")
    assert isinstance(agent, PolicySearchAgent) and agent.samples == 2


def test_an_empty_policy_is_refused_as_a_missing_checkpoint():
    with pytest.raises(ValueError, match="search:policy needs a checkpoint"):
        make_agent("search:policy=,samples=2")


@pytest.mark.parametrize("spec", ["search:policy=shipped,samples=2",
                                  "search:policy=shipped,samples=2,inference=0.5"])
def test_the_policy_search_specs_take_the_seed(spec):
    """``make_agent(..., seed=S)`` seeds the policy search (under ``inference=`` too): two
    agents built with one seed draw the same worlds, and another seed other ones."""
    def worlds_rng(seed):
        agent = make_agent(spec, seed=seed)
        return getattr(agent, "searcher", agent)._rng

    first, second, other = (worlds_rng(s).bit_generator.state for s in (3, 3, 4))
    assert first == second != other
