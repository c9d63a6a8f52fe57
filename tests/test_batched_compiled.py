"""``vector_env(compile=True)``: the fused kernels (``sevenrocks_env.batched.kernels``) play
exactly as the eager engine -- same masks, rewards, states, records -- and refuse bad input the
same way (issue 10).  Every test uses one batch size, so the kernels compile once (seconds)."""

import shutil

import pytest
import torch

from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.batched import kernels, random_actions
from sevenrocks_env.batched.state import FIELDS
from sevenrocks_env.record import validate

from batched_helpers import first_legal, snapshot

pytestmark = [
    pytest.mark.usefixtures("one_torch_thread"),
    pytest.mark.skipif(shutil.which("g++") is None,
                       reason="torch.compile on the CPU needs a C++ compiler (g++)"),
]

NUM_ENVS = 48


def pair(**settings):
    """The same envs twice, eager and compiled, reset to the same seed."""
    envs = [sevenrocks_v0.vector_env(num_envs=NUM_ENVS, compile=compiled, **settings)
            for compiled in (False, True)]
    for venv in envs:
        venv.reset(seed=2026)
    return envs


SETTINGS = dict(target=100, max_rounds=4, records=True, validate=False, reward="shaped")


def play_side_by_side(eager, fused) -> None:
    """700 random steps of both envs (many rounds and matches: wins, blocks, dominoes,
    truncations): masks, observations, rewards, records and states equal throughout."""
    generator = torch.Generator().manual_seed(5)
    records = 0
    for step in range(700):
        assert torch.equal(eager.action_mask, fused.action_mask.cpu()), step
        if step % 7 == 0:
            assert torch.equal(eager.observation, fused.observation.cpu()), step
        actions = random_actions(eager.action_mask, generator)
        for a, b in zip(eager.step(actions), fused.step(actions.to(fused.device))):
            assert torch.equal(a, b.cpu()), step
        if step % 100 == 99:
            finished = eager.pop_finished_records()
            assert finished == fused.pop_finished_records()
            for _, record in finished:
                validate(record)
            records += len(finished)
    for name in FIELDS:
        assert torch.equal(getattr(eager.state, name), getattr(fused.state, name).cpu()), name
    assert records > 100


def test_compiled_play_equals_eager_step_by_step_with_records():
    eager, fused = pair(**SETTINGS)
    assert fused.compiled and not eager.compiled
    assert fused._kernels is kernels.compiled("cpu") and eager._kernels is kernels.EAGER
    play_side_by_side(eager, fused)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_compiled_on_cuda_plays_as_the_eager_cpu_engine():
    """On a GPU, Inductor writes Triton kernels instead of C++: a second code generator."""
    eager = sevenrocks_v0.vector_env(num_envs=NUM_ENVS, **SETTINGS)
    fused = sevenrocks_v0.vector_env(num_envs=NUM_ENVS, device="cuda", compile=True, **SETTINGS)
    for venv in (eager, fused):
        venv.reset(seed=2026)
    assert fused._kernels is kernels.compiled("cuda")
    play_side_by_side(eager, fused)


def test_compiled_env_refuses_bad_actions_and_changes_nothing():
    for validate_actions in (True, False):
        _, venv = pair(validate=validate_actions)
        for _ in range(3):
            venv.step(first_legal(venv))
        before, mask = snapshot(venv), venv.action_mask.clone()
        for outside in (113, -1):
            actions = first_legal(venv)
            actions[7] = outside
            with pytest.raises(ValueError, match=rf"action {outside} for env 7"):
                venv.step(actions)
        if validate_actions:
            actions = first_legal(venv)
            actions[3] = int((~venv.action_mask[3]).nonzero()[0, 0])
            with pytest.raises(ValueError, match="for env 3"):
                venv.step(actions)
        with pytest.raises(TypeError, match="actions: expected dtype"):
            venv.step(first_legal(venv).int())
        for name, value in before.items():
            assert torch.equal(value, getattr(venv.state, name)), name
        assert torch.equal(mask, venv.action_mask)
        venv.step(first_legal(venv))  # still usable


def test_compiled_an_illegal_action_that_stops_the_step_half_way_says_to_reset():
    """validate=False, in range but illegal (a tile on a closed branch): the fused kernel's
    failed lookup ("index out of bounds") left some rows' layouts changed and the env usable
    (every later step failed the same way); as eager, it now says so and locks the env."""
    _, venv = pair(validate=False)
    venv.step(first_legal(venv))
    actions = first_legal(venv)
    actions[3] = 4 * 27 + 2  # 6|6 north: the branches are closed this early
    assert not bool(venv.action_mask[3, actions[3]])
    with pytest.raises(ValueError, match="illegal action was played with validate=False"):
        venv.step(actions)
    with pytest.raises(RuntimeError, match="not one the rules reach; call reset"):
        venv.step(first_legal(venv))
    venv.reset(seed=1)
    venv.step(first_legal(venv))
    # past torch's recompile limit a compiled env's step runs eagerly: its IndexError too
    venv._kernels = kernels.EAGER
    venv.step(first_legal(venv))
    actions = first_legal(venv)
    actions[3] = 4 * 27 + 2
    assert not bool(venv.action_mask[3, actions[3]])
    with pytest.raises(ValueError, match="illegal action was played with validate=False"):
        venv.step(actions)
    with pytest.raises(RuntimeError, match="not one the rules reach; call reset"):
        venv.step(first_legal(venv))


def test_one_compiled_variant_per_batch_size_whatever_the_target_or_autograd_mode():
    """torch compiles a function at most 8 times in a process: a target or an autograd mode
    must not make variants of their own (they did: three envs of other sizes, trained and
    evaluated under inference_mode, already hit the limit)."""
    from contextlib import nullcontext

    from torch._dynamo.eval_frame import _debug_get_cache_entry_list

    from sevenrocks_env.batched import engine

    def variants():
        return [len(_debug_get_cache_entry_list(fn.__code__))
                for fn in (engine.place_and_score, kernels.turn_legal_words)]

    size = NUM_ENVS + 1  # a size no other test compiles
    before = variants()
    for target in (60, 250, 777):
        venv = sevenrocks_v0.vector_env(num_envs=size, compile=True, target=target,
                                        validate=False)
        assert venv._kernels is kernels.compiled("cpu")
        venv.reset(seed=target)
        for mode in (nullcontext, torch.no_grad, torch.inference_mode, nullcontext):
            with mode():
                for _ in range(5):
                    venv.step(first_legal(venv))
    assert variants() == [count + 1 for count in before]


def test_without_a_cxx_compiler_the_error_says_what_to_do(tmp_path):
    """Inductor's own error (InvalidCxxCompiler, deep in its code) becomes one that names the
    missing compiler and compile=False; nothing was changed."""
    import os
    import subprocess
    import sys

    code = ("import torch\n"
            "from sevenrocks_env import sevenrocks_v0\n"
            "venv = sevenrocks_v0.vector_env(num_envs=8, compile=True)\n"
            "venv.reset(seed=0)\n"
            "try:\n"
            "    venv.action_mask\n"
            "except RuntimeError as error:\n"
            "    print(str(error)[:60], '|', 'g++' in str(error), 'compile=False' in str(error))\n")
    env = dict(os.environ, CXX=str(tmp_path / "no-such-g++"), OMP_NUM_THREADS="1",
               TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "cache"))  # nothing compiled before
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=300)
    assert run.stdout.strip() == ("compile=True: torch.compile could not build the engine's ker"
                                  " | True True"), run.stdout + run.stderr[-2000:]


@pytest.mark.parametrize("compiled", [False, True])
def test_a_state_made_in_inference_mode_can_be_loaded_and_stepped(compiled):
    """Search builds its worlds under torch.inference_mode(); the env steps outside it (one
    compiled variant), so load_state gives such a state normal tensors first (stepping wrote
    into inference tensors outside inference mode: a RuntimeError)."""
    venv = sevenrocks_v0.vector_env(num_envs=NUM_ENVS, compile=compiled, validate=False)
    venv.reset(seed=4)
    for _ in range(3):
        venv.step(first_legal(venv))
    with torch.inference_mode():
        state = venv.state.take()
    reference = sevenrocks_v0.vector_env(num_envs=NUM_ENVS, validate=False)
    reference.load_state(venv.state.take(), seed=4)
    venv.load_state(state, seed=4)
    assert venv.state is state and not state.hands.is_inference()
    for _ in range(40):
        actions = first_legal(reference)
        for a, b in zip(venv.step(actions), reference.step(actions)):
            assert torch.equal(a, b)


def test_compile_must_be_a_bool():
    with pytest.raises(TypeError, match="compile must be a bool"):
        sevenrocks_v0.vector_env(num_envs=2, compile="yes")


def test_a_pickled_compiled_env_compiles_again_and_plays_on_as_the_original():
    """A compiled env pickled mid-play (a worker's copy) raised ``PicklingError`` on its fused
    functions; the copy picks its kernels again from ``compiled`` and plays as the original."""
    import pickle

    eager, fused = pair(**SETTINGS)
    play = torch.Generator().manual_seed(9)
    for _ in range(20):
        actions = random_actions(eager.action_mask, play)
        eager.step(actions)
        fused.step(actions)
    copy = pickle.loads(pickle.dumps(fused))
    assert copy.compiled and copy._kernels is kernels.compiled("cpu")
    play_side_by_side(eager, copy)
