"""SevenRocksTorchRLEnv: TorchRL's checker, specs, agreement with VectorEnv, auto-reset,
rewards, masks (pickled and wrapped envs too), seeds, arguments, devices, and the collector
example.  Resets and loads: ``test_torchrl_env_resets.py``."""

from __future__ import annotations


import pytest

pytest.importorskip("torchrl", reason="TorchRL is an optional extra: pip install -e '.[torchrl]'")
import torch  # noqa: E402
from batched_helpers import SHORT, masked_random  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402

from sevenrocks_env.batched import VectorEnv  # noqa: E402
from sevenrocks_env.batched.deal import MAX_SEED  # noqa: E402
from sevenrocks_env.torchrl_env import GROUP, SevenRocksTorchRLEnv  # noqa: E402
from script_modules import example  # noqa: E402


def load_example():
    """``examples/torchrl_collector.py`` as a module."""
    return example("torchrl_collector")


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


def test_reward_sum_keeps_each_seat_s_return():
    """TorchRL's ``RewardSum()`` (its key ``("agents", "episode_reward")``): the reset had no
    ``agents`` group, so the transform made one of batch [B] that stacked with the step's
    [B, 4]: check_env_specs failed, a rollout was lazily stacked, a collector raised."""
    from torchrl.envs import ActionMask, Compose, RewardSum, TransformedEnv
    env = TransformedEnv(SevenRocksTorchRLEnv(6, seed=2, target=50),
                         Compose(ActionMask(), RewardSum()))
    check_env_specs(env, seed=0)
    rollout = env.rollout(80, break_when_any_done=False)
    assert type(rollout).__name__ == "TensorDict"
    returns = rollout["next", GROUP, "episode_reward"]
    assert returns.shape == (6, 80, 4, 1)
    seats = rollout[GROUP, "on_turn"].squeeze(-1)
    assert torch.equal(seats.float().argmax(-1), rollout["current_seat"])
    assert bool((seats.sum(-1) == 1).all())
    # a seat's return is its rewards summed since its match began
    rewards = rollout["next", GROUP, "reward"]
    done = rollout["next", "done"].squeeze(-1)
    assert bool(done.any())  # (matches to 50 end within the rollout: the reset is checked)
    running = torch.zeros(6, 4, 1)
    for t in range(80):
        running = running + rewards[:, t]
        assert torch.allclose(returns[:, t], running)
        running = torch.where(done[:, t, None, None], torch.zeros_like(running), running)


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


def test_the_example_s_random_policy_plays_under_serial_env():
    """Under SerialEnv the mask is ``[n, B, 113]``: ``torch.multinomial`` takes two dims at most
    ("prob_dist must be 1 or 2 dim")."""
    from torchrl.envs import SerialEnv
    serial = SerialEnv(2, lambda: SevenRocksTorchRLEnv(4, seed=0, **SHORT))
    data = serial.rollout(20, load_example().masked_random_policy(), break_when_any_done=False)
    assert data["action"].shape == (2, 4, 20)
    assert data["action_mask"].gather(-1, data["action"].unsqueeze(-1)).all()


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


def test_the_collector_example_deals_from_its_seed(monkeypatch):
    module = load_example()
    made = []
    monkeypatch.setattr(module, "SevenRocksTorchRLEnv", lambda *args, **kwargs: made.append(
        kwargs) or SevenRocksTorchRLEnv(*args, **kwargs))
    summary = module.main(["--num-envs", "2", "--frames", "8", "--steps-per-batch", "4",
                           "--policy", "random", "--seed", "7"])
    assert made[0]["seed"] == 7 and summary["frames"] == 8 and summary["illegal_actions"] == 0
