"""Mutation audit of the rule-based agents (``greedy``, ``random``, ``heuristic``), the lookahead
layout, agent-spec parsing and spelling, ``sb3:PATH`` and ``make_agent``: rules that the
existing tests left open."""

import numpy as np
import pytest

from sevenrocks_env import rules
from sevenrocks_env.agents import GreedyAgent, RandomAgent, make_agent
from sevenrocks_env.agents.base import parse_spec_params
from sevenrocks_env.agents.spec_text import NAMED_SPEC, canonical_spec, same_spec
from sevenrocks_env.agents.layout import (
    LookaheadLayout, best_action, legal_from_mask, points_after, tile_pips)
from sevenrocks_env.observation import OBS_SIZE, action_mask, encode
from sevenrocks_env.tiles import KNOCK, NUM_ACTIONS, TILE_PIPS, encode_action
from positions import positions_with_a_choice


def _inputs(match):
    return encode(match, match.turn), action_mask(match, match.turn)


def test_greedy_breaks_a_full_tie_by_the_lowest_action_number():
    """Equal points and equal pips (the same tile on two ends, or two tiles of one weight):
    the lowest action number, as its docstring says."""
    ties = 0
    for match in positions_with_a_choice(60):
        legal = rules.legal_actions(match)
        layout = LookaheadLayout.of_match(match)
        keys = {a: (points_after(layout, a), tile_pips(a)) for a in legal}
        best = max(keys.values())
        tied = [a for a in legal if keys[a] == best]
        ties += len(tied) > 1
        assert GreedyAgent().act(*_inputs(match)) == min(tied)
    assert ties >= 3  # the rule was exercised


def test_random_plays_every_legal_action_including_the_last():
    match = positions_with_a_choice(1, min_legal=3)[0]
    legal = rules.legal_actions(match)
    observation, mask = _inputs(match)
    agent = RandomAgent(seed=0)
    seen = [agent.act(observation, mask) for _ in range(60 * len(legal))]
    counts = np.array([seen.count(a) for a in legal])
    assert set(seen) == set(legal)
    assert counts.min() > 0.5 * len(seen) / len(legal)  # roughly uniform


def test_the_opening_places_any_tile_on_slot_0_only():
    layout = LookaheadLayout.of_match(rules.Match.new(3))
    assert layout.matching() == (1 << 28) - 1  # every tile fits the opening, 6|6 too
    for tile in range(28):
        assert layout.placements_of(tile) == [tile << 2]
    # a lone double at the opening counts both halves (R5): 5|5 scores
    five_five = next(t for t in range(28) if layout.after(t << 2).ends.count(5) >= 1
                     and layout.after(t << 2).end_sum() == 10)
    assert layout.best_points(five_five) == rules.placement_points(10) > 0


def test_a_tile_that_does_not_fit_has_no_placements_and_scores_nothing():
    match = positions_with_a_choice(1)[0]
    layout = LookaheadLayout.of_match(match)
    fits = layout.matching()
    outside = [t for t in range(28) if not (fits >> t) & 1]
    assert outside
    for tile in outside:
        assert layout.placements_of(tile) == []
        assert layout.best_points(tile) == 0


def test_an_empty_mask_is_refused_naming_the_turn():
    with pytest.raises(ValueError, match="no legal action.*this seat's turn"):
        legal_from_mask(np.zeros(NUM_ACTIONS, dtype=np.int8))


def test_best_action_takes_the_highest_value_and_ties_go_to_the_lower_action():
    assert best_action([3, 7, 9], [1.0, 2.0, 0.5]) == 7
    assert best_action([3, 7, 9], [1.0, 2.0, 2.0]) == 7
    assert best_action([3, 7, 9], [2.0, 2.0, 2.0]) == 3


def test_tile_pips_are_the_tiles_pips_and_the_knock_has_none():
    assert tile_pips(KNOCK) == 0
    for tile in range(28):
        for slot in range(4):
            assert tile_pips(encode_action(tile, slot)) == TILE_PIPS[tile]


def test_a_parameter_without_a_value_is_refused_even_for_a_string():
    """... saying it needs one (it read 'bad parameter', then listed it among the parameters:
    ``search:policy`` is what the agent's own name reads)."""
    with pytest.raises(ValueError, match=r"^agent 'search': rollout needs a value: write "
                                         r"rollout=VALUE, a str$"):
        parse_spec_params("rollout", {"rollout": str}, "agent 'search'")
    with pytest.raises(ValueError, match=r"agent 'search': samples needs a value: write "
                                         r"samples=VALUE, an int \(digits"):
        make_agent("search:samples")
    with pytest.raises(ValueError, match=r"agent 'search': policy needs a value"):
        make_agent("search:policy")
    with pytest.raises(ValueError, match=r"bad parameter 'depth' for agent 'search'"):
        make_agent("search:depth")  # not one of its parameters: as before


def test_an_agent_without_parameters_says_it_has_none():
    with pytest.raises(ValueError, match=r"bad parameter 'depth=2' for agent 'greedy' "
                                         r"\(parameters: none\)"):
        make_agent("greedy:depth=2")


def test_a_repeated_parameter_names_the_agent():
    with pytest.raises(ValueError, match="agent 'search': samples is given twice"):
        make_agent("search:samples=2,samples=3")


def test_an_unknown_parameter_lists_the_valid_specs():
    with pytest.raises(ValueError, match=r"bad parameter 'depth=2'.*; valid specs: random, greedy"):
        make_agent("search:depth=2")


@pytest.mark.parametrize("spec", ["bot=", "bot=   "])
def test_a_display_name_with_no_spec_is_an_unknown_spec_not_a_named_one(spec):
    assert NAMED_SPEC.match(spec) is None
    with pytest.raises(ValueError, match="unknown agent spec.*valid specs"):
        make_agent(spec)


def test_an_sb3_path_is_spelled_without_blanks():
    assert canonical_spec("sb3:  models/a.zip ") == "sb3:models/a.zip"
    assert same_spec("sb3: models/a.zip", "sb3:models/a.zip")


def test_a_sampling_spec_leaves_out_temperature_1_and_refuses_a_bad_one():
    pytest.importorskip("torch")
    assert canonical_spec("sample:policy=shipped,temperature=1") == "sample:policy=shipped"
    assert canonical_spec("sample:policy=shipped,temperature=2.0") == \
        "sample:policy=shipped,temperature=2"
    for bad in ("nan", "0", "-1"):
        with pytest.raises(ValueError, match="temperature must be a number in"):
            canonical_spec(f"sample:policy=shipped,temperature={bad}")


def test_a_float_near_its_default_is_kept():
    assert canonical_spec("search:win_bonus=50.5") == "search:win_bonus=50.5"
    assert canonical_spec("search:win_bonus=50.0") == "search"
    assert not same_spec("search:win_bonus=50.5", "search")


def test_an_sb3_model_over_a_megabyte_loads(tmp_path):
    """The size cap (1 GiB) refuses huge files only: a wide MLP's zip (over a MB) loads."""
    pytest.importorskip("sb3_contrib", reason="needs the [sb3] extra")
    from sb3_contrib import MaskablePPO

    from sevenrocks_env.single_agent import SingleAgentEnv

    env = SingleAgentEnv(opponents="random", seat="random", partner="self", target=100)
    model = MaskablePPO("MultiInputPolicy", env, n_steps=64, batch_size=64, seed=0,
                        policy_kwargs={"net_arch": [256, 256]}, device="cpu")
    path = tmp_path / "wide.zip"
    model.save(path)
    assert path.stat().st_size > 1 << 20
    agent = make_agent(f"sb3:{path}", seed=1)
    assert agent.name == "sb3:wide.zip"
    from sevenrocks_env.agents.sb3_agent import load_sb3_agent

    with pytest.raises(ValueError, match="seed"):  # the seed is checked, as every agent's
        load_sb3_agent(str(path), seed=-1)


def _model(observation_spaces: dict, actions: int = NUM_ACTIONS):
    from types import SimpleNamespace

    gymnasium = pytest.importorskip("gymnasium")
    return SimpleNamespace(observation_space=gymnasium.spaces.Dict(observation_spaces),
                           action_space=gymnasium.spaces.Discrete(actions))


def test_an_sb3_model_must_see_exactly_the_observation_and_the_mask_of_this_env():
    pytest.importorskip("sb3_contrib", reason="needs the [sb3] extra")
    from types import SimpleNamespace

    from gymnasium.spaces import Box

    from sevenrocks_env.agents.sb3_agent import _space_problem

    def box(size):
        return Box(0, 1, (size,), np.float32)

    assert _space_problem(_model({"observation": box(OBS_SIZE),
                                  "action_mask": box(NUM_ACTIONS)})) is None
    extra = _space_problem(_model({"observation": box(OBS_SIZE), "action_mask": box(NUM_ACTIONS),
                                   "history": box(4)}))
    assert "not this env's Dict(observation, action_mask)" in extra
    shape = _space_problem(_model({"observation": box(100), "action_mask": box(NUM_ACTIONS)}))
    assert shape.startswith("trained on observation (100,) and mask")
    mask = _space_problem(_model({"observation": box(OBS_SIZE), "action_mask": box(99)}))
    assert f"mask (99,); this sevenrocks has ({OBS_SIZE},) and ({NUM_ACTIONS},)" in mask
    actions = _space_problem(_model({"observation": box(OBS_SIZE),
                                     "action_mask": box(NUM_ACTIONS)}, actions=50))
    assert actions == f"trained on actions Discrete(50), not Discrete({NUM_ACTIONS})"
    # a flattened view's Box: its repr printed both bound arrays (4.6 kB in one message)
    flat = _space_problem(SimpleNamespace(observation_space=Box(0, 1, (OBS_SIZE + NUM_ACTIONS,)),
                                          action_space=None))
    assert flat == (f"trained on observations Box(shape=({OBS_SIZE + NUM_ACTIONS},), "
                    "dtype=float32), not this env's Dict(observation, action_mask)")


def test_an_sb3_file_over_1_gib_is_refused_by_its_size_before_it_is_read(tmp_path):
    from sevenrocks_env.agents.sb3_agent import load_sb3_agent

    path = tmp_path / "huge.zip"
    with open(path, "wb") as file:
        file.truncate((1 << 30) + 1)  # sparse: no disk used
    with pytest.raises(ValueError, match=r"huge.zip: larger than 1024 MB"):
        load_sb3_agent(str(path))


def test_an_sb3_agent_checks_its_seed():
    from sevenrocks_env.agents.sb3_agent import SB3Agent

    with pytest.raises(ValueError, match="seed"):
        SB3Agent(model=None).seed(-1)


@pytest.mark.parametrize("allow", ["False", 0, None])
def test_allow_pickles_must_be_a_bool(allow):
    with pytest.raises(TypeError, match="allow_pickles must be True or False"):
        make_agent("greedy", allow_pickles=allow)


@pytest.mark.parametrize("spec", ["sample:temperature=2", "sample:"])
def test_a_sampling_spec_without_a_policy_says_how_to_name_one(spec):
    with pytest.raises(ValueError, match="sample needs a checkpoint: sample:policy=shipped"):
        make_agent(spec)


def test_candidates_without_inference_is_refused():
    pytest.importorskip("torch")
    with pytest.raises(ValueError, match="candidates=N goes with inference=POWER"):
        make_agent("search:policy=shipped,samples=2,candidates=4")


def test_an_unreadable_checkpoint_is_refused_before_it_is_loaded(monkeypatch):
    """(Root reads any file, so unreadability is simulated by ``os.access``.)"""
    pytest.importorskip("torch")
    import os

    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(ValueError, match="cannot read checkpoint 'shipped'"):
        make_agent("ckpt:shipped")


@pytest.mark.parametrize("spec, kind", [(5, "int"), (None, "NoneType"), (["greedy"], "list")])
def test_a_spec_that_is_neither_text_nor_an_agent_names_its_type(spec, kind):
    with pytest.raises(ValueError, match=f"must be a string or an Agent, got {kind}$"):
        make_agent(spec)


def test_an_unknown_openspiel_bot_has_no_canonical_spelling():
    pytest.importorskip("open_spiel")
    with pytest.raises(ValueError, match="unknown OpenSpiel bot 'alphazero'"):
        canonical_spec("openspiel:alphazero:sims=5")
    assert not same_spec("openspiel:alphazero", "openspiel:alphazero ")


def test_an_int_parameter_of_thousands_of_digits_is_out_of_range_not_bad_digits():
    """Python's int() refuses text of more than 4,300 digits: such a samples was refused as
    "digits 0-9 only", though it was all digits; leading zeros count for nothing."""
    assert make_agent("search:samples=" + "0" * 4299 + "64").samples == 64
    with pytest.raises(ValueError, match="samples is out of range, got an int of 4,400 digits"):
        make_agent("search:samples=" + "9" * 4400)
    with pytest.raises(ValueError, match=r"samples must be an int in \[1, 579\]"):
        make_agent("search:samples=" + "9" * 100)  # at the bound: the agent's range message
