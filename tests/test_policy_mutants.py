"""Tests from a mutation audit of how a trained policy is loaded and played (``policy``,
``policy_settings``, ``policy_scorer``) and of the glue that plays agents (``driver``,
``public_round``, ``record_writer``, ``batched_agents``, ``arena_pool``): each pins a behaviour
that a small change of the code left every other test passing."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from sevenrocks_env.agents import make_agent  # noqa: E402
from sevenrocks_env.agents.heuristic import HeuristicAgent, HeuristicWeights  # noqa: E402
from sevenrocks_env.batched_agents import batched_agent, search_rngs  # noqa: E402
from sevenrocks_env.driver import AgentError, MatchDriver  # noqa: E402
from sevenrocks_env.policy import (  # noqa: E402
    PolicyAgent, PolicyNet, checked_temperature, load_policy, policy_device, probe_positions,
    sampling_name)
from sevenrocks_env.policy_scorer import layer_init, loading_weights  # noqa: E402
from sevenrocks_env.public_round import PublicRound  # noqa: E402
from sevenrocks_env.record import game_record  # noqa: E402
from sevenrocks_env.rules import Match, apply_action, legal_actions  # noqa: E402
from sevenrocks_env.tiles import KNOCK  # noqa: E402
from policy_files import save_policy, trained_looking  # noqa: E402
from positions import (  # noqa: E402
    knock_inputs, random_state, round_played_out, vector_positions)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# -- policy settings ------------------------------------------------------------------------------

def test_device_0_is_torchs_shorthand_for_cuda_0():
    """An int device is torch's shorthand (0 is "cuda:0"): a CUDA device, there or not, never
    a ``TypeError`` saying ints are not devices."""
    if torch.cuda.is_available():
        assert policy_device(0) == torch.device("cuda", 0)
    else:
        with pytest.raises(ValueError, match="CUDA is not available"):
            policy_device(0)


@pytest.mark.parametrize("device", [1.5, None, b"cpu", ["cpu"]], ids=repr)
def test_a_device_of_another_type_is_a_type_error_naming_the_types(device):
    with pytest.raises(TypeError, match=r"device must be a str or torch.device .* got "
                       + type(device).__name__):
        policy_device(device)


def test_a_deterministic_flag_of_another_type_is_named_with_its_value():
    with pytest.raises(TypeError, match="got str 'False'"):
        checked_temperature(1.0, "False")


def test_the_sampling_spec_at_temperature_1_names_no_temperature():
    """Temperature 1 is the default: the spec is ``sample:policy=PATH`` alone (what
    ``load_policy(..., deterministic=False)`` names its agent), other temperatures are named."""
    assert sampling_name("shipped") == "sample:policy=shipped"
    assert sampling_name("shipped", 1) == "sample:policy=shipped"
    assert sampling_name("a.pt", 2) == "sample:policy=a.pt,temperature=2.0"


@pytest.mark.parametrize("temperature", [2, np.float32(0.5)], ids=repr)
def test_a_checked_temperature_is_a_float(temperature):
    value = checked_temperature(temperature)
    assert type(value) is float and value == temperature


# -- the mlp scorer's initialisation --------------------------------------------------------------

def test_layers_built_for_loading_keep_torchs_own_initialisation():
    """Inside ``loading_weights()`` ``layer_init`` leaves a layer as ``nn.Linear`` made it (its
    weights are overwritten next; the orthogonal initialisation of a wide trunk took ~85 s);
    outside, and again once the block has ended, the bias is zeroed and the weights orthogonal."""
    torch.manual_seed(0)
    with loading_weights():
        inside = layer_init(nn.Linear(8, 8), 1.0)
    after = layer_init(nn.Linear(8, 8), 1.0)
    assert bool((inside.bias != 0).all())
    assert not torch.allclose(inside.weight @ inside.weight.T, torch.eye(8), atol=1e-4)
    assert bool((after.bias == 0).all())
    assert torch.allclose(after.weight @ after.weight.T, torch.eye(8), atol=1e-4)


def test_an_unknown_action_scorer_is_a_value_error_naming_the_scorers():
    with pytest.raises(ValueError, match=r"action_scorer must be one of .*'bilinear'.*'mlp'"):
        PolicyNet([8], action_scorer="linear")


def test_the_mlp_scorers_layout_is_the_one_saved_checkpoints_hold():
    """The documented sizes (state projection 64, tile embedding 28 x 16, slot embedding 4 x 4):
    a change would make every saved mlp checkpoint unreadable."""
    scorer = PolicyNet([24], action_features=2, action_scorer="mlp", scorer_sizes=[8]).scorer
    assert tuple(scorer.state.weight.shape) == (64, 24)
    assert tuple(scorer.tile_embedding.weight.shape) == (28, 16)
    assert tuple(scorer.slot_embedding.weight.shape) == (4, 4)
    size = PolicyNet([24], action_features=2).action_features.size
    assert tuple(scorer.layers[0].weight.shape) == (8, 64 + size + 16 + 4)


# -- the network ----------------------------------------------------------------------------------

def test_an_mlp_policy_with_its_own_scorer_sizes_reads_back(tmp_path):
    net = trained_looking(PolicyNet([16], action_features=2, action_scorer="mlp",
                                    scorer_sizes=[12, 6]))
    agent = load_policy(save_policy(tmp_path / "mlp.pt", net))
    assert agent.model.model_config()["scorer_sizes"] == [12, 6]
    observations, masks = probe_positions()
    with torch.no_grad():
        assert torch.equal(agent.model(observations, masks)[0], net(observations, masks)[0])


def test_a_network_is_tried_at_twelve_positions_before_it_loads():
    """Four deals, each at its opening and after 6 and 14 moves (``probe_positions``)."""
    observations, masks = probe_positions()
    assert tuple(observations.shape) == (12, 238) and tuple(masks.shape) == (12, 113)
    assert len({tuple(row.tolist()) for row in observations}) == 12


# -- the agent ------------------------------------------------------------------------------------

def test_new_sampling_agents_draw_fresh_seeds_without_being_seeded():
    """A sampling agent nobody seeds draws its generator's seed afresh when it is made (a fixed
    seed made every such agent repeat the same moves, run after run)."""
    net = PolicyNet([8])
    seeds = {PolicyAgent(net, deterministic=False)._generator.initial_seed() for _ in range(3)}
    assert len(seeds) == 3


def test_a_forced_move_is_played_without_asking_the_network():
    """A seat with one legal action (here a knock) plays it without a forward pass: a network
    gone non-finite is not asked, and a sampling agent's generator draws nothing."""
    net = PolicyNet([8])
    with torch.no_grad():
        net.policy_head.bias.fill_(float("nan"))
    for deterministic in (True, False):
        agent = PolicyAgent(net, deterministic=deterministic)
        agent.seed(5)
        state = agent._generator.get_state()
        assert agent.act(*knock_inputs()) == KNOCK
        assert torch.equal(agent._generator.get_state(), state)


def test_a_loaded_policy_is_named_by_its_ckpt_spec(tmp_path):
    path = save_policy(tmp_path / "p.pt")
    assert load_policy(path).name == f"ckpt:{path}"
    assert load_policy(path, deterministic=False).name == f"sample:policy={path}"


# -- the match driver -----------------------------------------------------------------------------

@pytest.mark.parametrize("error", [RuntimeError("broken weights"), KeyError("seat"),
                                   ZeroDivisionError("division by zero")], ids=repr)
def test_any_exception_of_an_agent_is_an_agent_error_naming_it(error):
    class Broken:
        name = "broken"

        def act(self, observation, mask):
            raise error

    agents = [Broken()] + [make_agent("random", seed=seed) for seed in (1, 2, 3)]
    with pytest.raises(AgentError, match=f"agent 'broken' at seat 0 failed: "
                                         f"{type(error).__name__}") as info:
        MatchDriver(Match.new(3), agents).run()
    assert info.value.__cause__ is error


def test_play_returns_the_points_the_move_scored():
    """``MatchDriver.play`` returns what the move scored (R5), as ``rules.apply_action`` does."""
    for seed in range(200):
        match = random_state(seed, seed % 12)
        if match.over or match.awaiting_deal:
            continue
        for action in legal_actions(match):
            points = apply_action(match.clone(), action)
            if points > 0:
                assert MatchDriver(match, [None] * 4).play(action) == points
                return
    raise AssertionError("no scoring move found")


# -- the public round -----------------------------------------------------------------------------

def test_a_round_holds_up_to_112_actions_and_no_more():
    """28 placements with at most 3 knocks before each: 112 actions is a round, 113 is not."""
    assert PublicRound(0, (0, 0), (KNOCK,) * 112).checked().actions == (KNOCK,) * 112
    with pytest.raises(ValueError, match="at most 112 actions, got tuple of 113"):
        PublicRound(0, (0, 0), (KNOCK,) * 113).checked()


def test_scores_up_to_a_million_either_way_are_scores():
    assert PublicRound(1, (10 ** 6, -10 ** 6), ()).checked().scores == (10 ** 6, -10 ** 6)
    with pytest.raises(ValueError, match="scores must be two ints"):
        PublicRound(1, (10 ** 6 + 1, 0), ()).checked()


# -- game records ---------------------------------------------------------------------------------

def test_a_record_names_its_format_sevenrocks_record_1():
    """The format string is what every saved record holds: changing it would make them
    unreadable (the reader checks it against the same constant)."""
    assert game_record(round_played_out(3))["format"] == "sevenrocks-record/1"


# -- the batched agents ---------------------------------------------------------------------------

def test_a_batched_searchs_worlds_differ_from_move_to_move():
    """Decision ``(pair, game, move)``'s generator is seeded by all of them and the arena's seed:
    the same env at another move number samples other worlds, the same decision the same ones."""
    context = {"seed": 3, "coordinate": torch.tensor([5, 5, 5, 6]),
               "moves": torch.tensor([0, 1, 0, 0])}
    draws = [rng.random() for rng in search_rngs(context, torch.arange(4))]
    again = [rng.random() for rng in search_rngs(context, torch.tensor([2, 1]))]
    assert len(set(draws[:2] + draws[3:])) == 3 and draws[0] == draws[2]
    assert again == [draws[2], draws[1]]
    other_seed = [rng.random() for rng in search_rngs({**context, "seed": 4}, torch.arange(1))]
    assert other_seed != draws[:1]


def test_the_batched_heuristic_plays_with_the_agents_own_weights():
    odd = HeuristicAgent(weights=HeuristicWeights(threat=-3.0, partner=2.0, knock=-4.0,
                                                  control=0.0, pips=-2.0, double=-5.0))
    batched, differs = batched_agent(odd), False
    for env in vector_positions(16, 12, seed=4):
        envs = torch.arange(16)
        chosen = batched.actions(env, envs, {}).tolist()
        observations, masks = env.observation.numpy(), env.action_mask.numpy()
        assert chosen == [odd.act(o, m) for o, m in zip(observations, masks)]
        differs |= chosen != [HeuristicAgent().act(o, m) for o, m in zip(observations, masks)]
    assert differs  # the weights change some choice: the test can tell them apart


def test_the_batched_arena_refuses_a_policy_search_with_sampled_rollouts():
    with pytest.raises(ValueError, match="rollout=argmax only"):
        batched_agent("search:policy=shipped,rollout=sample,samples=2")


# -- the arena's worker pool ----------------------------------------------------------------------

def test_a_pool_plays_every_pair_it_is_given_each_as_played_alone():
    """Nine pairs on one worker are five chunks of two, more than the four sent ahead: each
    chunk read sends the next, and pair ``p`` is the pair ``p`` that ``play_pair`` plays."""
    from sevenrocks_env.arena import play_pair
    from sevenrocks_env.arena_pool import play_pairs_in_pool
    played = list(play_pairs_in_pool("random", "greedy", 7, range(9), 20, 1, workers=1))
    sides = [[make_agent(spec), make_agent(spec)] for spec in ("random", "greedy")]
    alone = [play_pair(*sides, 7, pair, 20, 1) for pair in range(9)]

    def outcome(pair):  # (not the think times, which vary)
        return (pair.score, pair.margin, pair.rounds, pair.points_a, pair.points_b,
                tuple(pair.decisions))
    assert [outcome(pair) for pair in played] == [outcome(pair) for pair in alone]
    assert len({outcome(pair) for pair in alone}) > 1  # the pairs differ from one another
