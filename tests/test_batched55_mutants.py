"""Batched engine beyond its step: tests that kill mutants the existing tests let through (a
mutation audit of ``sevenrocks_env/batched``'s sampling, records, history, the batched agents,
the observation writer and ``Lockstep``)."""

import pytest

from sevenrocks_env import sevenrocks_v0

from batched_helpers import first_legal
from test_batched_mutants import _WrongOpener


pytestmark = pytest.mark.usefixtures("one_torch_thread")


# -- lockstep: every comparison it makes must catch a difference on its own -------------------

class _Altered:
    """A ``VectorEnv`` (the rest passed through) that, once :attr:`on`, reports env 0 changed by
    ``alter`` (name, then the value: ``match``, ``current_seat``, ``action_mask`` or ``step``)."""

    def __init__(self, venv, what, alter):
        self.venv, self.what, self.alter, self.on = venv, what, alter, False

    def __getattr__(self, name):
        return getattr(self.venv, name)

    def match(self, env):
        match = self.venv.match(env)
        if self.on and self.what == "match" and env == 0:
            self.alter(match)
        return match

    @property
    def current_seat(self):
        seat = self.venv.current_seat.clone()
        if self.on and self.what == "current_seat":
            seat[0] = (seat[0] + 1) % 4
        return seat

    def step(self, actions):
        out = [x.clone() for x in self.venv.step(actions)]
        if self.on and self.what == "step":
            self.alter(out)
        return tuple(out)


def _watched(what, alter=None, **settings):
    from sevenrocks_env.batched.lockstep import Lockstep

    venv = sevenrocks_v0.vector_env(num_envs=2, **{"target": 100, **settings})
    venv.reset(seed=0)
    altered = _Altered(venv, what, alter)
    lockstep = Lockstep(altered, [0, 1])
    lockstep.check()
    altered.on = True
    return venv, lockstep


def _nudged(value):
    """Another value of a match field's type: a bool flipped, an int + 1, a list's first one."""
    if isinstance(value, list):
        return [_nudged(value[0])] + value[1:]
    return not value if isinstance(value, bool) else value + 1


@pytest.mark.parametrize("name", ["hands", "played_by", "played", "ends", "end_double",
                                  "branch_started", "spinner", "turn", "opener", "placements",
                                  "voids", "scores", "last_end_sum", "round_index"])
def test_lockstep_compares_every_field_of_the_match(name):
    from sevenrocks_env.batched.lockstep import LockstepError

    def alter(match):
        setattr(match, name, _nudged(getattr(match, name)))

    _, lockstep = _watched("match", alter)
    with pytest.raises(LockstepError, match=rf"^env 0: {name} is "):
        lockstep.check()


def test_lockstep_compares_the_seat_on_turn():
    from sevenrocks_env.batched.lockstep import LockstepError

    _, lockstep = _watched("current_seat")
    with pytest.raises(LockstepError, match=r"^env 0: current_seat 3, turn 2$"):
        lockstep.check()


def _rewards_off(out):
    out[0][0, 0] += 1e-3   # far above float32 rounding, below a loose tolerance


def _terminated_flipped(out):
    out[1][0] = ~out[1][0]


@pytest.mark.parametrize("alter, message", [(_rewards_off, "rewards"),
                                            (_terminated_flipped, "terminated/truncated")])
def test_lockstep_compares_the_rewards_and_flags_of_a_step(alter, message):
    from sevenrocks_env.batched.lockstep import LockstepError

    venv, lockstep = _watched("step", alter)
    with pytest.raises(LockstepError, match=rf"^env 0: {message} "):
        lockstep.step(first_legal(venv))


class _WrongOpenerLater(_WrongOpener):
    """A ``VectorEnv`` that reports round 1 of its second match opened by the next seat."""

    def wrong(self, env, match) -> bool:
        return int(self.venv.state.matches[env]) > 0 and super().wrong(env, match)


def test_lockstep_checks_the_next_opener_in_a_later_match_too():
    """R2 in the second match (target 30, seed 2: its first round ends in a domino after 45
    moves of first-legal play): the shadow of a match begun by auto-reset knows its rounds."""
    from sevenrocks_env.batched.lockstep import Lockstep, LockstepError

    venv = sevenrocks_v0.vector_env(num_envs=1, target=30)
    venv.reset(seed=2)
    lockstep = Lockstep(_WrongOpenerLater(venv), [0])
    with pytest.raises(LockstepError, match=r"dominoed the last round and must open the next"):
        for _ in range(45):
            lockstep.step(first_legal(venv))
    assert int(venv.state.matches[0]) == 1 and int(venv.state.round_index[0]) == 1


# -- RoundHistory ------------------------------------------------------------------------------

def test_a_match_that_ends_in_its_first_round_starts_a_fresh_history():
    """Target 30: env 0's match ends in round 0 and the next one begins in round 0 too; only the
    match counter shows the change (R8's auto-reset), and the history starts again."""
    from sevenrocks_env.batched import VectorEnv
    from sevenrocks_env.batched.history import RoundHistory

    env = VectorEnv(2, target=30)
    env.reset(seed=0)
    history = RoundHistory(env)
    while int(env.state.matches[0]) == 0:
        assert int(env.state.round_index[0]) == 0
        actions = first_legal(env)
        env.step(actions)
        history.record(env, actions)
    assert int(env.state.round_index[0]) == 0 and int(history.length[0]) == 0
    fresh = history.public_round(0)
    assert fresh.actions == () and fresh.scores == (0, 0)
    assert fresh.opener == int(env.state.opener[0])


def test_a_round_history_keeps_no_hands():
    """The module promises no hands: ``round_start.hands`` is zero at the start and after every
    restart of a round."""
    from sevenrocks_env.batched import VectorEnv
    from sevenrocks_env.batched.history import RoundHistory

    env = VectorEnv(4, target=60)
    env.reset(seed=3)
    history = RoundHistory(env)
    assert not history.round_start.hands.any()
    restarts = 0
    for _ in range(60):
        actions = first_legal(env)
        env.step(actions)
        history.record(env, actions)
        restarts += int((history.length == 0).sum())
        assert not history.round_start.hands.any()
    assert restarts and env.state.hands.any()


def test_a_round_history_begun_mid_round_gives_the_rounds_opener():
    """The round's opener, not the seat on turn at the state it began from."""
    from sevenrocks_env.batched import VectorEnv
    from sevenrocks_env.batched.history import RoundHistory

    env = VectorEnv(3, target=250)
    env.reset(seed=5)
    for _ in range(3):
        env.step(first_legal(env))
    history = RoundHistory(env)
    for row in range(3):
        assert int(env.state.turn[row]) != int(env.state.opener[row])
        assert history.public_round(row).opener == int(env.state.opener[row])


def test_a_round_history_of_rounds_names_the_first_bad_action():
    from sevenrocks_env.batched import VectorEnv
    from sevenrocks_env.batched.history import RoundHistory

    env = VectorEnv(2, target=100)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"^env 1's actions must be ints 0-112, not 113$"):
        RoundHistory.of_rounds(env, [[0], [5, 113, -1, 200]])


# -- sampling ----------------------------------------------------------------------------------

def test_a_mask_or_words_that_are_not_tensors_are_a_type_error():
    from sevenrocks_env.batched import random_actions
    from sevenrocks_env.batched.sampling import random_set_bits

    with pytest.raises(TypeError, match=r"^mask must be a 2-d bool tensor, got list "):
        random_actions([[True, False]])
    with pytest.raises(TypeError, match=r"^words must be a LongTensor\[N, 2\], got tuple "):
        random_set_bits((1, 0))


# -- records -----------------------------------------------------------------------------------

def test_a_match_past_the_rounds_a_record_may_hold_keeps_no_record(monkeypatch):
    """``record.MAX_ROUNDS`` rounds at most (lowered to 2 here): the record is kept through the
    second round and dropped when a third begins."""
    from sevenrocks_env.batched import records
    from sevenrocks_env.record import validate

    monkeypatch.setattr(records, "MAX_ROUNDS", 2)
    venv = sevenrocks_v0.vector_env(num_envs=1, records=True, target=1000, max_rounds=None)
    venv.reset(seed=0)
    while int(venv.state.round_index[0]) < 2:
        venv.step(first_legal(venv))
        if int(venv.state.round_index[0]) == 1:
            validate(venv.stopped_record(0, 1))
    assert venv.stopped_record(0, 5) is None


def test_finished_records_are_popped_once():
    venv = sevenrocks_v0.vector_env(num_envs=2, records=True, target=30)
    venv.reset(seed=0)
    records = []
    while not records:
        venv.step(first_legal(venv))
        records = venv.pop_finished_records()
    assert venv.pop_finished_records() == []


def test_each_match_of_an_env_gets_its_record():
    """The match that follows a finished one (auto-reset, R8) is recorded too, from its deal."""
    from sevenrocks_env.record import validate

    venv = sevenrocks_v0.vector_env(num_envs=1, records=True, target=30)
    venv.reset(seed=0)
    records = []
    for _ in range(400):
        venv.step(first_legal(venv))
        records += venv.pop_finished_records()
        if len(records) == 3:
            break
    assert [env for env, _ in records] == [0, 0, 0]
    for _, record in records:
        validate(record)
    assert len({str(record["rounds"][0]["hands"]) for _, record in records}) == 3


# -- the observation writer --------------------------------------------------------------------

def test_the_observation_writer_rewrites_every_column_of_its_buffer():
    """A caller that scribbled over the buffer gets the exact observation from the next call,
    the constant columns (the turn piece, target / 1000) included."""
    from sevenrocks_env import observation
    from sevenrocks_env.batched import VectorEnv
    from sevenrocks_env.batched.observe import ObservationWriter

    env = VectorEnv(3, target=150)
    env.reset(seed=4)
    writer = ObservationWriter(3, "cpu", 150)
    for _ in range(3):
        writer(env.state)
        writer.out.fill_(float("nan"))
        obs = writer(env.state).numpy()
        for row in range(3):
            match = env.match(row)
            assert obs[row].tobytes() == observation.encode(match, match.turn).tobytes()
        env.step(first_legal(env))
