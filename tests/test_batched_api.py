"""Batched engine API: rewards and seats, records (cut-off matches, the move log), memory
(``nbytes``), inference mode, CPU/GPU parity (and the range check on CUDA) and the lazy import.
Deals: test_batched_api_deals.py; the legal set: test_batched_api_legality.py; bad input:
test_hostile_batched.py and test_hostile_batched_loads.py."""

import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.batched.records import RecordKeeper
from sevenrocks_env.batched import random_actions
from sevenrocks_env.batched.state import FIELDS, STATE_BYTES
from sevenrocks_env.record import cut_off, validate

from batched_helpers import assert_out_of_range_refused, first_legal


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_records_of_matches_cut_off_by_the_round_limit_say_so():
    """Records carry the env's ``max_rounds``: a match it truncated reads as cut off (it read
    as a match in progress), one with a winner does not, and none without a limit has it."""
    venv = sevenrocks_v0.vector_env(num_envs=32, records=True, target=60, max_rounds=2)
    venv.reset(seed=5)
    generator = torch.Generator().manual_seed(5)
    records, truncations = [], 0
    while len(records) < 64:
        _, terminated, truncated = venv.step(random_actions(venv.action_mask, generator))
        truncations += int(truncated.sum())
        records += [record for _, record in venv.pop_finished_records()]
    cut = [cut_off(record) for record in records]
    assert all(record["max_rounds"] == 2 for record in records)
    assert cut == [record["winner"] is None for record in records] and 0 < sum(cut) < len(cut)
    assert truncations == sum(cut)
    for record in records:
        validate(record)
    unlimited = sevenrocks_v0.vector_env(num_envs=2, records=True, target=30, max_rounds=None)
    unlimited.reset(seed=5)
    while not (done := unlimited.pop_finished_records()):
        unlimited.step(first_legal(unlimited))
    assert all("max_rounds" not in record for _, record in done)


def test_a_zero_reward_is_positive_zero_for_every_seat():
    """Opponents' rewards are the team's times -1: a zero was -0.0 for seats 1 and 3."""
    venv = sevenrocks_v0.vector_env(num_envs=16)
    venv.reset(seed=0)
    zeros = 0
    for _ in range(20):
        rewards, _, _ = venv.step(first_legal(venv))
        zeros += int((rewards == 0).sum())
        assert not bool(torch.signbit(rewards[rewards == 0]).any())
    assert zeros > 0


def test_reset_after_steps_in_inference_mode_and_keeps_unpopped_records():
    """Evaluating under torch.inference_mode() then resetting to train: reset builds a fresh
    state (writing in place into tensors made in inference mode is an error).  Matches that
    finished before the reset are still returned by pop_finished_records."""
    venv = sevenrocks_v0.vector_env(num_envs=8, target=30, records=True)
    venv.reset(seed=0)
    with torch.inference_mode():
        while len(venv._records.finished) < 2:
            venv.step(first_legal(venv))
    early = list(venv._records.finished)
    finished = len(early)
    with torch.inference_mode():  # and reset or load *inside* inference mode, then play outside
        venv.load([venv.match(i) for i in range(8)])
        venv.reset(seed=1)
    assert venv.seed == 1 and bool((venv.state.placements == 0).all())
    for _ in range(40):  # and it plays on outside inference mode, rounds ending included
        venv.step(first_legal(venv))
    records = venv.pop_finished_records()
    assert len(records) >= finished and records[:finished] == early  # the earlier ones first
    for _, record in records:
        validate(record)


def test_state_is_small_and_documented():
    venv = sevenrocks_v0.vector_env(num_envs=100)
    assert venv.state.nbytes() == 100 * STATE_BYTES == 100 * 216
    # + the deal streams (id and key) and the cached mask, then the packed legal set it is
    # unpacked from; the observation and its scratch tensors once it is first read
    assert venv.nbytes() == 100 * (216 + 16 + 120)
    venv.reset(seed=0)
    venv.action_mask
    assert venv.nbytes() == 100 * (216 + 16 + 120 + 16) == 100 * 368
    venv.observation
    assert venv.nbytes() == 100 * (368 + 952 + 1052) == 100 * 2372


def test_nbytes_counts_every_tensor_the_env_holds():
    """Every storage the env, its state and its observation writer hold (per-match tensors; the
    0-d target aside) is in ``nbytes()``: the deal streams and the packed legal set were left
    out (32 bytes a match)."""
    venv = sevenrocks_v0.vector_env(num_envs=50)
    venv.reset(seed=0)
    venv.action_mask
    venv.observation
    held = {}
    for owner, names in ((venv, vars(venv)), (venv.state, FIELDS),
                         (venv._observe, vars(venv._observe))):
        for name in names:
            value = getattr(owner, name)
            if isinstance(value, torch.Tensor) and value.dim() > 0:
                held[value.untyped_storage().data_ptr()] = value.untyped_storage().nbytes()
    assert venv.nbytes() == sum(held.values()) == 50 * 2372


def test_record_move_log_grows_for_a_long_match_and_shrinks_after_it():
    """The records' move log keeps the rows of the oldest unfinished match: a long match grows
    it, and once that match is over the log shrinks back at its next rebuild (counted in
    ``nbytes``)."""
    keeper = RecordKeeper(1, 250, None)
    keeper.start([0], [[1, 2, 4, 8]], [0])
    none = torch.zeros(0, dtype=torch.long)
    one = torch.zeros(1, dtype=torch.long)

    def step(match_over: bool):
        rows = one if match_over else none
        keeper.append(one, SimpleNamespace(
            seat=one, end_sum=one, points=one, rows=rows, result=rows + 1,
            deductions=torch.zeros(len(rows), 4, dtype=torch.long),
            round_scores=torch.zeros(len(rows), 2, dtype=torch.long),
            match_over=rows == 0, winner=rows, new_hands=torch.ones(len(rows), 4, dtype=torch.long),
            new_opener=rows))

    for _ in range(1500):  # one long match
        step(False)
    assert keeper.nbytes() == len(keeper.log) * 4 * 2 and len(keeper.log) >= 1500
    for count in range(3000):  # it ends after 30 more moves; then matches of 30 moves
        step(count % 30 == 29)
    records = keeper.pop()
    assert [len(record["rounds"][0]["moves"]) for _, record in records] == [1530] + [30] * 99
    assert len(keeper.log) <= 128


def test_importing_sevenrocks_v0_does_not_import_the_batched_engine():
    code = ("import sys; from sevenrocks_env import sevenrocks_v0; "
            "print('sevenrocks_env.batched' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CPU/GPU parity needs a CUDA device")
def test_cpu_and_gpu_give_the_same_matches():
    cpu = sevenrocks_v0.vector_env(num_envs=256, records=True)
    gpu = sevenrocks_v0.vector_env(num_envs=256, device="cuda", records=True)
    cpu.reset(seed=9)
    gpu.reset(seed=9)
    generator = torch.Generator().manual_seed(0)
    for _ in range(1500):
        assert torch.equal(cpu.action_mask, gpu.action_mask.cpu())
        assert torch.equal(cpu.observation, gpu.observation.cpu())
        actions = random_actions(cpu.action_mask, generator)
        out_cpu = cpu.step(actions)
        out_gpu = gpu.step(actions.cuda())
        for a, b in zip(out_cpu, out_gpu):
            assert torch.equal(a, b.cpu())
        for name in FIELDS:
            assert torch.equal(getattr(cpu.state, name), getattr(gpu.state, name).cpu()), name
    assert cpu.pop_finished_records() == gpu.pop_finished_records()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_cuda_an_action_out_of_range_is_refused_without_validate():
    """On a GPU the failed table lookup would be a device-side assert, ending the process's use
    of the device: with validate=False the range is still checked there, state unchanged, and
    the env (and the device) go on working."""
    venv = sevenrocks_v0.vector_env(num_envs=8, device="cuda", validate=False)
    venv.reset(seed=0)
    assert_out_of_range_refused(venv, env=3)
    venv.step(first_legal(venv))
    assert int(venv.action_mask.sum()) > 0


def test_the_first_observation_may_be_read_in_inference_mode():
    # the observation's buffers are made on the first read: inside torch.inference_mode they
    # must still be normal tensors, or every later read outside it fails
    venv = sevenrocks_v0.vector_env(num_envs=4)
    venv.reset(seed=0)
    with torch.inference_mode():
        inside = venv.observation.clone()
    venv.step(first_legal(venv))
    assert venv.observation.shape == (4, 238) and not torch.equal(venv.observation, inside)


def test_current_seat_is_a_copy_and_rewards_are_float32_whatever_the_default_dtype():
    """Writing into ``current_seat`` wrote into the live ``state.turn`` (the next step played
    another seat's move in every env, ``validate=True`` too); rewards followed torch's default
    float dtype (float64 after ``set_default_dtype``) where the docs promise FloatTensor."""
    venv = sevenrocks_v0.vector_env(num_envs=8, reward="shaped")
    venv.reset(seed=2)
    seats = venv.current_seat
    turn = venv.state.turn.clone()
    seats[:] = (seats + 1) % 4
    assert torch.equal(venv.state.turn, turn) and torch.equal(venv.current_seat, turn)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        for _ in range(60):
            rewards, _, _ = venv.step(first_legal(venv))
            assert rewards.dtype == torch.float32
    finally:
        torch.set_default_dtype(default)


def test_nbytes_with_records_counts_the_move_log():
    """With ``records=True`` the move log (a CPU array the env keeps) is in ``nbytes()``."""
    plain = sevenrocks_v0.vector_env(num_envs=6)
    kept = sevenrocks_v0.vector_env(num_envs=6, records=True)
    for venv in (plain, kept):
        venv.reset(seed=0)
        for _ in range(3):
            venv.step(first_legal(venv))
    assert kept._records.log.nbytes > 0
    assert kept.nbytes() == plain.nbytes() + kept._records.log.nbytes
