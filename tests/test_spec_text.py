"""One spelling per agent spec (``agents.spec_text``): the canonical form is a valid spec that
builds the same agent, and where a spec is an identity (pair logs, the ladder's saved files, two
display names) two spellings of one agent are the same agent."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sevenrocks_env import arena
from sevenrocks_env.agents import ROLLOUTS, canonical_spec, make_agent, same_spec


@pytest.mark.parametrize("spellings, canonical", [
    (["search", "search:samples=64", " search: samples = 64 ", "search:win_bonus=5e1",
      "search:rollout=defensive,win_bonus=50.0,samples=64"], "search"),
    (["search:samples=16,win_bonus=25", "search:win_bonus=25.0,samples=16",
      "search:win_bonus=2.5e1, samples=16"], "search:samples=16,win_bonus=25"),
    (["search:time_limit=2", "search:time_limit=2.0"], "search:time_limit=2"),
    (["search:policy=shipped", "search:samples=64,policy=shipped,prior=5,threads=1",
      "search:policy= shipped ,reach=60,horizon=3,rollout=argmax"], "search:policy=shipped"),
    (["search:inference=0.5,policy=v.pt,candidates=192", "search:policy=v.pt,candidates=192,"
      "inference=.5,samples=64"], "search:policy=v.pt,inference=0.5,candidates=192"),
    (["ckpt:a.pt", "policy:a.pt", " ckpt: a.pt "], "ckpt:a.pt"),
    (["heuristic", " heuristic "], "heuristic"),
])
def test_spellings_of_one_agent_have_one_canonical_form(spellings, canonical):
    assert {canonical_spec(spec) for spec in spellings} == {canonical}
    assert canonical_spec(canonical) == canonical


def test_a_value_that_differs_from_the_default_is_kept_and_agents_differ():
    assert canonical_spec("search:win_bonus=0.00001") == "search:win_bonus=1e-05"
    assert canonical_spec("search:samples=63") == "search:samples=63"
    assert not same_spec("search", "search:samples=16")
    assert not same_spec("search", "greedy")
    assert not same_spec("search:policy=a.pt", "search:policy=b.pt")
    assert not same_spec("search:policy=shipped", "search:policy=shipped,inference=1")


@pytest.mark.parametrize("spec, words", [
    ("nonsense", "unknown agent spec"),
    ("search:samples=6.4", "samples must be int"),
    ("search:bogus=1", "bad parameter 'bogus=1'"),
    ("search:samples=1,samples=2", "given twice"),
    ("search :samples=2", "unknown agent spec"),  # as make_agent
])
def test_a_spec_make_agent_refuses_has_no_canonical_form(spec, words):
    with pytest.raises(ValueError, match=words):
        canonical_spec(spec)


def test_same_spec_compares_unreadable_text_as_text():
    """A spec this version does not read (from an older log) equals only itself."""
    assert same_spec("oldagent:x=1", "oldagent:x=1")
    assert not same_spec("oldagent:x=1", "oldagent:x=2")
    assert not same_spec(None, "search")


@settings(max_examples=60, deadline=None)
@given(samples=st.integers(1, 200), bonus=st.floats(0, 1000, allow_nan=False),
       rollout=st.sampled_from(ROLLOUTS), order=st.permutations(range(3)))
def test_the_canonical_form_builds_the_same_search(samples, bonus, rollout, order):
    parts = [f"samples={samples}", f"win_bonus={bonus!r}", f"rollout={rollout}"]
    spec = "search:" + ",".join(parts[i] for i in order)
    canonical = canonical_spec(spec)
    assert canonical_spec(canonical) == canonical
    built, rebuilt = make_agent(spec), make_agent(canonical)
    assert (built.samples, built.win_bonus, built.rollout) == \
        (rebuilt.samples, rebuilt.win_bonus, rebuilt.rollout)


def test_two_spellings_under_one_display_name_are_one_agent():
    (name_a, spec_a), (name_b, spec_b) = arena.split_names("s=search", "s=search:samples=64")
    assert (name_a, name_b) == ("s", "s")
    with pytest.raises(ValueError, match="named 's' but differ"):
        arena.split_names("s=search", "s=search:samples=16")


def test_without_torch_a_policy_search_spec_is_compared_as_text(monkeypatch):
    """torch is an extra: a pair log naming ``search:policy=`` is still read without it."""
    import sys
    monkeypatch.delitem(sys.modules, "sevenrocks_env.agents.policy_search", raising=False)
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ValueError,
                       match=r"search:policy needs PyTorch: pip install -e \"\.\[train\]\""):
        canonical_spec("search:policy=shipped")
    assert same_spec("search:policy=shipped", "search:policy=shipped")
    assert not same_spec("search:policy=shipped", "search:policy=shipped,samples=64")
    assert not same_spec("search:policy=shipped", "greedy")


def test_minus_zero_is_spelt_as_zero():
    """``win_bonus=-0`` is the agent ``win_bonus=0``: a pair log written under one spelling must
    resume under the other."""
    for key in ("win_bonus", "prior", "inference"):
        spec = f"search:policy=shipped,{key}=-0"
        assert same_spec(spec, f"search:policy=shipped,{key}=0"), key
        assert "-0" not in canonical_spec(spec), key
