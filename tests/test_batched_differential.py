"""The batched engine against the scalar rules engine: whole matches of random play (R1-R8).

Every finished match's record (built from the batched engine's own numbers) must pass
``record.validate``, which replays it with ``rules.apply_action``; a sample of envs is shadowed
step by step by ``rules.Match`` (state, mask, observation byte for byte, rewards, flags).
``SEVENROCKS_LONG_TESTS=1`` plays ten times as many matches.
"""

import os
import re
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


class _Skewed:
    """A ``VectorEnv`` seen through one wrong answer (``what``), the rest passed through: what
    ``Lockstep`` must catch if the batched engine ever gave it."""

    def __init__(self, venv, what):
        self.venv, self.what = venv, what

    def __getattr__(self, name):
        return getattr(self.venv, name)

    @property
    def action_mask(self):
        mask = self.venv.action_mask.clone()
        if self.what == "mask":
            mask[0, 112] ^= True  # the knock
        return mask

    @property
    def observation(self):
        obs = self.venv.observation.clone()
        if self.what == "observation":
            obs[0, -1] += 1
        return obs

    def match(self, env):
        match = self.venv.match(env)
        if self.what == "next match" and int(self.venv.state.matches[env]):
            match.scores = [5, 0]
        return match

    def step(self, actions):
        rewards, terminated, truncated = self.venv.step(actions)
        if self.what == "rewards":
            rewards = rewards + 0.5
        elif self.what == "flags":
            truncated = ~truncated
        return rewards, terminated, truncated


@pytest.mark.parametrize("what, words", [
    ("mask", "env 0: action mask differs at [112]"),
    ("observation", "env 0: observation differs at"),
    ("rewards", "env 0: rewards"),
    ("flags", "env 0: terminated/truncated"),
    ("next match", "env 0: the next match does not start fresh"),
])
def test_lockstep_catches_a_mask_observation_reward_flag_or_next_match_the_rules_do_not_give(
        what, words):
    """``Lockstep`` compares more than the state: a wrong action mask, observation, reward,
    terminated/truncated flag, or a next match that does not start at 0-0 is an error."""
    venv = sevenrocks_v0.vector_env(num_envs=1, target=5)
    venv.reset(seed=0)
    skewed = _Skewed(venv, what)
    generator = torch.Generator().manual_seed(0)
    with pytest.raises(LockstepError, match=re.escape(words)):
        lockstep = Lockstep(skewed, [0])  # checks nothing yet: each step checks
        for _ in range(500):  # the next match: a match to 5 points is short
            lockstep.step(random_actions(venv.action_mask, generator))


@pytest.mark.parametrize("field, change", [
    ("hands", lambda state: state.hands[0].copy_(state.hands[0].roll(1))),
    ("opener", lambda state: state.opener.add_(1).remainder_(4)),
    ("round_index", lambda state: state.round_index.add_(1)),
])
def test_hands_opener_or_round_the_rules_do_not_give_are_a_lockstep_error(field, change):
    venv, lockstep, _, _ = _watched_with_a_missing_number()
    change(venv.state)
    with pytest.raises(LockstepError, match=f"env 0: {field} is"):
        lockstep.check()


def test_lockstep_without_follow_stops_watching_an_env_whose_match_ended():
    venv = sevenrocks_v0.vector_env(num_envs=2, target=5)
    venv.reset(seed=1)
    lockstep = Lockstep(venv, [0, 1], follow=False)
    generator = torch.Generator().manual_seed(1)
    while lockstep.finished < 2:
        _, terminated, truncated = lockstep.step(random_actions(venv.action_mask, generator))
        ended = (terminated | truncated).nonzero().squeeze(1).tolist()
        assert not set(ended) & set(lockstep.shadows)
    assert lockstep.shadows == {}
