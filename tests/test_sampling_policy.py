"""A trained policy that samples its moves (``sample:policy=PATH[,temperature=T]``): the spec,
the temperature, and the same player in the unbatched arena, the batched arena and the trainer's
opponents."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sevenrocks_env.agents import canonical_spec, make_agent, same_spec, spec_files  # noqa: E402
from sevenrocks_env.arena_batched import evaluate_batched, play_pairs_batched  # noqa: E402
from sevenrocks_env.batched_agents import batched_agent  # noqa: E402
from sevenrocks_env.policy import MaskedCategorical, PolicyAgent, load_policy, \
    shipped_path  # noqa: E402
from positions import vector_positions  # noqa: E402
from training.opponents import policy_actions, training_opponent  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def positions():
    """``(observations [N, 238], masks [N, 113])`` of random positions with a real choice."""
    observations, masks = [], []
    for env in vector_positions(64, 24, seed=11):
        rows = (env.action_mask.sum(1) > 1).nonzero().squeeze(1)
        observations.append(env.observation[rows].clone())
        masks.append(env.action_mask[rows].clone())
    return torch.cat(observations), torch.cat(masks)


def batched_draws(side, positions, seed: int) -> torch.Tensor:
    """``side.actions`` in the rows of ``positions``, row ``i`` as env ``i`` at its first move of
    an arena with ``seed`` (the observations and masks as the arena hands them over)."""
    observations, masks = positions

    class Rows:
        observation, action_mask = observations, masks
    n = len(masks)
    return side.actions(Rows, torch.arange(n), {"seed": seed, "coordinate": torch.arange(n),
                                                "moves": torch.zeros(n, dtype=int)})


def argmax_share(chosen: torch.Tensor, agent: PolicyAgent, positions) -> float:
    """The share of ``chosen`` that is the policy's most probable action."""
    observations, masks = positions
    with torch.inference_mode():
        logits, _ = agent.model(observations, masks)
    best = torch.where(masks, logits, -torch.inf).argmax(1)
    return float((chosen == best).double().mean())


# -- the spec -------------------------------------------------------------------------------------

def test_the_spec_builds_a_sampling_policy_at_its_temperature():
    agent = make_agent("sample:policy=shipped,temperature=0.25", seed=3)
    assert isinstance(agent, PolicyAgent)
    assert (agent.deterministic, agent.temperature) == (False, 0.25)
    assert agent.name == "sample:policy=shipped,temperature=0.25"
    assert make_agent("sample:policy=shipped").temperature == 1.0
    odd = make_agent("sample:policy=shipped,temperature=0.123456789")
    assert odd.name == "sample:policy=shipped,temperature=0.123456789"
    assert make_agent(odd.name).temperature == odd.temperature
    assert make_agent("ckpt:shipped").deterministic
    assert spec_files("sample:policy=shipped") == [shipped_path()]


@pytest.mark.parametrize("spellings, canonical", [
    (["sample:policy=a.pt", "sample: temperature=1.0, policy=a.pt", "sample:policy= a.pt "],
     "sample:policy=a.pt"),
    (["sample:policy=a.pt,temperature=0.50", "sample:temperature=5e-1,policy=a.pt"],
     "sample:policy=a.pt,temperature=0.5"),
])
def test_spellings_of_one_sampling_policy_have_one_canonical_form(spellings, canonical):
    assert {canonical_spec(spec) for spec in spellings} == {canonical}
    assert not same_spec(canonical, "ckpt:a.pt")
    assert not same_spec("sample:policy=a.pt", "sample:policy=a.pt,temperature=2")


@pytest.mark.parametrize("spec, words", [
    ("sample:", "needs a checkpoint"),
    ("sample:policy=shipped,temperature=0", r"got 0.0 \(the most probable action, temperature "
                                            r"0: ckpt:PATH\)"),
    ("sample:temperature=2", "needs a checkpoint"),
    ("sample:policy=shipped,temperature=0", r"temperature must be a number in \[0.01, 100\]"),
    ("sample:policy=shipped,temperature=nan", "temperature must be a number"),
    ("sample:policy=shipped,temperature=1e9", "temperature must be a number"),
    ("sample:policy=shipped,temperature=hot", "temperature must be float"),
    ("sample:policy=shipped,argmax=1", "bad parameter 'argmax=1'"),
    ("sample:policy=shipped,policy=shipped", "given twice"),
    ("sample:policy=/no/such/file.pt", "cannot read checkpoint"),
])
def test_bad_sampling_specs_get_clear_errors(spec, words):
    with pytest.raises(ValueError, match=words):
        make_agent(spec)


@pytest.mark.parametrize("spec", ["sample:policy=a.pt,temperature=1e9",
                                  "sample:policy=a.pt,temperature=-1",
                                  "sample:policy=a.pt,temperature=1e-400"])
def test_a_temperature_make_agent_refuses_has_no_canonical_form(spec):
    with pytest.raises(ValueError, match="temperature must be a number"):
        canonical_spec(spec)


@pytest.mark.parametrize("spec", ["sample:", "sample:policy=,temperature=2", "ckpt:",
                                  "search:policy= ,samples=4"])
def test_the_files_of_a_spec_without_a_checkpoint_are_a_clear_error(spec):
    with pytest.raises(ValueError, match="names no checkpoint: ckpt:PATH, sample:policy=PATH"):
        spec_files(spec)


def test_numpy_numbers_are_temperatures_too():
    model = make_agent("ckpt:shipped").model
    assert PolicyAgent(model, deterministic=False, temperature=np.float32(0.5)).temperature == 0.5
    assert PolicyAgent(model, deterministic=False, temperature=np.int64(2)).temperature == 2.0


def test_the_ends_of_the_temperature_range_are_temperatures():
    from sevenrocks_env.policy import TEMPERATURE_RANGE, checked_temperature
    low, high = TEMPERATURE_RANGE
    assert checked_temperature(low) == low and checked_temperature(high) == high
    for outside in (low / 2, high * 1.01):
        with pytest.raises(ValueError, match="temperature must be"):
            checked_temperature(outside)


def test_a_bad_temperature_is_refused_before_the_file_is_read():
    with pytest.raises(ValueError, match="temperature must be"):
        load_policy("/no/such/file.pt", deterministic=False, temperature=-1.0)
    with pytest.raises(ValueError, match="temperature must be"):
        PolicyAgent(make_agent("ckpt:shipped").model, temperature=True)


def test_a_temperature_for_a_deterministic_policy_is_refused_not_ignored():
    """``load_policy(path, temperature=0.5)`` loaded and played the plain argmax: a setting
    silently ignored.  Refused before the file is read; 1 (the default) still loads."""
    with pytest.raises(ValueError, match=r"temperature=0.5 applies to sampling: pass "
                                         "deterministic=False"):
        load_policy("/no/such/file.pt", temperature=0.5)
    model = make_agent("ckpt:shipped").model
    with pytest.raises(ValueError, match="applies to sampling"):
        PolicyAgent(model, temperature=2)
    assert load_policy("shipped", temperature=1.0).deterministic
    assert load_policy("shipped", deterministic=False, temperature=0.5).temperature == 0.5


# -- the temperature ------------------------------------------------------------------------------

def test_the_distribution_divides_the_logits_by_the_temperature(positions):
    observations, masks = positions
    model = make_agent("ckpt:shipped").model
    with torch.inference_mode():
        logits, _ = model(observations, masks)
    for temperature in (0.25, 1.0, 3.0):
        agent = PolicyAgent(model, deterministic=False, temperature=temperature)
        expected = torch.softmax(torch.where(masks, logits / temperature, -torch.inf), dim=1)
        got = agent.distribution(logits, masks)
        assert torch.allclose(got.probs, expected, atol=1e-6)
        assert torch.equal(got.mode(), MaskedCategorical(logits, masks).mode())


def test_act_samples_and_a_low_temperature_plays_the_argmax(positions):
    """At temperature 1 the shipped policy (flat: distilled toward soft targets) often plays
    another move than its most probable; at 0.01 almost never."""
    observations, masks = positions
    shares = {}
    for temperature in (0.01, 1.0):
        agent = make_agent(f"sample:policy=shipped,temperature={temperature}", seed=5)
        chosen = torch.tensor([agent.act(o, m) for o, m in
                               zip(observations.numpy(), masks.numpy().astype(np.int8))])
        assert masks[torch.arange(len(chosen)), chosen].all()
        shares[temperature] = argmax_share(chosen, agent, positions)
    assert len(masks) > 500
    assert shares[0.01] > 0.97 and shares[1.0] < 0.9, shares


# -- the batched arena and the trainer play the same sampling player ------------------------------

def test_the_batched_arena_samples_by_the_pairs_coordinates():
    """The draws depend on (seed, pair, game, move), not on the batch; another seed plays other
    games; the sampling player's games differ from its argmax's."""
    spec = "sample:policy=shipped"
    one_by_one = evaluate_batched(spec, "greedy", 6, seed=9, batch=1)
    together = evaluate_batched(spec, "greedy", 6, seed=9)

    def figures(result):
        return (result.win_rate, result.mean_margin, result.round_win_rate,
                result.rounds_per_match)
    assert figures(one_by_one) == figures(together)

    def moves(side, seed):
        _, records = play_pairs_batched(batched_agent(side), batched_agent("greedy"), seed=seed,
                                        first=0, pairs=4, target=250, max_rounds=100,
                                        records=True)
        return [[move["action"] for rnd in record["rounds"] for move in rnd["moves"]]
                for record in records]

    sampled = moves(spec, 9)
    assert sampled == moves(spec, 9)
    assert sampled != moves(spec, 10)
    assert sampled != moves("ckpt:shipped", 9)


def test_the_batched_draws_follow_the_seed_on_the_same_positions(positions):
    """Another arena seed draws other moves in the same positions (not only other deals)."""
    side = batched_agent("sample:policy=shipped")
    chosen = [batched_draws(side, positions, seed) for seed in (4, 4, 5)]
    assert torch.equal(chosen[0], chosen[1])
    assert float((chosen[0] != chosen[2]).double().mean()) > 0.1


def test_the_batched_sampler_plays_at_the_agents_temperature(positions):
    masks = positions[1]
    shares = {}
    for temperature in (0.01, 1.0):
        agent = make_agent(f"sample:policy=shipped,temperature={temperature}")
        chosen = batched_draws(batched_agent(agent), positions, seed=4)
        assert masks[torch.arange(len(masks)), chosen].all()
        shares[temperature] = argmax_share(chosen, agent, positions)
    assert shares[0.01] > 0.97 and shares[1.0] < 0.9, shares


def test_a_sampling_policy_is_a_training_opponent_at_its_temperature(positions):
    observations, masks = positions
    shares = {}
    for temperature in (0.01, 1.0):
        agent = training_opponent(f"sample:policy=shipped,temperature={temperature}")
        agent.seed(2)
        chosen = policy_actions(agent, observations, masks)
        assert masks[torch.arange(len(chosen)), chosen].all()
        shares[temperature] = argmax_share(chosen, agent, positions)
    assert shares[0.01] > 0.97 and shares[1.0] < 0.9, shares
