"""Gaps a mutation audit of this session's changes found: the action mask of a seat not on turn
at the opening and of something that is no match; the wrappers' ``last()`` fast path (observe
off, the info dict, the error before ``reset()``, a wrapper alone over the raw env, one
observation per turn); scores that are not multiples of 5 (R5, R7) in either place and in a won
match; ``stopped_record``'s NumPy arguments and its pointer to ``pop_finished_records``; a
checkpoint path too long to read and a logged fingerprint, quoted and cut short."""

import json

import numpy as np
import pytest
from pettingzoo.utils import wrappers as pz_wrappers

from sevenrocks_env import arena, record, sevenrocks_v0, wrappers
from sevenrocks_env.batched import VectorEnv
from sevenrocks_env.dealing import deal
from sevenrocks_env.observation import action_mask
from sevenrocks_env.policy import load_policy, shipped_path
from sevenrocks_env.policy_file import CheckpointError
from sevenrocks_env.rules import Match, apply_action, legal_actions
from positions import won_at_exactly_the_target

ESCAPE = "\x1b[2J\x1b]0;title\x07"


# -- action_mask --------------------------------------------------------------------------------

def test_only_the_opener_has_legal_moves_at_the_opening():
    """Any tile may open (R3), but only for the seat on turn: the others' masks are all 0."""
    for seed in range(5):
        match = Match.new(seed)
        for _ in range(3):
            for seat in range(4):
                mask = action_mask(match, seat)
                if seat == match.turn:
                    assert np.flatnonzero(mask).tolist() == legal_actions(match)
                else:
                    assert not mask.any(), (seed, match.placements, seat)
            apply_action(match, legal_actions(match)[0])


@pytest.mark.parametrize("match", [None, object(), {"turn": 0}])
def test_the_mask_of_something_that_is_no_match_names_it(match):
    with pytest.raises(TypeError, match="match must be a rules.Match, got"):
        action_mask(match, 0)


# -- the wrappers' last() -----------------------------------------------------------------------

def pettingzoo_env():
    env = pz_wrappers.TerminateIllegalWrapper(sevenrocks_v0.raw_env(), illegal_reward=-1)
    return pz_wrappers.OrderEnforcingWrapper(pz_wrappers.AssertOutOfBoundsWrapper(env))


def test_last_without_observing_gives_no_observation_and_the_rest():
    env = sevenrocks_v0.env()
    env.reset(seed=0)
    for _ in range(6):
        obs, *rest = env.last()
        none, *same = env.last(observe=False)
        assert none is None and same == rest and obs is not None
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))


def test_last_gives_the_raw_env_s_info_of_the_agent():
    env = sevenrocks_v0.env()
    env.reset(seed=0)
    raw = env.unwrapped
    raw.infos[raw.agent_selection]["note"] = 1
    assert env.last()[4] == {"note": 1} and env.last(observe=False)[4] == {"note": 1}


def test_last_before_reset_is_refused_as_pettingzoo_does():
    for make in (sevenrocks_v0.env, pettingzoo_env):
        with pytest.raises(AttributeError, match="agent_selection cannot be accessed before reset"):
            make().last()


@pytest.mark.parametrize("wrap", [lambda env: wrappers.TerminateIllegalWrapper(env, -1),
                                  wrappers.AssertOutOfBoundsWrapper])
def test_a_wrapper_alone_says_the_match_is_over(wrap):
    env = wrap(sevenrocks_v0.raw_env(target=30))
    env.reset(seed=0)
    while env.agents:
        obs, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else int(np.flatnonzero(obs["action_mask"])[0]))
    with pytest.raises(RuntimeError, match="all agents are terminated or truncated"):
        env.last()


def test_last_observes_through_the_wrappers_once_a_turn():
    """The mask ``last()`` shows is the one TerminateIllegalWrapper checks the step against:
    a turn of ``last()`` and a legal step observes the position once, not again in the step."""
    env = sevenrocks_v0.env()
    env.reset(seed=0)
    raw = env.unwrapped
    calls = []
    observe = raw.observe
    raw.observe = lambda agent: calls.append(agent) or observe(agent)
    for _ in range(8):
        calls.clear()
        obs = env.last()[0]
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        assert len(calls) == 1, calls


# -- scores: multiples of 5 (R5, R7) ------------------------------------------------------------

@pytest.mark.parametrize("scores", [(27, 0), (3, -5), (-1, 0), (0, 7)])
def test_a_deal_s_scores_must_be_multiples_of_5_either_side(scores):
    with pytest.raises(ValueError, match=r"scores must be multiples of 5 .*R5.*R7.*, got "
                                         + rf"\({scores[0]}, {scores[1]}\)"):
        Match.from_deal(deal(0, 0)[0], 0, target=250, scores=scores)


@pytest.mark.parametrize("scores", [(25, -5), (245, -1000), (0, 15), (-5, 5)])
def test_a_deal_s_scores_that_are_multiples_of_5_are_taken(scores):
    assert Match.from_deal(deal(0, 0)[0], 0, target=250, scores=scores,
                           round_index=10).scores == list(scores)


def test_a_deal_s_numpy_scores_become_plain_ints():
    match = Match.from_deal(deal(0, 0)[0], 0, target=250, scores=np.array([25, -5]))
    assert match.scores == [25, -5] and {type(v) for v in match.scores} == {int}
    Match.from_state(match.to_state())


@pytest.mark.parametrize("scores", [[0, 251], [3, 250], [-1, 255]])
def test_a_won_match_s_scores_must_be_multiples_of_5(scores):
    state = won_at_exactly_the_target().to_state()
    assert state["winner"] == 1
    Match.from_state(state)
    with pytest.raises(ValueError, match="match state: scores must be multiples of 5"):
        Match.from_state(dict(state, scores=scores))


# -- stopped_record -----------------------------------------------------------------------------

def test_a_stopped_record_takes_numpy_ints_as_plain_ints():
    env = VectorEnv(2, "cpu", 250, max_rounds=None, records=True)
    env.reset(0)
    while int(env.state.round_index[1]) == 0:
        env.step(env.action_mask.long().argmax(1))
    game = env.stopped_record(np.int64(1), np.int64(1))
    record.validate(game)
    assert type(game["max_rounds"]) is int and game["max_rounds"] == 1
    json.dumps(game)
    assert game == env.stopped_record(1, 1)


def test_a_stopped_record_of_an_env_that_cuts_its_matches_points_to_pop_finished_records():
    with pytest.raises(RuntimeError, match=r"come from pop_finished_records\(\)"):
        VectorEnv(1, "cpu", 250, max_rounds=4, records=True).stopped_record(0, 1)


# -- untrusted text, quoted and cut short -------------------------------------------------------

def test_a_checkpoint_path_too_long_to_read_is_quoted_and_cut_short(tmp_path):
    with pytest.raises(CheckpointError, match="cannot read checkpoint path") as error:
        load_policy(str(tmp_path / (ESCAPE + "x" * 5000 + ".pt")))
    message = str(error.value)
    assert "\x1b" not in message and "\x07" not in message and "\\x1b[2J" in message
    assert len(message) < 300


def test_a_logged_fingerprint_is_shown_to_16_characters(tmp_path):
    ckpt, log = tmp_path / "policy.pt", tmp_path / "l.jsonl"
    ckpt.write_bytes(shipped_path().read_bytes())
    arena.evaluate(f"ckpt:{ckpt}", "random", 1, seed=3, log=log)
    lines = log.read_text().splitlines()
    header = json.loads(lines[0])
    header["files_a"] = ESCAPE + "Z" * 200  # 14 + 200 characters
    log.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    with pytest.raises(Exception, match="was played with files of SHA-256") as error:
        arena.evaluate(f"ckpt:{ckpt}", "random", 1, seed=3, log=log)
    message = str(error.value)
    assert "\x1b" not in message and "\\x1b[2J" in message
    assert message.count("Z") == 2 and "ZZ'..." in message  # the first 16 only
