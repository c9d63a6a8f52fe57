"""random_actions: a uniformly random legal action per row, for any bool mask; random_set_bits and
VectorEnv.random_actions: the same draw from the legal set packed as bits."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.batched import random_actions
from sevenrocks_env.batched.sampling import MAX_ACTIONS, random_set_bits
from sevenrocks_env.observation import action_mask


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


def test_one_row_of_a_wider_mask_can_be_drawn_from():
    """A single-row slice whose width is a multiple of 8 (so nothing is padded) was a view the
    sampler could not read as 64-bit words: a RuntimeError."""
    wide = torch.zeros((3, 140), dtype=torch.bool)
    wide[1, 131] = True
    assert random_actions(wide[1:2, 3:139]).tolist() == [128]
    assert random_actions(wide[1:2, 131:139]).tolist() == [0]


# -- random_set_bits and VectorEnv.random_actions: the same draw from the packed legal set ----

def _packed(mask: torch.Tensor) -> torch.Tensor:
    """``[N, 2]`` int64 words of a ``[N, <=128]`` bool mask: bit ``a`` is bit ``a % 64`` of word
    ``a // 64`` (``layout.legal_words``'s packing), built independently of the engine."""
    words = torch.zeros((mask.shape[0], 2), dtype=torch.long)
    for a in range(mask.shape[1]):
        bit = torch.tensor(1 << (a % 64) if a % 64 < 63 else -(1 << 63))  # bit 63: the sign bit
        words[:, a // 64] |= torch.where(mask[:, a], bit, torch.tensor(0))
    return words


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 60), density=st.floats(0.0, 1.0), seed=st.integers(0, 2**31 - 1))
def test_random_set_bits_draws_what_random_actions_draws_from_the_unpacked_mask(rows, density,
                                                                                 seed):
    """The same generator state gives the same action for every row, whatever bits are set
    (the sign bit 63 and the second word included): so it is uniform and legal as well."""
    generator = torch.Generator().manual_seed(seed)
    mask = torch.rand((rows, 113), generator=generator) < density
    mask[torch.arange(rows), torch.randint(0, 113, (rows,), generator=generator)] = True
    mask[::3, 63] = True
    words = _packed(mask)
    for draw in range(4):
        expected = random_actions(mask, torch.Generator().manual_seed(seed + draw))
        drawn = random_set_bits(words, torch.Generator().manual_seed(seed + draw))
        assert torch.equal(drawn, expected)


@pytest.mark.parametrize("legal", [[63], [64], [0, 63, 64, 112], [7, 8, 55, 56, 57, 127],
                                   list(range(128))])
def test_every_set_bit_is_equally_likely(legal):
    draws = 120_000
    mask = torch.zeros((draws, 128), dtype=torch.bool)
    mask[:, legal] = True
    words = _packed(mask[:1]).expand(draws, 2)
    counts = torch.bincount(random_set_bits(words, torch.Generator().manual_seed(11)),
                            minlength=128)
    assert int(counts[legal].sum()) == draws
    p = 1 / len(legal)
    spread = 5 * (draws * p * (1 - p)) ** 0.5
    assert (counts[legal].double() - draws * p).abs().max() <= spread + 1e-9


def test_bad_words_get_clear_errors():
    words = torch.tensor([[1, 0], [0, 0], [0, 4]])
    with pytest.raises(ValueError, match="row 1 of words has no set bit"):
        random_set_bits(words)
    assert random_set_bits(words, check=False).shape == (3,)
    for bad in (torch.ones((3, 2), dtype=torch.int32), torch.ones(2, dtype=torch.long),
                torch.ones((3, 3), dtype=torch.long)):
        with pytest.raises(ValueError, match=r"LongTensor\[N, 2\]"):
            random_set_bits(bad)
    with pytest.raises(TypeError, match=r"LongTensor\[N, 2\]"):
        random_set_bits([[1, 0]])
    assert random_set_bits(torch.zeros((0, 2), dtype=torch.long)).shape == (0,)


def test_words_with_several_empty_rows_name_the_first():
    with pytest.raises(ValueError, match="^row 1 of words has no set bit$"):
        random_set_bits(torch.tensor([[1, 0], [0, 0], [0, 0], [0, 1 << 40]]))


def test_vector_env_random_actions_are_random_actions_of_its_mask_step_after_step():
    """Drawn before the mask is read, after it, or with no mask read at all: the env's sampler
    gives the actions ``random_actions(venv.action_mask)`` gives from the same generator state,
    and the mask read after it is still the state's (the packed set is kept per state)."""
    venv = sevenrocks_v0.vector_env(num_envs=64, validate=True)
    venv.reset(seed=5)
    packed_generator, mask_generator = (torch.Generator().manual_seed(9) for _ in range(2))
    for step in range(300):
        if step % 3 == 0:
            mask = venv.action_mask.clone()
        actions = venv.random_actions(packed_generator)
        if step % 3 != 0:
            mask = venv.action_mask.clone()
        assert torch.equal(actions, random_actions(mask, mask_generator))
        if step % 50 == 0:  # the scalar engine's mask for the same states
            for env in (0, 31, 63):
                expected = action_mask(venv.match(env), int(venv.current_seat[env]))
                assert mask[env].tolist() == expected.astype(bool).tolist()
        venv.step(actions)


def test_vector_env_random_actions_play_in_inference_mode_too():
    """Drawn inside ``torch.inference_mode`` (as an evaluation loop would), the actions step the
    env as they do outside it: the same games."""
    games = []
    for inference in (False, True):
        venv = sevenrocks_v0.vector_env(num_envs=16)
        venv.reset(seed=2)
        generator = torch.Generator().manual_seed(4)
        with torch.inference_mode(inference):
            for _ in range(40):
                venv.step(venv.random_actions(generator))
        games.append(venv.state.hands.clone())
    assert torch.equal(*games)


@pytest.mark.parametrize("generator", [0, "seed", torch.Generator().get_state()], ids=repr)
def test_a_generator_that_is_no_generator_is_refused_by_name(generator):
    """torch's own error was a page of 'rand() received an invalid combination of arguments'."""
    venv = sevenrocks_v0.vector_env(num_envs=4)
    venv.reset(seed=0)
    for draw in (lambda: venv.random_actions(generator),
                 lambda: random_actions(venv.action_mask, generator)):
        with pytest.raises(TypeError, match="generator must be a torch.Generator or None, got"):
            draw()


def test_an_illegal_action_after_random_actions_is_still_refused():
    venv = sevenrocks_v0.vector_env(num_envs=8)
    with pytest.raises(RuntimeError, match="reset"):
        venv.random_actions()
    venv.reset(seed=1)
    actions = venv.random_actions()
    illegal = (~venv.action_mask[0]).nonzero()[0, 0]
    before = venv.state.hands.clone()
    bad = actions.clone()
    bad[0] = illegal
    with pytest.raises(ValueError, match="illegal action"):
        venv.step(bad)
    assert torch.equal(venv.state.hands, before)
    venv.step(actions)
