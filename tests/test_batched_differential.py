"""The batched engine against the scalar rules engine: whole matches of random play (R1-R8).

Every finished match's record (built from the batched engine's own numbers) must pass
``record.validate``, which replays it with ``rules.apply_action``; a sample of envs is shadowed
step by step by ``rules.Match`` (state, mask, observation byte for byte, rewards, flags).
``SEVENROCKS_LONG_TESTS=1`` plays ten times as many matches.
"""

import os
from collections import Counter

import pytest
import torch

from sevenrocks_env import sevenrocks_v0
from sevenrocks_env.batched import random_actions
from sevenrocks_env.batched.lockstep import Lockstep, LockstepError
from sevenrocks_env.record import replay
from sevenrocks_env.tiles import WITH_NUMBER


pytestmark = pytest.mark.usefixtures("one_torch_thread")

LONG = os.environ.get("SEVENROCKS_LONG_TESTS") == "1"
SCALE = 10 if LONG else 1
# (num_envs, matches to finish, envs shadowed by rules.Match, reward mode, max_rounds)
RUNS = [  # 2,112 matches in all; the shorter target keeps the replays quick
    (1, 2, [0], "win", 100, 250),
    (7, 10, [0, 3, 6], "points", 100, 250),
    (64, 150, [0, 33, 63], "shaped", 100, 250),
    (512, 1200, [5, 511], "win", 100, 250),
    (512, 650, [7, 300], "points", 100, 100),
    (64, 100, [1, 2], "win", 3, 250),          # max_rounds truncation (R8 never reached)
]


def play(num_envs, matches, watched, reward, max_rounds, target, seed):
    venv = sevenrocks_v0.vector_env(num_envs=num_envs, reward=reward, max_rounds=max_rounds,
                                    target=target, records=True)
    venv.reset(seed=seed)
    lockstep = Lockstep(venv, watched, follow=num_envs < 64)  # big B: each env's first match
    lockstep.check()
    generator = torch.Generator().manual_seed(seed)
    records = []
    while len(records) < matches:
        actions = random_actions(venv.action_mask, generator)
        rewards, _, _ = (lockstep.step if lockstep.shadows else venv.step)(actions)
        assert torch.equal(rewards[:, 0], -rewards[:, 1])
        assert torch.equal(rewards[:, 0], rewards[:, 2])
        assert torch.equal(rewards[:, 1], rewards[:, 3])
        records.extend(venv.pop_finished_records())
    return venv, records, lockstep


@pytest.mark.parametrize("num_envs,matches,watched,reward,max_rounds,target", RUNS)
def test_random_matches_replay_exactly(num_envs, matches, watched, reward, max_rounds, target):
    venv, records, lockstep = play(num_envs, matches * SCALE, watched, reward, max_rounds,
                                   target, seed=num_envs * 7 + max_rounds + target)
    results = Counter()
    for env, record in records:
        assert 0 <= env < num_envs
        match = None
        for match, _, _ in replay(record):  # = record.validate: checks every move, end sum,
            pass                            # point, result, deduction and score
        assert match.scores == record["scores"]
        if max_rounds == 3:
            assert len(record["rounds"]) <= 3
        results.update(rnd["result"] for rnd in record["rounds"])
        results["truncated" if record["winner"] is None else "winner"] += 1
    assert results["domino"] and results["blocked"] or num_envs == 1
    if max_rounds == 3:
        assert results["truncated"]
    elif num_envs >= 64:
        assert results["won"] == results["winner"] > 0
    assert lockstep.finished >= 1
    assert record["target"] == target


def _watched_with_a_missing_number():
    """A fresh env 0 whose seat on turn holds no tile of some number; (venv, lockstep, seat, n)."""
    for seed in range(200):
        venv = sevenrocks_v0.vector_env(num_envs=1)
        venv.reset(seed=seed)
        seat = int(venv.state.turn[0])
        hand = int(venv.state.hands[0, seat])
        missing = [n for n in range(7) if not hand & WITH_NUMBER[n]]
        if missing:
            lockstep = Lockstep(venv, [0])
            lockstep.check()  # agrees to begin with
            return venv, lockstep, seat, missing[0]
    raise AssertionError("no deal with a missing number")


def test_voids_the_rules_do_not_give_are_a_lockstep_error():
    """``Lockstep.check`` compares the batched state field by field with the scalar engine's,
    ``voids`` included: a void nobody showed by knocking (R6) -- here of the seat on turn, which
    its own observation does not show -- is an error naming the field."""
    venv, lockstep, seat, number = _watched_with_a_missing_number()
    venv.state.voids[0, seat] = 1 << number
    with pytest.raises(LockstepError, match="env 0: voids"):
        lockstep.check()


def test_scores_the_rules_do_not_give_are_a_lockstep_error():
    venv, lockstep, _, _ = _watched_with_a_missing_number()
    venv.state.scores[0, 1] = 5
    with pytest.raises(LockstepError, match="env 0: scores"):
        lockstep.check()
