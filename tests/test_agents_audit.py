"""Audit of the agent specs, ``heuristic`` (scalar and batched), the batched agents and the world
rollouts (mutation testing): rules the existing tests left open.  (The batched heuristic of an
agent with other weights: test_batched_heuristic.py, beside its twin.)"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sevenrocks_env import rules  # noqa: E402
from sevenrocks_env.agents import make_agent  # noqa: E402
from sevenrocks_env.agents.heuristic import HeuristicAgent  # noqa: E402
from sevenrocks_env.agents.layout import view_of  # noqa: E402
from sevenrocks_env.batched import heuristic as batched_heuristic  # noqa: E402
from sevenrocks_env.batched import VectorEnv  # noqa: E402
from positions import choices, positions_with_a_choice, sampled_decisions  # noqa: E402


def _three_way_choice():
    match = positions_with_a_choice(1, min_legal=3)[0]
    return match, rules.legal_actions(match)


#: (offsets of the first three legal actions' values, the index of the one chosen), for the
#: scalar heuristic and its batched twin alike
TIES = [
    ((0.0, 1e-12, -1e-12), 0),    # within 1e-9 of the best so far: the lower action keeps it
    ((0.0, 5e-10, 9e-10), 0),     # a chain of near ties never walks up past the first
    ((0.0, 1e-6, 1e-6), 1),       # better by over 1e-9: the later action; its twin tie: no
    ((-1.0, 0.0, 0.0), 1),
]


@pytest.mark.parametrize("offsets, pick", TIES)
def test_heuristic_ties_within_1e9_go_to_the_lower_action(monkeypatch, offsets, pick):
    """Module docstring: "Ties go to the lower action number" (with the 1e-9 tolerance the
    batched twin documents), whatever the values' last bits."""
    match, legal = _three_way_choice()
    agent = HeuristicAgent()
    base = [10.0] * len(legal)
    values = [b + o for b, o in zip(base, offsets + (-5.0,) * (len(legal) - 3))]
    monkeypatch.setattr(agent, "values", lambda view, legal_: values)
    assert agent.choose(view_of(match, match.turn), legal) == legal[pick]


@pytest.mark.parametrize("offsets, pick", TIES)
def test_batched_heuristic_ties_within_1e9_go_to_the_lower_action(monkeypatch, offsets, pick):
    """``heuristic_actions``: "a later one only if it is better by over 1e-9"."""
    env = VectorEnv(1)
    env.reset(seed=0)
    everyone = torch.arange(1)
    legal = env.action_mask[0].nonzero().squeeze(1).tolist()
    assert len(legal) >= 3  # the opening seat may lay any of its 7 tiles
    real = batched_heuristic.heuristic_values

    def fake(state, mask, envs, weights=None):
        rows, actions, values = real(state, mask, envs)
        values = torch.full_like(values, -5.0)
        values[:3] = 10.0 + torch.tensor(offsets, dtype=torch.float64)
        return rows, actions, values

    monkeypatch.setattr(batched_heuristic, "heuristic_values", fake)
    chosen = batched_heuristic.heuristic_actions(env.state, env.action_mask, everyone)
    assert int(chosen[0]) == legal[pick]


# -- make_agent --------------------------------------------------------------------------------

@pytest.mark.parametrize("spec", [" greedy", "heuristic \n", "\tsearch:samples=2 ", " random",
                                  "ckpt: shipped ", " policy:shipped"])
def test_a_spec_with_surrounding_blanks_names_the_same_agent(spec):
    """Specs come from command lines and files: the blanks around one are not part of its name
    (``make_agent`` strips them, as ``canonical_spec`` does)."""
    agent, plain = make_agent(spec, seed=0), make_agent(spec.strip(), seed=0)
    assert type(agent) is type(plain)
    assert vars(agent).keys() == vars(plain).keys()


def _defensive(env, rows):
    """The batched defensive rollout policy's moves (``WorldRollouts(...).values``' chooser)."""
    from sevenrocks_env.batched.defensive import defensive_actions
    return defensive_actions(env.state, env.action_mask, rows)


def test_an_agent_instance_given_a_seed_is_reseeded():
    """``make_agent(agent, seed=s)``: the instance passes through, seeded with ``s`` -- it then
    plays exactly as a fresh agent of that seed."""
    from sevenrocks_env.agents import RandomAgent
    positions = positions_with_a_choice(12, min_legal=3)
    instance = RandomAgent(seed=1)
    assert make_agent(instance, seed=5) is instance
    fresh = choices(make_agent("random", seed=5), positions)
    assert choices(instance, positions) == fresh
    assert choices(make_agent(RandomAgent(seed=1), seed=6), positions) != fresh  # seeds matter


def test_a_policy_parameter_after_a_blank_still_makes_the_policy_search():
    """``search:samples=2, policy=shipped``: parameters are read with the blanks around their
    names stripped, so this is the policy search, not ``search`` refusing ``policy``."""
    from sevenrocks_env.agents.policy_search import PolicySearchAgent
    assert isinstance(make_agent("search:samples=2, policy=shipped"), PolicySearchAgent)
    assert isinstance(make_agent("search: policy =shipped"), PolicySearchAgent)


@pytest.mark.parametrize("spec", ["search:policy=", "search:policy= ,samples=2",
                                  "search:samples=2,policy="])
def test_a_policy_search_without_a_checkpoint_says_so(spec):
    with pytest.raises(ValueError, match="search:policy needs a checkpoint: policy=shipped or "
                                         "policy=PATH"):
        make_agent(spec)


def test_parameters_after_a_ckpt_path_point_at_the_sampling_spec():
    """``ckpt:shipped,temperature=0.5`` was "no such file: shipped,temperature=0.5" alone."""
    with pytest.raises(ValueError, match=r"no such file: shipped,temperature=0.5 .*; ckpt: takes a "
                                         r"path and no parameters \(sampling at a temperature: "
                                         r"sample:policy=PATH,temperature=T\)$"):
        make_agent("ckpt:shipped,temperature=0.5")
    with pytest.raises(ValueError) as error:  # a comma alone is part of a path
        make_agent("ckpt:no,such.pt")
    assert "takes a path" not in str(error.value)


def test_a_checkpoint_that_cannot_be_loaded_is_named_once(tmp_path):
    """``cannot load checkpoint '/d/x.pt': /d/x.pt was trained on ...`` said the path twice."""
    path = tmp_path / "x.pt"
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError) as error:
        make_agent(f"ckpt:{path}")
    assert str(error.value).startswith("cannot load checkpoint: ")
    assert str(error.value).count(str(path)) == 1, error.value


def test_a_file_given_to_the_other_prefix_says_which_prefix_loads_it(tmp_path):
    """An SB3 zip given as ``ckpt:`` said "0 data.pkl entries", our .pt given as ``sb3:`` "No
    data found": neither pointed at the prefix that loads it."""
    import zipfile
    pytest.importorskip("sb3_contrib")
    model = tmp_path / "model.zip"
    with zipfile.ZipFile(model, "w") as archive:  # the entries an SB3 model is saved with
        for name in ("data", "policy.pth", "pytorch_variables.pth", "_stable_baselines3_version"):
            archive.writestr(name, b"{}")
    with pytest.raises(ValueError, match="it is a Stable-Baselines3 model: load it with sb3:PATH$"):
        make_agent(f"ckpt:{model}")
    from sevenrocks_env.policy import shipped_path
    with pytest.raises(ValueError, match="it is a torch.save file: a sevenrocks policy loads with "
                                         "ckpt:PATH$"):
        make_agent(f"sb3:{shipped_path()}")


def test_valid_specs_name_every_kind_of_the_spec_table_once():
    """The error message's list of specs (``valid_specs``) covers the module's spec table: each
    kind begins a line, and the policy search lists each of its parameters once (``policy`` is
    written out as ``<shipped|PATH>``)."""
    from sevenrocks_env.agents import POLICY_SEARCH_PARAMS, valid_specs
    lines = valid_specs("\n").splitlines()
    assert valid_specs() == ", ".join(lines)
    for kind in ("random", "greedy", "heuristic", "search", "search:policy=", "ckpt:", "policy:",
                 "sample:policy=", "sb3:", "openspiel:ismcts|mcts"):
        assert any(line.startswith(kind) for line in lines), kind
    policy_search = next(line for line in lines if line.startswith("search:policy="))
    for name in POLICY_SEARCH_PARAMS:
        assert policy_search.count(f"{name}=") == 1, name
    with pytest.raises(ValueError) as error:
        make_agent("minimax")
    assert valid_specs() in str(error.value)


def test_spec_files_names_what_a_spec_loads():
    """``spec_files``: a pickle's path for ``sb3:``, nothing for rule-based agents, and a spec
    that names no checkpoint is refused in words."""
    from pathlib import Path
    from sevenrocks_env.agents import spec_files
    assert spec_files("sb3:~/model.zip") == [Path("~/model.zip").expanduser()]
    assert spec_files(" sb3:a.zip ") == [Path("a.zip")]
    for spec in ("greedy", "heuristic", "search:samples=2", "random"):
        assert spec_files(spec) == []
    for spec in ("ckpt:", "policy: ", "sample:temperature=2", "search:policy=,samples=2"):
        with pytest.raises(ValueError, match="names no checkpoint"):
            spec_files(spec)


def test_a_file_path_in_any_spec_starts_from_the_home_folder_at_a_tilde(tmp_path, monkeypatch):
    """``ckpt:~/x.pt`` (no shell expands ``~`` after ``ckpt:``) looked for a folder named ``~``;
    ``sb3:~/x.zip`` did not.  The pair log's fingerprint is that of the file read."""
    from policy_files import save_policy
    from sevenrocks_env import arena
    from sevenrocks_env.agents import spec_files
    from sevenrocks_env.fingerprints import files_fingerprint
    monkeypatch.setenv("HOME", str(tmp_path))
    path = save_policy(tmp_path / "x.pt")
    for spec in ("ckpt:~/x.pt", "policy:~/x.pt", "sample:policy=~/x.pt,temperature=2",
                 "search:policy=~/x.pt,samples=2"):
        assert spec_files(spec) == [path], spec
        assert files_fingerprint(spec) == files_fingerprint(f"ckpt:{path}")
        make_agent(spec, seed=0)
    log = tmp_path / "l.jsonl"
    once = arena.evaluate("ckpt:~/x.pt", "greedy", 2, seed=3).as_dict(timing=False)
    arena.evaluate("ckpt:~/x.pt", "greedy", 1, seed=3, log=log)
    assert arena.evaluate("ckpt:~/x.pt", "greedy", 2, seed=3, log=log).as_dict(timing=False) \
        == once  # resumed: the same file, the same fingerprint


# -- batched agents ------------------------------------------------------------------------------

@pytest.mark.parametrize("spec, kind", [
    (" greedy ", "BatchedGreedy"), ("random\n", "BatchedRandom"),
    (" heuristic", "BatchedHeuristic")])
def test_batched_agent_reads_a_spec_with_blanks_as_make_agent_does(spec, kind):
    from sevenrocks_env.batched_agents import batched_agent
    assert type(batched_agent(spec)).__name__ == kind


# -- world rollouts ------------------------------------------------------------------------------

def test_a_rollout_engine_kept_for_one_target_is_not_used_for_another():
    """``WorldRollouts.env`` keeps an engine per (size, target): decisions of the same size at
    another target get their own target's values (R8: the match ends at its target)."""
    from dataclasses import replace

    from sevenrocks_env.agents.world_rollouts import Decision, WorldRollouts

    low = sampled_decisions(target=60, count=6, samples=3)
    high = sampled_decisions(target=250, count=6, samples=3)
    pairs = [(a, b) for a in low for b in high if a.copies == b.copies]
    assert pairs
    shared, told_apart = WorldRollouts(), 0
    for a, b in pairs[:4]:
        want_a = WorldRollouts().values([a], _defensive)[0]
        want_b = WorldRollouts().values([b], _defensive)[0]
        assert np.array_equal(shared.values([a], _defensive)[0], want_a)
        assert np.array_equal(shared.values([b], _defensive)[0], want_b)
        # what an engine kept for a's target would give b: b's worlds played to a's target
        b_at_a = Decision(replace(b.view, target=a.view.target), b.legal, b.hidden, b.streams,
                          b.rounds)
        told_apart += not np.array_equal(WorldRollouts().values([b_at_a], _defensive)[0], want_b)
    assert told_apart  # else an engine shared by both targets would pass as well


def test_search_worlds_depend_on_the_arena_seed():
    """``search_rngs``: decision ``(pair, game, move)`` draws from a generator seeded by those
    numbers *and the arena's seed*: another seed, other worlds (the coordinates and moves:
    ``test_arena_audit.py``)."""
    from sevenrocks_env.batched_agents import search_rngs
    envs = torch.arange(3)

    def draws(seed):
        context = {"seed": seed, "coordinate": torch.tensor([0, 1, 2]),
                   "moves": torch.tensor([4, 4, 4])}
        return [rng.integers(0, 2**62) for rng in search_rngs(context, envs)]

    first = draws(1)
    assert draws(1) == first
    assert all(a != b for a, b in zip(draws(2), first))


def test_batched_agent_of_an_agent_object_is_its_batched_kind():
    """``batched_agent`` of an agent object: random, greedy and heuristic get their batched
    twins; a ``BatchedAgent`` passes through unchanged."""
    from sevenrocks_env.agents import GreedyAgent, RandomAgent
    from sevenrocks_env.batched_agents import (
        BatchedAgent, BatchedGreedy, BatchedHeuristic, BatchedRandom, batched_agent)
    assert type(batched_agent(RandomAgent(seed=3))) is BatchedRandom
    assert type(batched_agent(GreedyAgent())) is BatchedGreedy
    assert type(batched_agent(HeuristicAgent())) is BatchedHeuristic

    class Mine(BatchedAgent):
        name = "mine"

    mine = Mine()
    assert batched_agent(mine) is mine
    assert type(batched_agent(BatchedRandom())) is BatchedRandom


def test_rollouts_past_the_round_follow_each_worlds_own_deal_stream():
    """``rounds=2``: after the round the copies play a round dealt from their world's stream --
    two worlds with the same hands and stream get the same values, other streams other values
    (module docstring); ``Decision.sample`` draws each world's stream from the decision's rng."""
    from sevenrocks_env.agents.world_rollouts import Decision, WorldRollouts

    differs = 0
    for d in sampled_decisions(target=250, count=4, samples=3):
        hands = d.hidden[0]
        same = Decision(d.view, d.legal, [hands, hands], streams=[7, 7], rounds=2)
        other = Decision(d.view, d.legal, [hands, hands], streams=[7, 8], rounds=2)
        one_round = Decision(d.view, d.legal, [hands, hands], streams=[7, 8], rounds=1)
        values = WorldRollouts().values([same, other, one_round], _defensive)
        assert np.array_equal(values[0][0], values[0][1])
        assert np.array_equal(values[1][0], values[0][0])
        assert np.array_equal(values[2][0], values[2][1])  # one round: no later deal
        differs += not np.array_equal(values[1][0], values[1][1])
    assert differs >= 2
    sampled = sampled_decisions(target=250, count=1, samples=6)[0]
    assert len(set(sampled.streams)) == 6
    with pytest.raises(ValueError, match="one deal stream per world"):  # and at least one world
        Decision(sampled.view, sampled.legal, [], streams=[])


# -- seeds ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec", ["random", "search:samples=2", "search:policy=shipped,samples=2",
                                  "sample:policy=shipped,temperature=5"])
def test_make_agent_seeds_what_it_builds(spec):
    """``make_agent(spec, seed=s)``: two agents built with one seed play alike, and another seed
    plays otherwise (``random``, ``search``, the policy search, a sampling checkpoint)."""
    positions = positions_with_a_choice(16, min_legal=3)
    first = choices(make_agent(spec, seed=11), positions)
    assert choices(make_agent(spec, seed=11), positions) == first
    assert choices(make_agent(spec, seed=12), positions) != first


@pytest.mark.parametrize("spec, seed, error", [
    ("ckpt:/no/such/file.pt", -1, ValueError), ("ckpt:/no/such/file.pt", 2.5, TypeError),
    ("sample:policy=/no/such/file.pt", True, TypeError), (3, -1, ValueError)])
def test_a_bad_seed_is_named_before_anything_else(spec, seed, error):
    """``make_agent``'s docstring: a seed that is no non-negative int is a ``TypeError`` /
    ``ValueError`` naming ``seed`` -- checked first, whatever else is wrong with the spec."""
    with pytest.raises(error, match="seed"):
        make_agent(spec, seed=seed)


def test_a_sampling_temperature_is_checked_before_the_checkpoint_is_opened():
    with pytest.raises(ValueError, match="temperature must be a number"):
        make_agent("sample:policy=/no/such/file.pt,temperature=1e9")


@pytest.mark.parametrize("spec, words", [
    ("search:policy=shipped,reach=60.5", "reach must be int"),
    ("search:policy=shipped,horizon=2.0", "horizon must be int"),
    ("search:policy=shipped,threads=1.5", "threads must be int")])
def test_the_policy_search_counts_are_whole_numbers(spec, words):
    with pytest.raises(ValueError, match=words):
        make_agent(spec)
