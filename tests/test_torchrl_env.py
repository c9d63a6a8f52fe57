"""SevenRocksTorchRLEnv: TorchRL's checker, agreement with VectorEnv, masks, auto-reset, seeds."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("torchrl", reason="TorchRL is an optional extra: pip install -e '.[torchrl]'")
import torch  # noqa: E402
from tensordict import TensorDict  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402

from sevenrocks_env.batched import VectorEnv  # noqa: E402
from sevenrocks_env.batched.deal import MAX_SEED  # noqa: E402
from sevenrocks_env.torchrl_env import GROUP, SevenRocksTorchRLEnv  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "torchrl_collector.py"
# a low target ends matches within a few dozen steps, so rollouts cross many auto-resets
SHORT = dict(target=25, max_rounds=3)


def masked_random(mask: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    return torch.multinomial(mask.to(torch.float32), 1, generator=generator).squeeze(-1)


def load_example():
    """``examples/torchrl_collector.py`` as a module."""
    spec = importlib.util.spec_from_file_location("torchrl_collector", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def some_matches_done():
    """``(env, done)``: 8 short matches stepped with masked random actions until a step ends
    some but not all of them; ``done`` that step's ``[8, 1]`` flags."""
    env = SevenRocksTorchRLEnv(8, seed=2, **SHORT)
    generator = torch.Generator().manual_seed(0)
    td = env.reset()
    for _ in range(300):
        td["action"] = masked_random(td["action_mask"], generator)
        td = env.step(td)
        done = td["next", "done"]
        if done.any() and not done.all():
            return env, done
        td = td["next"]
    raise AssertionError("no step ended some but not all matches")


def run(env: SevenRocksTorchRLEnv, steps: int, action_seed: int = 0):
    """``steps`` of step_and_maybe_reset with masked random actions; the stacked step data."""
    generator = torch.Generator().manual_seed(action_seed)
    td = env.reset()
    first = td.clone()
    data = []
    for _ in range(steps):
        td["action"] = masked_random(td["action_mask"], generator)
        step, td = env.step_and_maybe_reset(td)
        data.append(step.clone())
    return first, torch.stack(data, dim=1)


@pytest.mark.parametrize("kwargs", [{}, SHORT, dict(max_rounds=None, reward="shaped")])
def test_check_env_specs(kwargs):
    env = SevenRocksTorchRLEnv(6, seed=3, **kwargs)
    check_env_specs(env, seed=0, break_when_any_done="both")


def test_specs_layout():
    env = SevenRocksTorchRLEnv(5, seed=1)
    assert env.batch_size == torch.Size([5])
    assert env.full_reward_spec[GROUP, "reward"].shape == (5, 4, 1)
    assert env.reward_key == (GROUP, "reward")
    assert env.action_spec.n == 113 and env.action_spec.shape == (5,)
    assert set(env.done_keys) == {"done", "terminated", "truncated"}
    assert env.observation_spec["observation"].shape == (5, 238)


def test_the_seat_and_mask_specs_hold_four_seats_and_113_flags():
    """``current_seat`` is one of the four seats (a spec of 113 values would let a random
    sample or a spec check pass seat 57); ``action_mask`` is 113 booleans."""
    env = SevenRocksTorchRLEnv(3, seed=1)
    seat_spec = env.observation_spec["current_seat"]
    assert seat_spec.space.n == 4 and seat_spec.shape == (3,) and seat_spec.dtype == torch.long
    assert not seat_spec.is_in(torch.tensor([0, 1, 4]))
    mask_spec = env.observation_spec["action_mask"]
    assert mask_spec.shape == (3, 113) and mask_spec.dtype == torch.bool
    assert seat_spec.is_in(env.reset()["current_seat"])


def test_rollout_agrees_with_vector_env():
    num_envs, steps = 16, 150
    env = SevenRocksTorchRLEnv(num_envs, seed=11, **SHORT)
    first, data = run(env, steps, action_seed=5)
    vec = VectorEnv(num_envs, **SHORT)
    vec.reset(seed=env.vector_env.seed)
    assert torch.equal(first["observation"], vec.observation)
    assert torch.equal(first["action_mask"], vec.action_mask)
    assert torch.equal(first["current_seat"], vec.current_seat)
    for t in range(steps):
        step = data[:, t]
        assert torch.equal(step["observation"], vec.observation)
        assert torch.equal(step["action_mask"], vec.action_mask)
        assert torch.equal(step["current_seat"], vec.current_seat)
        rewards, terminated, truncated = vec.step(step["action"])
        nxt = step["next"]
        assert torch.equal(nxt[GROUP, "reward"].squeeze(-1), rewards)
        assert torch.equal(nxt["terminated"].squeeze(-1), terminated)
        assert torch.equal(nxt["truncated"].squeeze(-1), truncated)
        assert torch.equal(nxt["done"].squeeze(-1), terminated | truncated)
        # the engine auto-resets: "next" already shows the next match of a finished env
        assert torch.equal(nxt["observation"], vec.observation)
        assert torch.equal(nxt["action_mask"], vec.action_mask)
    done = data["next", "done"]
    assert done.sum() >= num_envs, "the rollout should cross many match ends"
    assert data["next", "truncated"].any() and data["next", "terminated"].any()


def test_finished_match_resets_to_the_already_started_next_match():
    env = SevenRocksTorchRLEnv(8, seed=2, **SHORT)
    _, data = run(env, 120)
    done = data["next", "done"].squeeze(-1)
    assert done.any()
    # after a done step, the root data the policy sees next is exactly the "next" data: the
    # partial _reset changed nothing, and the done flags are cleared
    for t in range(data.shape[1] - 1):
        ended = done[:, t]
        if ended.any():
            assert torch.equal(data[:, t + 1]["observation"][ended],
                               data[:, t]["next", "observation"][ended])
            assert not data[:, t + 1]["done"][ended].any()


def test_rewards_are_per_seat_and_zero_sum():
    env = SevenRocksTorchRLEnv(8, seed=4, **SHORT)
    _, data = run(env, 120)
    rewards = data["next", GROUP, "reward"].squeeze(-1)
    assert torch.equal(rewards[..., 0], rewards[..., 2])
    assert torch.equal(rewards[..., 1], -rewards[..., 0])
    assert torch.equal(rewards[..., 3], -rewards[..., 0])
    # reward="win": +-1 only on a won match end, 0 elsewhere (also on truncation)
    ended = data["next", "terminated"].squeeze(-1)
    assert torch.equal(rewards[..., 0].abs(), ended.to(torch.float32))


def test_spec_random_actions_respect_the_mask():
    env = SevenRocksTorchRLEnv(8, seed=6, **SHORT)
    data = env.rollout(200, break_when_any_done=False)  # actions from action_spec.rand()
    chosen = data["action_mask"].gather(-1, data["action"].unsqueeze(-1))
    assert chosen.all()
    assert env.observation_spec.is_in(data[:, -1]["next"].select(*env.observation_spec.keys()))


def test_a_pickled_env_plays_legal_random_actions():
    """A pickled env (a worker's copy) kept the action mask it was pickled with: its spec's
    random actions were illegal at once (``ValueError`` on the first step after reset)."""
    import pickle

    env = pickle.loads(pickle.dumps(SevenRocksTorchRLEnv(8, seed=6, **SHORT)))
    data = env.rollout(100, break_when_any_done=False)
    assert data["action_mask"].gather(-1, data["action"].unsqueeze(-1)).all()


def test_wrapped_envs_need_torchrl_s_action_mask_transform():
    """TransformedEnv and SerialEnv keep their own copy of the action spec, which never sees the
    base env's mask updates: with TorchRL's ``ActionMask`` transform (what the docs say to use)
    their random actions stay legal; without it they do not (documented, not hidden)."""
    from torchrl.envs import ActionMask, Compose, SerialEnv, StepCounter, TransformedEnv

    wrapped = TransformedEnv(SevenRocksTorchRLEnv(8, seed=0, **SHORT),
                             Compose(ActionMask(), StepCounter()))
    check_env_specs(wrapped, seed=0)
    data = wrapped.rollout(100, break_when_any_done=False)
    assert data["action_mask"].gather(-1, data["action"].unsqueeze(-1)).all()
    serial = TransformedEnv(SerialEnv(2, lambda: SevenRocksTorchRLEnv(4, seed=0, **SHORT)),
                            ActionMask())
    check_env_specs(serial, seed=0)
    with pytest.raises(ValueError, match="illegal action"):  # the docs say: only with ActionMask
        check_env_specs(SerialEnv(2, lambda: SevenRocksTorchRLEnv(4, seed=0, **SHORT)), seed=0)
    bare_wrapper = TransformedEnv(SevenRocksTorchRLEnv(8, seed=0, **SHORT), StepCounter())
    with pytest.raises(ValueError, match="illegal action"):
        bare_wrapper.rollout(100, break_when_any_done=False)


def test_illegal_action_is_refused():
    env = SevenRocksTorchRLEnv(3, seed=0)
    td = env.reset()
    illegal = (~td["action_mask"]).to(torch.float32).argmax(-1)
    td["action"] = illegal
    with pytest.raises(ValueError, match="illegal action"):
        env.step(td)


def test_seeding_is_reproducible():
    a = SevenRocksTorchRLEnv(6, **SHORT)
    b = SevenRocksTorchRLEnv(6, **SHORT)
    a.set_seed(123)
    b.set_seed(123)
    first_a, data_a = run(a, 60)
    first_b, data_b = run(b, 60)
    assert (first_a == first_b).all() and (data_a == data_b).all()
    # a later full reset is also determined by the seed
    assert torch.equal(a.reset()["observation"], b.reset()["observation"])
    c = SevenRocksTorchRLEnv(6, seed=124, **SHORT)
    assert not torch.equal(c.reset()["observation"], first_a["observation"])


def test_bad_seed_and_arguments():
    with pytest.raises(ValueError, match="seed"):
        SevenRocksTorchRLEnv(2, seed=-1)
    with pytest.raises(TypeError, match="seed"):
        SevenRocksTorchRLEnv(2, seed="7")
    with pytest.raises(TypeError, match="records"):
        SevenRocksTorchRLEnv(2, records=True)
    assert SevenRocksTorchRLEnv(2, records=False).batch_size == (2,)
    with pytest.raises(ValueError, match="num_envs"):
        SevenRocksTorchRLEnv(0)


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


def test_collector_example_runs():
    module = load_example()
    for policy in ("mlp", "random"):
        summary = module.main(["--num-envs", "4", "--frames", "96", "--steps-per-batch", "8",
                               "--policy", policy])
        assert summary["frames"] == 96
        assert summary["illegal_actions"] == 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_device():
    env = SevenRocksTorchRLEnv(32, device="cuda", seed=1, **SHORT)
    check_env_specs(env, seed=0)
    _, data = run(env, 20)
    assert data.device.type == "cuda"
    assert data["next", GROUP, "reward"].device.type == "cuda"


def test_the_largest_seed_is_accepted_and_one_more_is_refused():
    """``seed`` is in ``[0, MAX_SEED]``, both ends included."""
    env = SevenRocksTorchRLEnv(2, seed=MAX_SEED, **SHORT)
    env.set_seed(MAX_SEED)
    env.reset()
    with pytest.raises(ValueError, match="seed"):
        SevenRocksTorchRLEnv(2, seed=MAX_SEED + 1)
    with pytest.raises(ValueError, match="seed"):
        env.set_seed(MAX_SEED + 1)


def test_a_match_restarted_by_a_partial_reset_is_in_progress():
    """After a done step the partial ``_reset`` of those envs is accepted (their next match has
    already started); that next match is then in progress, so naming it in a second partial
    ``_reset`` is refused ("a ``_reset`` that names a match still in progress is refused")."""
    env, done = some_matches_done()
    partial = TensorDict({"_reset": done.clone()}, batch_size=[8])
    env.reset(partial.clone())  # accepted: those matches already restarted
    with pytest.raises(ValueError, match="partial reset"):
        env.reset(partial.clone())


def test_a_cpu_device_with_an_index_runs():
    env = SevenRocksTorchRLEnv(4, device="cpu:0", seed=1, **SHORT)
    _, data = run(env, 20)
    assert data.device == torch.device("cpu")


@pytest.mark.parametrize("argv", [["--num-envs", "100000000"],
                                  ["--num-envs", "4096", "--steps-per-batch", "4096"]])
def test_the_collector_example_bounds_its_batch_in_one_line(argv, capsys):
    """--num-envs past the engine's bound, or a batch of billions of frames, was a traceback
    from inside the env or the allocator."""
    module = load_example()
    with pytest.raises(SystemExit) as exit_:
        module.main(argv)
    assert exit_.value.code == 2 and "1,048,576" in capsys.readouterr().err.replace("1048576", "1,048,576")


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


def test_the_collector_example_deals_from_its_seed(monkeypatch):
    module = load_example()
    made = []
    monkeypatch.setattr(module, "SevenRocksTorchRLEnv", lambda *args, **kwargs: made.append(
        kwargs) or SevenRocksTorchRLEnv(*args, **kwargs))
    summary = module.main(["--num-envs", "2", "--frames", "8", "--steps-per-batch", "4",
                           "--policy", "random", "--seed", "7"])
    assert made[0]["seed"] == 7 and summary["frames"] == 8 and summary["illegal_actions"] == 0


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
    with pytest.raises(ValueError, match="partial reset of matches in progress"):
        env.reset(TensorDict({"_reset": done.clone()}, batch_size=[8]))
