"""SevenRocksTorchRLEnv's resets and loads: keywords it would ignore are refused, a partial
``_reset`` restarts only finished matches (booleans or 0/1 integers; naming every env is a full
restart, naming none keeps the finished ones resettable), and ``load`` returns the loaded
positions, updates the spec's mask and marks every match in progress.  The rest:
``test_torchrl_env_rollouts.py``."""

from __future__ import annotations

import pytest

pytest.importorskip("torchrl", reason="TorchRL is an optional extra: pip install -e '.[torchrl]'")
import torch  # noqa: E402
from batched_helpers import SHORT, masked_random, some_matches_done  # noqa: E402
from tensordict import TensorDict  # noqa: E402

from sevenrocks_env.torchrl_env import SevenRocksTorchRLEnv  # noqa: E402


def test_reset_refuses_keywords_it_would_ignore():
    """reset(seed=5) gave two unseeded envs different deals without a word."""
    env = SevenRocksTorchRLEnv(2, **SHORT)
    with pytest.raises(TypeError, match=r"\['seed'\]; seed the env with set_seed\(seed\)"):
        env.reset(seed=5)
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['bogus'\]"):
        env.reset(bogus=1)
    with pytest.raises(NotImplementedError, match="set_state=True"):
        env.reset(set_state=True)
    env.set_seed(5)
    assert env.reset(set_state=False)["observation"].shape == (2, 238)


def test_partial_reset_of_a_match_in_progress_is_refused():
    env = SevenRocksTorchRLEnv(4, seed=0)
    env.reset()
    partial = TensorDict({"_reset": torch.tensor([[True], [False], [False], [False]])},
                         batch_size=[4])
    with pytest.raises(ValueError, match="partial reset"):
        env.reset(partial)
    # reset() without "_reset" restarts every match (a new deal stream)
    before = env.vector_env.seed
    env.reset()
    assert env.vector_env.seed != before


def test_a_match_restarted_by_a_partial_reset_is_in_progress():
    """After a done step the partial ``_reset`` of those envs is accepted (their next match has
    already started); that next match is then in progress, so naming it in a second partial
    ``_reset`` is refused ("a ``_reset`` that names a match still in progress is refused")."""
    env, done = some_matches_done()
    partial = TensorDict({"_reset": done.clone()}, batch_size=[8])
    env.reset(partial.clone())  # accepted: those matches already restarted
    with pytest.raises(ValueError, match="partial reset"):
        env.reset(partial.clone())


def test_a_reset_naming_every_env_restarts_matches_in_progress():
    """Only a partial reset of a match in progress is refused; all of them is a full restart."""
    env = SevenRocksTorchRLEnv(3, seed=0)
    td = env.reset()
    td["action"] = masked_random(td["action_mask"], torch.Generator().manual_seed(0))
    env.step(td)
    before = env.vector_env.seed
    td = env.reset(TensorDict({"_reset": torch.ones(3, 1, dtype=torch.bool)}, batch_size=[3]))
    assert env.vector_env.seed != before and not td["done"].any()


def test_a_reset_naming_no_env_keeps_the_finished_matches_finished():
    """After a done step, a ``_reset`` that names none of the envs leaves the finished ones
    resettable: their partial reset is still accepted."""
    env, done = some_matches_done()
    env.reset(TensorDict({"_reset": torch.zeros(8, 1, dtype=torch.bool)}, batch_size=[8]))
    env.reset(TensorDict({"_reset": done.clone()}, batch_size=[8]))  # accepted


def test_the_env_works_outside_inference_mode_after_use_inside_it():
    """TorchRL's evaluation hooks roll out under ``torch.inference_mode()``: afterwards, the
    env's own flags, made there, could not be changed in place ("Inplace update to inference
    tensor outside InferenceMode"), and a reset or a partial reset failed."""
    with torch.inference_mode():
        built_inside = SevenRocksTorchRLEnv(4, seed=0)
    assert built_inside.reset()["observation"].shape == (4, 238)
    env = SevenRocksTorchRLEnv(4, seed=0)
    with torch.inference_mode():
        env.rollout(5)
    assert env.rollout(5)["next", "done"].shape == (4, 5, 1)
    with torch.inference_mode():
        env, done = some_matches_done()
    env.reset(TensorDict({"_reset": done.clone()}, batch_size=[8]))  # a partial reset
    from sevenrocks_env.rules import Match
    with torch.inference_mode():
        env = SevenRocksTorchRLEnv(2, seed=0)
    assert env.load([Match.new(0), Match.new(1)])["observation"].shape == (2, 238)


def test_a_partial_reset_given_as_0_1_integers_works_as_booleans():
    """A ``_reset`` of 0/1 integers (built from a count or a long tensor) names the same envs
    as booleans: the finished matches are accepted and marked in progress again."""
    env, done = some_matches_done()
    before = env.vector_env.seed
    env.reset(TensorDict({"_reset": done.to(torch.int64)}, batch_size=[8]))
    assert env.vector_env.seed == before  # no full reset: the finished ones restarted in step
    assert not env._finished.any()


def test_load_returns_the_loaded_positions_and_updates_the_spec_mask():
    """``env.load(matches)`` (docs/torchrl.md: Seeds) returns the seats on turn's view of the
    loaded matches, and the action spec's mask follows them: a rollout without a policy from
    there plays legal moves (loading through ``env.vector_env`` alone left the mask of the old
    positions, and the rollout's random actions were refused as illegal)."""
    import random

    from sevenrocks_env import observation
    from sevenrocks_env.rules import Match, apply_action, legal_actions

    rng = random.Random(0)
    matches = []
    for seed in range(4):
        match = Match.new(seed)
        for _ in range(9):
            apply_action(match, rng.choice(legal_actions(match)))
        matches.append(match)
    env = SevenRocksTorchRLEnv(4, seed=0)
    env.reset()
    td = env.load(matches)
    for i, match in enumerate(matches):
        assert int(td["current_seat"][i]) == match.turn
        assert td["observation"][i].numpy().tobytes() == \
            observation.encode(match, match.turn).tobytes()
        assert td["action_mask"][i].tolist() == \
            observation.action_mask(match, match.turn).astype(bool).tolist()
    assert not td["done"].any()
    assert torch.equal(env.action_spec.mask, td["action_mask"])
    rollout = env.rollout(3, auto_reset=False, tensordict=td)
    assert rollout.shape == (4, 3)


def test_load_into_an_env_never_reset_is_kept_by_a_reset_naming_no_env():
    """``load`` starts the env as ``reset`` does: a later ``_reset`` naming no env (a collector
    after a step with nothing done) keeps the loaded positions instead of dealing new ones."""
    from sevenrocks_env.rules import Match

    env = SevenRocksTorchRLEnv(4, seed=0)
    td = env.load([Match.new(seed) for seed in range(4)])
    env.reset(TensorDict({"_reset": torch.zeros(4, 1, dtype=torch.bool)}, batch_size=[4]))
    # (the engine's view: TorchRL fills the returned entries of envs not reset from its input)
    assert torch.equal(env.vector_env.observation, td["observation"])
    assert torch.equal(env.vector_env.current_seat, td["current_seat"])


def test_load_marks_every_match_in_progress_and_a_refused_load_changes_no_flag():
    """After ``load`` no match is finished, so a partial reset of one is refused as for any
    match in progress; a load refused for a bad match leaves the finished flags as they were
    (the finished matches' partial reset is still accepted)."""
    env, done = some_matches_done()
    matches = [env.vector_env.match(i) for i in range(8)]
    with pytest.raises(TypeError, match="load: match 7"):
        env.load(matches[:7] + ["not a match"])
    env.reset(TensorDict({"_reset": done.clone()}, batch_size=[8]))  # accepted
    env, done = some_matches_done()
    env.load(matches)
    with pytest.raises(ValueError, match="partial reset of matches in progress") as error:
        env.reset(TensorDict({"_reset": done.clone()}, batch_size=[8]))
    assert "StepCounter(max_steps) cannot cut single matches: cut them with max_rounds=N" in \
        str(error.value)  # the step limit TorchRL users reach for
