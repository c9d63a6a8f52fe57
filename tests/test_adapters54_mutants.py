"""Gaps a second mutation audit of the adapters found (single_agent, torchrl_env, public_round,
starts, rewards): each test here kills a small change to the product code that the rest of the
suite let through."""

import contextlib
import io

import numpy as np
import pytest

from sevenrocks_env import rules
from sevenrocks_env.agents import GreedyAgent
from sevenrocks_env.public_round import PublicRound
from sevenrocks_env.rewards import reward_weights
from sevenrocks_env.single_agent import SingleAgentEnv


def _first_legal(obs) -> int:
    return int(np.flatnonzero(obs["action_mask"])[0])


# -- single_agent: settings ----------------------------------------------------------------------

@pytest.mark.parametrize("flag", [np.True_, np.False_])
def test_a_numpy_bool_is_a_skip_forced_setting(flag):
    """``skip_forced`` takes NumPy's bools (a flag read from an array) as the bools they are."""
    env = SingleAgentEnv(opponents="random", skip_forced=flag)
    assert env.skip_forced is bool(flag)


@pytest.mark.parametrize("partner", ["selfish", "self-play"])
def test_only_the_exact_word_self_makes_the_learner_its_own_partner(partner):
    with pytest.raises(ValueError, match=f"unknown agent spec '{partner}'"):
        SingleAgentEnv(opponents="random", partner=partner)


class _Reader(GreedyAgent):
    needs_history = True

    def act(self, observation, action_mask, history=None):
        return super().act(observation, action_mask)


def test_a_start_without_history_is_refused_for_a_partner_that_reads_it():
    """The partner agent is checked as the opponents are: the refusal comes at reset, in the
    start's words, not when the partner first moves."""
    env = SingleAgentEnv(opponents="random", seat=0, partner=_Reader())
    with pytest.raises(ValueError, match=r"an agent here reads the round's plays"):
        env.reset(options={"match": rules.Match.new(1, keep_history=False)})


# -- single_agent: episodes ----------------------------------------------------------------------

def test_a_second_reset_drops_the_reward_the_first_one_left_pending():
    """Points the opponents score before the learner's first decision go to its first step,
    of that episode only: resetting again (same seed) starts the count afresh."""
    once = SingleAgentEnv(opponents="random", seat=0, partner="random", reward="points")
    obs, info = once.reset(seed=0)
    assert info["scores"] != (0, 0)  # the opponents scored before the learner moved
    expected = once.step(_first_legal(obs))[1]
    twice = SingleAgentEnv(opponents="random", seat=0, partner="random", reward="points")
    twice.reset(seed=0)
    obs, _ = twice.reset(seed=0)
    assert twice.step(_first_legal(obs))[1] == expected


def test_with_skip_forced_off_the_partner_seats_forced_moves_are_steps_too():
    """partner="self", skip_forced=False: a forced move of either learner seat is asked."""
    env = SingleAgentEnv(opponents="random", seat=0, partner="self", skip_forced=False)
    obs, info = env.reset(seed=0)
    forced = {0: 0, 2: 0}
    for _ in range(60):
        if obs["action_mask"].sum() == 1:
            forced[info["seat"]] += 1
        obs, _, terminated, truncated, info = env.step(_first_legal(obs))
        assert not (terminated or truncated)
    assert forced[0] > 0 and forced[2] > 0, forced


def _frames(call):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = call()
    return out.getvalue().split("Seven Rocks - round")[1:], result


def test_human_render_draws_every_move_from_the_learners_seat_only():
    """render_mode="human" prints a frame after every move, the other seats' included, and
    each frame shows the learner's hand only (from the very first reset on)."""
    env = SingleAgentEnv(opponents="random", seat=3, partner="random", render_mode="human")
    frames, (obs, _) = _frames(lambda: env.reset(seed=1))
    log = env.match.history[-1]
    assert len(log.moves) == 3 and len(frames) == 1 + 3  # the deal, then seats 0, 1, 2
    for _ in range(4):
        before, round_index = len(log.moves), env.match.round_index
        more, (obs, *_) = _frames(lambda: env.step(_first_legal(obs)))
        assert env.match.round_index == round_index  # (no round ended: one log)
        assert len(more) == len(log.moves) - before == 4
        frames += more
    for frame in frames:
        assert "seat 3 hand:" in frame
        assert not any(f"seat {seat} hand:" in frame for seat in (0, 1, 2)), frame


def test_playing_from_a_start_leaves_the_callers_history_alone():
    """The start's history is copied log by log: playing on does not add moves to the
    caller's round log."""
    start = rules.Match.new(4)
    for _ in range(3):
        rules.apply_action(start, rules.legal_actions(start)[0])
    moves = list(start.history[-1].moves)
    env = SingleAgentEnv(opponents="random", seat=start.turn, partner="random")
    obs, _ = env.reset(options={"match": start})
    for _ in range(3):
        obs, *_ = env.step(_first_legal(obs))
    assert len(env.match.history[-1].moves) > len(moves)
    assert start.history[-1].moves == moves and len(start.history) == 1


def test_a_reset_option_named_seed_is_refused_not_ignored():
    """reset(options={"seed": s}) would deal an unseeded match: the seed is reset's argument."""
    env = SingleAgentEnv(opponents="random")
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"seed": 1})


# -- public_round ----------------------------------------------------------------------------------

@pytest.mark.parametrize("scores", [(1, 2, 3), [0, 0, 0, 0]])
def test_a_public_round_with_more_than_two_scores_is_refused(scores):
    with pytest.raises(ValueError, match="history: scores must be two ints"):
        PublicRound(0, scores, ()).checked()


# -- rewards ---------------------------------------------------------------------------------------

def test_the_reward_modes_are_spelled_exactly():
    with pytest.raises(ValueError, match=r"reward must be one of \('win', 'points', 'shaped'\), "
                                         r"got 'Win'"):
        reward_weights("Win")


# -- torchrl_env -----------------------------------------------------------------------------------

def test_a_refused_partial_reset_names_only_the_matches_in_progress():
    """A ``_reset`` naming finished matches and one in progress names that one alone."""
    pytest.importorskip("torchrl")
    import torch
    from batched_helpers import some_matches_done
    from tensordict import TensorDict

    env, done = some_matches_done()
    running = int(torch.nonzero(~done.squeeze(-1))[0])
    mixed = done.clone()
    mixed[running] = True
    with pytest.raises(ValueError, match=rf"\(envs \[{running}\]\)"):
        env.reset(TensorDict({"_reset": mixed}, batch_size=[8]))


def test_a_partial_reset_of_eight_matches_in_progress_names_all_eight():
    """The message lists up to eight envs; " ..." only when there are more."""
    pytest.importorskip("torchrl")
    import torch
    from tensordict import TensorDict

    from sevenrocks_env.torchrl_env import SevenRocksTorchRLEnv

    env = SevenRocksTorchRLEnv(10, seed=0)
    env.reset()
    eight = torch.tensor([True] * 8 + [False] * 2).unsqueeze(-1)
    with pytest.raises(ValueError, match=r"\(envs \[0, 1, 2, 3, 4, 5, 6, 7\]\): "):
        env.reset(TensorDict({"_reset": eight}, batch_size=[10]))
