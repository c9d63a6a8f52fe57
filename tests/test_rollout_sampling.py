"""The batched trainer's policy sampler: draws follow softmax(logits), masked actions never."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from sevenrocks_env.policy import MASKED_LOGIT  # noqa: E402
from training.batched_rollout import sample  # noqa: E402


def test_draws_follow_the_softmax():
    """Every legal action's count within 5 standard deviations of draws * p."""
    logits = torch.full((113,), MASKED_LOGIT)
    legal = torch.tensor([0, 7, 8, 50, 111, 112])
    logits[legal] = torch.tensor([0.0, 1.0, -1.0, 2.0, 0.5, -3.0])
    draws = 200_000
    counts = torch.bincount(sample(logits.expand(draws, 113), torch.Generator().manual_seed(1)),
                            minlength=113).double()
    p = torch.softmax(logits, 0).double()
    assert counts.sum() == draws and counts[legal].sum() == draws
    spread = 5 * (draws * p * (1 - p)).sqrt()
    assert bool(((counts - draws * p).abs() <= spread + 1e-9).all())


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), legal_count=st.integers(1, 113),
       scale=st.sampled_from([0.1, 1.0, 30.0]))
def test_masked_actions_are_never_drawn(seed, legal_count, scale):
    generator = torch.Generator().manual_seed(seed)
    rows = 64
    logits = torch.randn((rows, 113), generator=generator) * scale
    order = torch.rand((rows, 113), generator=generator).argsort(1)
    legal = torch.zeros((rows, 113), dtype=torch.bool)
    legal.scatter_(1, order[:, :legal_count], True)
    masked = torch.where(legal, logits, MASKED_LOGIT)
    for _ in range(20):
        chosen = sample(masked, generator)
        assert bool(legal[torch.arange(rows), chosen].all())


def test_a_draw_at_the_top_of_the_unit_interval_stays_legal(monkeypatch):
    """u just below 1 times a total that rounds up must not run past the last legal action."""
    logits = torch.full((4, 113), MASKED_LOGIT)
    logits[:, 3] = 0.0
    logits[:, 60] = 0.0
    monkeypatch.setattr(torch, "rand", lambda shape, generator=None: torch.full(shape, 1.0))
    assert sample(logits, None).tolist() == [60] * 4


def test_a_draw_at_the_bottom_of_the_unit_interval_stays_legal(monkeypatch):
    """torch.rand may return exactly 0.  The sampler's
    contract: the chosen i has cdf[i-1] <= u < cdf[i], so its probability is not 0 -- with
    u = 0 that is the first legal action, never a masked one before it."""
    logits = torch.full((4, 113), MASKED_LOGIT)
    logits[:, 3] = 0.0
    logits[:, 60] = 0.0
    monkeypatch.setattr(torch, "rand", lambda shape, generator=None: torch.zeros(shape))
    assert sample(logits, None).tolist() == [3] * 4


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_logits_that_are_not_finite_are_refused(bad):
    """NaN logits (a diverged network) would pick action 113, past the knock: the trainer's
    DivergenceError instead, counting the rows."""
    from training.ppo import DivergenceError

    logits = torch.zeros((5, 113))
    logits[1, 4] = logits[3, 0] = bad
    with pytest.raises(DivergenceError, match="logits are not finite in 2 of 5 rows"):
        sample(logits, torch.Generator().manual_seed(0))


def test_legal_logits_at_half_the_mask_s_logit_are_refused_illegal_ones_are_not():
    """``check_logits`` with the mask: a legal action's logit at or below ``MASKED_LOGIT / 2``
    (the masked distribution could draw an illegal action) is a ``LogitsError`` counting the
    rows; an illegal action's logit, however low (a network that masks its own outputs), is not
    looked at."""
    from training.ppo import LogitsError, check_logits

    mask = torch.tensor([[True, True, False], [True, False, True]])
    fine = torch.tensor([[0.0, -0.49e8, -1e9], [1.0, MASKED_LOGIT, 2.0]])
    assert check_logits(fine, mask) is fine
    for low in (-0.75e8, MASKED_LOGIT / 2):  # between the mask's logit and half of it; at half
        logits = torch.tensor([[0.0, low, 0.0], [1.0, 0.0, 2.0]])
        with pytest.raises(LogitsError, match="for legal actions at or below -5e.07, in 1 of 2 "
                                              "rows"):
            check_logits(logits, mask)
