"""Trained policies: the masked distribution, legal play, shipped strength, action features, the
value head.  Checkpoint errors and loading: test_policy_checkpoints.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sevenrocks_env.observation import action_mask, encode  # noqa: E402
from sevenrocks_env.policy import MaskedCategorical, PolicyNet, load_policy  # noqa: E402
from sevenrocks_env.rules import Match, apply_action  # noqa: E402
from policy_files import assert_unseeded_agents_draw_fresh_seeds, save_policy  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "checkpoints" / "shipped" / "sevenrocks_ppo.pt"


# -- the masked distribution ----------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), min_size=113, max_size=113).filter(any), st.integers(0, 2**31))
def test_masked_distribution_samples_only_legal_actions(mask, seed):
    torch.manual_seed(seed)
    mask_t = torch.tensor([mask] * 64)
    logits = torch.randn(64, 113) * 5
    dist = MaskedCategorical(logits, mask_t)
    samples = dist.sample()
    assert mask_t[torch.arange(64), samples].all()
    assert mask_t[torch.arange(64), dist.mode()].all()
    assert torch.all(dist.probs[~mask_t] == 0)


def test_a_draw_at_given_uniforms_follows_the_distribution_and_is_always_legal():
    """``sample_at``: the inverse distribution function at the caller's uniforms (counter-based
    draws: the batched arena's and the distillation's sampling players)."""
    from sevenrocks_env.batched.deal import counter_key, counter_uniform
    mask = torch.zeros(1, 113, dtype=torch.bool)
    mask[0, [3, 40, 41, 112]] = True
    logits = torch.full((1, 113), 7.0)   # illegal actions with the largest logits: never drawn
    logits[0, [3, 40, 41, 112]] = torch.tensor([0.1, 0.2, 0.3, 0.4]).log()
    n = 40_000
    uniforms = counter_uniform(counter_key(7, 0xD158, torch.arange(n)))
    chosen = MaskedCategorical(logits.expand(n, -1), mask.expand(n, -1)).sample_at(uniforms)
    counts = torch.bincount(chosen, minlength=113)
    assert counts.sum() == n and counts[[3, 40, 41, 112]].sum() == n, "an illegal move"
    share = counts[[3, 40, 41, 112]].double() / n
    # binomial standard deviations are at most 0.0025 here: 4 of them
    assert torch.allclose(share, torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.double),
                          atol=0.01), share
    # the edges: the uniform's 0 is the first legal action, just under 1 the last
    ends = MaskedCategorical(logits.expand(2, -1), mask.expand(2, -1)).sample_at(
        torch.tensor([0.0, 1.0 - 2.0 ** -53], dtype=torch.double))
    assert ends.tolist() == [3, 112]
    for outside in (1.0, -0.1, float("nan")):
        with pytest.raises(ValueError, match=r"the uniforms must lie in \[0, 1\)"):
            MaskedCategorical(logits, mask).sample_at(torch.tensor([outside]))
    with pytest.raises(ValueError, match="must lie in"):   # float32 rounds 1 - 2**-53 to 1
        MaskedCategorical(logits, mask).sample_at(torch.tensor([1.0 - 2.0 ** -53]))
    with pytest.raises(ValueError, match="not finite"):
        MaskedCategorical(torch.full((1, 113), float("nan")), mask).sample_at(uniforms[:1])


def test_entropy_ignores_masked_actions():
    logits = torch.tensor([[0.0, 0.0, 50.0, -3.0]])
    mask = torch.tensor([[True, True, False, False]])
    dist = MaskedCategorical(logits, mask)
    assert dist.entropy().item() == pytest.approx(np.log(2), abs=1e-6)  # two equal legal actions
    one = MaskedCategorical(logits, torch.tensor([[False, False, False, True]]))
    assert one.entropy().item() == pytest.approx(0.0, abs=1e-6)  # a forced move has no entropy
    assert one.log_prob(torch.tensor([3])).item() == pytest.approx(0.0, abs=1e-6)
    # a legal action whose logit is -inf has probability 0 and adds 0, not NaN (0 * -inf)
    minus_inf = MaskedCategorical(torch.tensor([[0.0, float("-inf"), 0.0, 0.0]]),
                                  torch.tensor([[True, True, True, False]]))
    assert minus_inf.entropy().item() == pytest.approx(np.log(2), abs=1e-6)


def test_an_action_outside_the_mask_is_an_error_not_a_silent_move():
    """Softmax over an all-illegal row is uniform over illegal actions; an illegal action's log
    probability is about -1e8: both would be silently wrong data."""
    empty = MaskedCategorical(torch.zeros(2, 3), torch.tensor([[True, False, False],
                                                               [False, False, False]]))
    for call in (empty.sample, empty.mode):
        with pytest.raises(ValueError, match=r"in row \[1\] is not legal"):
            call()
    dist = MaskedCategorical(torch.zeros(2, 3), torch.tensor([[True, False, False],
                                                              [False, True, True]]))
    assert dist.log_prob(torch.tensor([0, 2])).tolist() == pytest.approx([0.0, -np.log(2)])
    with pytest.raises(ValueError, match=r"action 0 in row \[1\] is not legal"):
        dist.log_prob(torch.tensor([0, 0]))
    broken = MaskedCategorical(torch.full((1, 3), float("nan")),
                               torch.tensor([[False, True, True]]))
    with pytest.raises(ValueError, match="logits are not finite"):
        broken.mode()  # argmax of an all-NaN row: index 0, masked out


# -- playing --------------------------------------------------------------------------------------

def test_loaded_policy_plays_only_legal_actions(tmp_path):
    path = save_policy(tmp_path / "p.pt", PolicyNet([32, 32]))
    for deterministic in (True, False):
        agent = load_policy(path, deterministic=deterministic)
        agent.seed(3)
        match = Match.new(7, max_rounds=3, keep_history=False)
        moves = 0
        while not match.over and moves < 400:
            seat = match.turn
            mask = action_mask(match, seat)
            action = agent.act(encode(match, seat), mask)
            assert mask[action] == 1
            apply_action(match, action)
            moves += 1
        assert moves > 20


@pytest.mark.skipif(not SHIPPED.is_file(), reason="no shipped checkpoint")
def test_shipped_policy_beats_random():
    from sevenrocks_env.arena import evaluate
    from sevenrocks_env.agents import make_agent

    result = evaluate(load_policy(SHIPPED), make_agent("random"), pairs=30, seed=2024)
    # A policy no better than random (each match a coin flip at best) wins >= 85% of these
    # 60 matches with probability ~1e-8 (binomial tail), and < 1e-4 even if the two matches of
    # a duplicate pair always went the same way (26 of 30 pairs), so this cannot pass by luck.
    assert result.win_rate >= 0.85, result.table()


def test_policy_plays_through_the_env_unchanged(tmp_path):
    # The README example: a trained policy on seats 1 and 3 against your own agent.
    from sevenrocks_env import load_policy as package_load_policy
    from sevenrocks_env import sevenrocks_v0
    from sevenrocks_env.agents import make_agent

    path = save_policy(tmp_path / "p.pt", PolicyNet([32]))
    env = sevenrocks_v0.env(max_rounds=2)
    env.reset(seed=5)
    trained, mine = package_load_policy(str(path)), make_agent("greedy")
    steps = 0
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        seat = int(agent.split("_")[1])
        player = trained if seat in (1, 3) else mine
        action = None if terminated or truncated else player.act(obs["observation"],
                                                                 obs["action_mask"])
        assert action is None or obs["action_mask"][action] == 1
        env.step(action)
        steps += 1
    assert steps > 20


def _best_reply(after, seat_to_play, hidden, voids) -> int:
    """Most points the seat on turn could score with one tile it may hold (engine-computed)."""
    from sevenrocks_env.tiles import TILES, WITH_NUMBER, tiles_of

    best = 0
    for tile in tiles_of(hidden):
        if any((voids >> n) & 1 for n in set(TILES[tile])):
            continue
        for slot, number in enumerate(after.ends):
            if number >= 0 and (WITH_NUMBER[number] >> tile) & 1:
                trial = after.clone()
                for seat in range(4):
                    trial.hands[seat] &= ~(1 << tile)
                trial.hands[seat_to_play] |= 1 << tile
                best = max(best, apply_action(trial, 4 * tile + slot))
    return best


@settings(max_examples=4, deadline=None)
@given(st.integers(0, 10**6))
def test_action_features_agree_with_the_engine(seed):
    # Feature 0 is the placement's points, feature 17 the left opponent's best reply: both must
    # equal what the rules engine computes by playing the moves (R4, R5).  Features 21-23 (the
    # left opponent's / partner's chance to knock, own tiles that still fit) from the engine's
    # layout after the move.
    import random

    from sevenrocks_env.agents.belief import excluded_tiles
    from sevenrocks_env.policy_features import ActionFeatures
    from sevenrocks_env.rules import legal_actions
    from sevenrocks_env.tiles import ALL_TILES, KNOCK

    features = ActionFeatures()
    rng = random.Random(seed)
    match = Match.new(seed, max_rounds=2, keep_history=False)
    while not match.over:
        seat = match.turn
        actions = [a for a in legal_actions(match) if a != KNOCK]
        if actions:
            obs = torch.from_numpy(encode(match, seat)).unsqueeze(0)
            got = features(obs, torch.zeros(len(actions), dtype=torch.long), torch.tensor(actions))
            for row, action in zip(got, actions):
                after = match.clone()
                assert round(row[0].item() * 35) == apply_action(after, action)
                if after.over or after.placements == 0:
                    continue  # the round ended: no reply on this layout
                left = (seat + 1) % 4
                hidden = ALL_TILES & ~after.played & ~after.hands[seat]
                assert round(row[17].item() * 35) == _best_reply(after, left, hidden,
                                                                 match.voids[left])
                fits = after.matching()
                for k, feature in ((1, 21), (2, 22)):  # left opponent, partner: must knock
                    other = (seat + k) % 4
                    may_hold = hidden & ~excluded_tiles(match.voids[other])
                    share = min(1.0, match.hands[other].bit_count() / hidden.bit_count())
                    chance = (1.0 - share) ** (may_hold & fits).bit_count()
                    assert row[feature].item() == pytest.approx(chance, abs=1e-5)
                control = (after.hands[seat] & fits).bit_count() / match.hands[seat].bit_count()
                assert row[23].item() == pytest.approx(control, abs=1e-6)
        apply_action(match, rng.choice(legal_actions(match)))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_shipped_policy_runs_on_cuda_with_cpu_equal_logits():
    """Every tensor the action features build lives on the observation's device."""
    from sevenrocks_env.observation import action_mask, encode
    from sevenrocks_env.policy import load_policy
    from sevenrocks_env.rules import Match
    model = load_policy("shipped").model
    match = Match.new(3)
    obs = torch.from_numpy(encode(match, match.turn)).unsqueeze(0)
    mask = torch.from_numpy(action_mask(match, match.turn).astype(bool)).unsqueeze(0)
    cpu_logits, _ = model(obs, mask)
    gpu_logits, _ = model.to("cuda")(obs.cuda(), mask.cuda())
    assert torch.allclose(cpu_logits, gpu_logits.cpu(), atol=1e-4)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_legal_logits_are_an_error_not_action_0(bad):
    """A NaN or +inf logit makes the row NaN; its argmax is action 0, which was played when
    legal; sampling failed with torch's own message."""
    dist = MaskedCategorical(torch.tensor([[1.0, bad, 5.0]]), torch.ones(1, 3, dtype=torch.bool))
    for draw in (dist.mode, dist.sample):
        with pytest.raises(ValueError, match="not finite"):
            draw()


@pytest.mark.parametrize("mask, words", [(-1, "0/1 or booleans"), (float("nan"), "0/1"),
                                         ("0", "0/1")])
def test_a_mask_of_other_values_than_0_and_1_is_refused(mask, words):
    """-1, NaN or "0" counted as legal: the agent chose among all 113 actions."""
    agent = load_policy("shipped")
    match = Match.new(3)
    with pytest.raises(ValueError, match=words):
        agent.act(encode(match, match.turn), np.full(113, mask, dtype=object if mask == "0"
                                                       else float))


def test_an_unseeded_sampling_policy_draws_a_fresh_generator_seed():
    """seed(None) seeded 0: every unseeded sampling agent repeated the same moves."""
    assert_unseeded_agents_draw_fresh_seeds(*(load_policy("shipped", deterministic=False)
                                              for _ in range(2)))


def test_sampling_with_a_generator_checks_legality_too():
    """The trainer's rollout and the policy search sampled ``.probs`` themselves, unchecked: with
    legal logits far below the mask's -1e8 the illegal action got all the probability."""
    generator = torch.Generator().manual_seed(0)
    fine = MaskedCategorical(torch.zeros(2, 3), torch.tensor([[True, False, True]] * 2))
    assert set(fine.sample(generator).tolist()) <= {0, 2}
    skewed = MaskedCategorical(torch.tensor([[-1e9, -1e9, 0.0]]),
                               torch.tensor([[True, True, False]]))
    with pytest.raises(ValueError, match="not legal"):
        skewed.sample(generator)


@pytest.mark.parametrize("network", [dict(action_features=0), dict(action_features=2),
                                     dict(action_features=2, action_scorer="mlp")],
                         ids=["plain", "features", "mlp"])
def test_value_is_the_value_forward_gives(network):
    """``PolicyNet.value`` (what a rollout's cut bootstraps with) is the value ``forward``
    returns beside the logits (what the rollout stores), on real positions."""
    from positions import positions_with_a_choice

    torch.manual_seed(8)
    net = PolicyNet([32, 16], **network).eval()
    states = positions_with_a_choice(6)
    obs = torch.from_numpy(np.stack([encode(m, m.turn) for m in states]))
    masks = torch.from_numpy(np.stack([action_mask(m, m.turn) for m in states])).bool()
    with torch.no_grad():
        values = net.value(obs)
        _, forward_values = net(obs, masks)
    assert values.shape == (6,) and values.abs().max() > 1e-3
    torch.testing.assert_close(values, forward_values, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("hidden", [[], [0], [4097], [True], "64", list(range(1, 10))])
def test_a_network_s_hidden_sizes_are_1_to_8_widths_of_1_to_4096(hidden):
    """``PolicyNet([])`` was an IndexError inside its constructor, ``[0]`` a zero-width net."""
    with pytest.raises(ValueError, match=r"^hidden_sizes must be 1-8 layer widths \(1-4096\), got"):
        PolicyNet(hidden)
    assert PolicyNet((np.int64(8),)).hidden_sizes == [8]
