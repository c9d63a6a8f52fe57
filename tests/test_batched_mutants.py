"""Batched engine internals: tests that kill mutants the existing differential and hostile
tests let through (a mutation audit of ``sevenrocks_env/batched``)."""

import re

import numpy as np
import pytest
import torch

from sevenrocks_env import sevenrocks_v0

from batched_helpers import first_legal, snapshot


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_an_out_of_range_action_is_named_even_after_a_knock_in_an_earlier_env():
    """The knock (112) is in range: the error names the env whose action is outside, not an
    earlier env that knocks (validate=False checks the range only)."""
    venv = sevenrocks_v0.vector_env(num_envs=3, validate=False)
    venv.reset(seed=3)
    before = snapshot(venv)
    actions = first_legal(venv)
    actions[0], actions[2] = 112, 113
    with pytest.raises(ValueError, match=r"^action 113 for env 2 is not in \[0, 112\]"):
        venv.step(actions)
    for name, kept in before.items():
        assert torch.equal(kept, getattr(venv.state, name)), name


def test_load_state_refuses_a_field_on_another_device():
    """A field of the right shape and dtype on another device is named (a meta tensor here:
    on a GPU machine, a CPU field of a CUDA state failed deep inside a kernel)."""
    from sevenrocks_env.batched import VectorEnv
    from sevenrocks_env.batched.state import BatchState

    env = VectorEnv(4, validate=False)
    env.reset(seed=0)
    state = env.state.take()
    state.voids = torch.zeros((4, 4), dtype=torch.long, device="meta")
    with pytest.raises(ValueError, match=r"field 'voids' must be \(4, 4\) torch.int64 on cpu, "
                                         r"got \(4, 4\) torch.int64 on meta"):
        env.load_state(state)
    assert BatchState(4, "cpu").layout_problem(4, torch.device("cpu")) is None


def test_to_the_device_a_state_is_on_is_the_same_state():
    from sevenrocks_env.batched.state import BatchState

    state = BatchState(2, "cpu")
    assert state.to("cpu") is state and state.to("cpu:0") is state
    state.to(torch.device("cpu")).turn[0] = 3   # the same tensors: no copy
    assert int(state.turn[0]) == 3


def test_a_match_taken_from_the_engine_keeps_the_round_limit():
    venv = sevenrocks_v0.vector_env(num_envs=2, target=100, max_rounds=7)
    venv.reset(seed=0)
    assert venv.match(1).max_rounds == 7 and venv.match(1).target == 100
    assert venv.state.match(0, 150, max_rounds=3).max_rounds == 3
    assert venv.state.match(0, 150).max_rounds is None


def test_take_names_the_first_row_out_of_range():
    from sevenrocks_env.batched.state import BatchState

    with pytest.raises(ValueError, match=r"^rows: row 9 is not in \[0, 3\]"):
        BatchState(4, "cpu").take(torch.tensor([1, 9, -2, 4]))


def test_select_reads_an_int_condition_as_nonzero():
    from sevenrocks_env.batched.layout import select

    chosen = select(torch.tensor([0, 2, -1, 0]), torch.tensor([1, 1, 1, 1]), torch.zeros(4))
    assert chosen.tolist() == [0, 1, 1, 0]


def test_a_counter_key_depends_on_the_salt_and_every_coordinate():
    """Counter-based draws of different purposes (salts) must not be the same numbers: a sampling
    agent and a random agent seeded alike would otherwise draw in lockstep."""
    from sevenrocks_env.batched.deal import counter_key

    coordinate = torch.arange(64)
    keys = counter_key(5, 0xD158, coordinate)
    assert not torch.equal(keys, counter_key(5, 0xD159, coordinate))
    assert not torch.equal(keys, counter_key(6, 0xD158, coordinate))
    assert keys.unique().numel() == 64 and bool(((keys >= 0) & (keys < 1 << 62)).all())
    assert not torch.equal(counter_key(5, 1, coordinate, torch.zeros(64, dtype=torch.long)),
                           counter_key(5, 1, coordinate, torch.ones(64, dtype=torch.long)))


def test_counter_keys_of_nearby_seeds_and_salts_are_unrelated():
    """The salt has its own mixing step: with ``seed + salt`` hashed as one number, a sampling
    policy (salt 0x5A3B1E) at seed s drew what a random agent (0x5EED) drew at seed
    s + 0x5A3B1E - 0x5EED, and salt a at seed s what salt a - 1 drew at seed s + 1."""
    from sevenrocks_env.batched.deal import counter_key

    coordinate = torch.arange(256)
    for seed, salt, other_seed, other_salt in ((5, 0xD158, 6, 0xD157),
                                               (1000, 0x5A3B1E, 1000 + 0x5A3B1E - 0x5EED, 0x5EED),
                                               (7, 0, 0, 7)):
        shared = (counter_key(seed, salt, coordinate)[:, None]
                  == counter_key(other_seed, other_salt, coordinate)[None, :])
        assert not shared.any()


def test_a_round_history_of_given_rounds_has_their_lengths():
    from sevenrocks_env.batched import VectorEnv
    from sevenrocks_env.batched.history import RoundHistory

    env = VectorEnv(3, target=100)
    env.reset(seed=2)
    plays = [[], [int(first_legal(env)[1])], list(range(5))]
    history = RoundHistory.of_rounds(env, plays)
    assert history.length.tolist() == [0, 1, 5]
    for row, played in enumerate(plays):
        assert history.public_round(row).actions == tuple(played)
        assert history.public_round(row).opener == int(env.state.opener[row])


@pytest.mark.parametrize("plays, message", [
    ([[], [], [], []], "4 rounds of actions for 3 envs"),
    ([[], [113]], "env 1's actions must be ints 0-112, not 113"),
    ([[-1]], "env 0's actions must be ints 0-112, not -1"),
    ([[], [], [True]], "env 2's actions must be ints 0-112, not True"),
    ([[2.0]], "env 0's actions must be ints 0-112, not 2.0")])
def test_a_round_history_of_rounds_refuses_actions_that_are_not_actions(plays, message):
    from sevenrocks_env.batched import VectorEnv
    from sevenrocks_env.batched.history import RoundHistory

    env = VectorEnv(3, target=100)
    env.reset(seed=2)
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        RoundHistory.of_rounds(env, plays)
    history = RoundHistory.of_rounds(env, [[np.int64(112)], (0, 1)])
    assert history.length.tolist() == [1, 2, 0]


def test_a_round_history_gives_the_scores_of_its_round_start_in_team_order():
    """Team 0's score first (seats 0 and 2), as the env held them when the round began."""
    from sevenrocks_env.batched import VectorEnv, random_actions
    from sevenrocks_env.batched.history import RoundHistory

    env = VectorEnv(16, target=250, max_rounds=None)
    env.reset(seed=4)
    history = RoundHistory(env)
    generator = torch.Generator().manual_seed(4)
    uneven = 0
    for _ in range(150):
        actions = random_actions(env.action_mask, generator)
        env.step(actions)
        history.record(env, actions)
        for row in (history.length == 0).nonzero().squeeze(1).tolist():
            scores = tuple(env.state.scores[row].tolist())
            assert history.public_round(row).scores == scores, row
            uneven += scores[0] != scores[1]
    assert uneven > 5


def test_the_record_of_a_loaded_match_keeps_its_earlier_rounds_deductions():
    """A loaded match's history becomes the start of its record: the finished rounds keep the
    results, deductions and scores the history gives them (R7)."""
    from sevenrocks_env.record import validate
    from sevenrocks_env.rules import Match, apply_action, legal_actions

    for seed in range(40):
        match = Match.new(seed, target=120)
        while len(match.history) < 2 and match.winner is None:
            apply_action(match, legal_actions(match)[0])
        if match.winner is None and any(match.history[0].deductions):
            break
    else:
        pytest.fail("no match with deductions in its first round")
    earlier = match.history[0]
    venv = sevenrocks_v0.vector_env(num_envs=1, records=True, target=120)
    venv.reset(seed=0)
    venv.load([match])
    records = []
    while not records:
        venv.step(first_legal(venv))
        records = venv.pop_finished_records()
    [(env, record)] = records
    validate(record)
    first = record["rounds"][0]
    assert first["deductions"] == list(earlier.deductions)
    assert first["scores"] == list(earlier.scores) and first["result"] == earlier.result


class _NudgedObservation:
    """A ``VectorEnv`` whose observation of env 0 is one float32 step off at column 200 (the
    rest passed through): ``Lockstep`` compares observations byte for byte."""

    def __init__(self, venv):
        self.venv = venv

    def __getattr__(self, name):
        return getattr(self.venv, name)

    @property
    def observation(self):
        obs = self.venv.observation.clone()
        obs[0, 200] = torch.nextafter(obs[0, 200], torch.tensor(2.0))
        return obs


def test_lockstep_catches_an_observation_one_float_step_off():
    from sevenrocks_env.batched.lockstep import Lockstep, LockstepError

    venv = sevenrocks_v0.vector_env(num_envs=2, target=100)
    venv.reset(seed=0)
    lockstep = Lockstep(_NudgedObservation(venv), [0, 1])
    with pytest.raises(LockstepError, match=r"^env 0: observation differs at \[200\]$"):
        lockstep.check()
    Lockstep(venv, [0, 1]).check()   # the engine itself agrees


@pytest.mark.parametrize("sparse, layout", [("to_sparse", "sparse_coo"),
                                            ("to_sparse_csr", "sparse_csr")])
def test_load_state_refuses_a_sparse_field_in_words(sparse, layout):
    """A CSR tensor has no ``is_contiguous``: the layout is checked first."""
    import warnings

    from sevenrocks_env.batched import VectorEnv

    env = VectorEnv(4, validate=False)
    env.reset(seed=0)
    state = env.state.take()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "Sparse CSR tensor support is in beta"
        state.scores = getattr(state.scores, sparse)()
    with pytest.raises(ValueError, match=r"field 'scores' must be a dense contiguous tensor.*"
                                         rf"got strides torch.{layout}$"):
        env.load_state(state)


def test_a_reset_drops_the_rounds_of_the_matches_it_cut_short_from_the_records():
    """The record of a match begun by ``reset`` starts at that reset's deal, whatever the
    matches before it had played."""
    from sevenrocks_env.record import validate
    from sevenrocks_env.tiles import tile_name, tiles_of

    venv = sevenrocks_v0.vector_env(num_envs=4, records=True, target=60)
    venv.reset(seed=1)
    for _ in range(10):
        venv.step(first_legal(venv))
    venv.reset(seed=2)
    dealt = [[[tile_name(t) for t in tiles_of(hand)] for hand in hands]
             for hands in venv.state.hands.tolist()]
    records = []
    while not records:
        venv.step(first_legal(venv))
        records = venv.pop_finished_records()
    for env, record in records:
        validate(record)
        assert record["rounds"][0]["hands"] == dealt[env]


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_without_cuda_is_refused_in_words():
    from sevenrocks_env.batched.inputs import checked_device

    for device in ("cuda", "cuda:0", torch.device("cuda")):
        with pytest.raises(ValueError, match=r"device 'cuda(:0)?': CUDA is not available here"):
            checked_device(device)


class _WrongOpener:
    """A ``VectorEnv`` that reports a new round (past round 0) opened by the next seat."""

    def __init__(self, venv):
        self.venv = venv

    def __getattr__(self, name):
        return getattr(self.venv, name)

    def wrong(self, env, match) -> bool:
        """Whether to report ``match`` (of ``env``) opened by the next seat."""
        return match.placements == 0 and match.round_index > 0

    def match(self, env):
        match = self.venv.match(env)
        if self.wrong(env, match):
            match.opener = match.turn = (match.opener + 1) % 4
        return match


def test_lockstep_catches_a_next_round_not_opened_by_the_dominoer():
    """R2: the seat that dominoed opens the next round; the shadow match knows it from its first
    round on (its history)."""
    from sevenrocks_env.batched.lockstep import Lockstep, LockstepError

    for seed in range(30):  # a seed whose first round ends in a domino
        venv = sevenrocks_v0.vector_env(num_envs=1, target=250)
        venv.reset(seed=seed)
        domino = False
        while int(venv.state.round_index[0]) == 0 and not domino:
            actions = first_legal(venv)
            seat = int(venv.state.turn[0])
            domino = int(venv.state.hands[0, seat]).bit_count() == 1 and int(actions[0]) < 112
            venv.step(actions)
        if domino and int(venv.state.round_index[0]) == 1:
            break
    else:
        pytest.fail("no first round ending in a domino")
    venv.reset(seed=seed)
    lockstep = Lockstep(_WrongOpener(venv), [0])
    with pytest.raises(LockstepError, match=r"dominoed the last round and must open the next"):
        for _ in range(200):
            lockstep.step(first_legal(venv))
