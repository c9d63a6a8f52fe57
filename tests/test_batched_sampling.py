"""random_actions: a uniformly random legal action per row, for any bool mask."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from sevenrocks_env.batched import random_actions
from sevenrocks_env.batched.sampling import MAX_ACTIONS


@settings(max_examples=60, deadline=None)
@given(width=st.integers(1, 200), rows=st.integers(1, 40), density=st.floats(0.0, 1.0),
       seed=st.integers(0, 2**31 - 1))
def test_only_legal_actions_are_drawn(width, rows, density, seed):
    generator = torch.Generator().manual_seed(seed)
    mask = torch.rand((rows, width), generator=generator) < density
    mask[torch.arange(rows), torch.randint(0, width, (rows,), generator=generator)] = True
    for _ in range(5):
        actions = random_actions(mask, generator)
        assert actions.dtype == torch.long and actions.shape == (rows,)
        assert bool(mask[torch.arange(rows), actions].all())


@pytest.mark.parametrize("legal", [[0], [112], [7, 8], [0, 15, 16, 63, 64, 112],
                                   list(range(0, 113, 3)), list(range(113))])
def test_every_legal_action_is_equally_likely(legal):
    """Each count within 5 standard deviations of draws / len(legal): a sampler that favours the
    first legal action, a word, or a bit position fails this by far."""
    draws = 120_000
    mask = torch.zeros((draws, 113), dtype=torch.bool)
    mask[:, legal] = True
    counts = torch.bincount(random_actions(mask, torch.Generator().manual_seed(7)), minlength=113)
    assert int(counts.sum()) == draws and int(counts[legal].sum()) == draws
    p = 1 / len(legal)
    spread = 5 * (draws * p * (1 - p)) ** 0.5
    assert (counts[legal].double() - draws * p).abs().max() <= spread + 1e-9


def test_the_same_generator_state_gives_the_same_actions():
    mask = torch.rand((500, 113), generator=torch.Generator().manual_seed(1)) < 0.3
    mask[:, 112] = True
    first = random_actions(mask, torch.Generator().manual_seed(3))
    again = random_actions(mask, torch.Generator().manual_seed(3))
    assert torch.equal(first, again)


def test_a_strided_view_is_read_as_its_values():
    base = torch.zeros((50, 120), dtype=torch.bool)
    base[:, 113:] = True                  # outside the view: must never be drawn
    base[:, 5] = True
    actions = random_actions(base[:, :113], torch.Generator().manual_seed(0))
    assert bool((actions == 5).all())


def test_bad_masks_get_clear_errors():
    mask = torch.ones((4, 113), dtype=torch.bool)
    mask[2] = False
    with pytest.raises(ValueError, match="row 2 of the mask has no legal action"):
        random_actions(mask)
    assert random_actions(mask, check=False).shape == (4,)
    with pytest.raises(ValueError, match="2-d bool tensor"):
        random_actions(torch.ones((4, 113)))
    with pytest.raises(ValueError, match="2-d bool tensor"):
        random_actions(torch.ones(113, dtype=torch.bool))
    with pytest.raises(ValueError, match="at most"):
        random_actions(torch.ones((1, 40_000), dtype=torch.bool))


def test_a_mask_without_actions_is_refused_in_words():
    """Rows but no columns: every row lacks a legal action (the clear error, not an IndexError
    from the empty running counts); no rows at all is an empty batch of actions."""
    with pytest.raises(ValueError, match="row 0 of the mask has no legal action"):
        random_actions(torch.zeros((3, 0), dtype=torch.bool))
    assert random_actions(torch.zeros((0, 0), dtype=torch.bool)).shape == (0,)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_on_cuda_only_legal_actions_are_drawn():
    generator = torch.Generator(device="cuda").manual_seed(0)
    mask = torch.rand((4096, 113), device="cuda", generator=generator) < 0.1
    mask[:, 112] = True
    actions = random_actions(mask, generator)
    assert actions.device.type == "cuda"
    assert bool(mask[torch.arange(4096, device="cuda"), actions].all())


def test_a_mask_wider_than_max_actions_is_refused():
    """``random_actions`` supports at most ``MAX_ACTIONS`` actions (its running counts are int16)."""
    random_actions(torch.ones((1, MAX_ACTIONS), dtype=torch.bool))
    with pytest.raises(ValueError, match="at most"):
        random_actions(torch.ones((1, MAX_ACTIONS + 1), dtype=torch.bool))
