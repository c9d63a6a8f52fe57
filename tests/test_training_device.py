"""The trainer's ``device`` setting: checked before anything is written, runs saved with a GPU
resume on the CPU, and (with CUDA) the same rollouts and CPU-only checkpoint files on a GPU."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tensorboard")

from test_training import SMOKE, _folders, _smoke, drop_checkpoints_after  # noqa: E402
from training.config import ConfigError, load_config  # noqa: E402
from training.train import main, train  # noqa: E402

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _tensors(value):
    """Every tensor inside a checkpoint's nested dicts and lists."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)


@pytest.mark.parametrize("device", ["tpu", "gpu", "CUDA", "cuda:", "cuda:x", "cuda:123", "cpu:0",
                                    " cpu", 0, None])
def test_a_device_that_is_not_cpu_or_cuda_is_refused_by_the_config(tmp_path, device):
    with pytest.raises(ConfigError, match="device: .*(must be 'cpu', 'cuda' or 'cuda:N'|"
                                          "valid string)"):
        load_config(SMOKE, [], base={"device": device})


def test_the_python_engine_runs_on_the_cpu_only(tmp_path):
    with pytest.raises(ConfigError, match="only the batched engine runs off the CPU"):
        _smoke(tmp_path, "engine=python", "device=cuda")
    assert _smoke(tmp_path, "engine=python", "device=cpu").device == "cpu"


def test_a_device_this_machine_lacks_is_refused_before_anything_is_written(tmp_path):
    cfg = _smoke(tmp_path, "device=cuda:99")  # valid in a config: it may come from a GPU machine
    with pytest.raises(ConfigError, match=r"cuda:99.*--set device=cpu") as error:
        train(cfg, final_table=False)
    assert error.value.key == "device"
    assert not (tmp_path / "runs").exists() and not (tmp_path / "ckpt").exists()


def test_a_run_saved_on_a_gpu_machine_resumes_on_the_cpu(tmp_path, capsys):
    train(_smoke(tmp_path, "total_steps=768", "eval_every=0"), final_table=False)
    ckpt_dir = tmp_path / "ckpt" / "smoke"
    straight = torch.load(ckpt_dir / "step_768.pt", weights_only=True)
    first = torch.load(ckpt_dir / "step_256.pt", weights_only=True)
    first["config"]["device"] = "cuda:99"  # as a run on a machine with that GPU saves it
    moved = ckpt_dir / "from_gpu.pt"  # copied into the run's folder
    torch.save(first, moved)
    drop_checkpoints_after(ckpt_dir, 256)  # compared below: what the resume wrote
    assert main(["--resume", str(moved), *_folders(tmp_path)]) == 2
    assert "device 'cuda:99'" in capsys.readouterr().err
    assert main(["--resume", str(moved), "--set", "device=cpu", "--set", "final_eval_pairs=1",
                 *_folders(tmp_path)]) == 0
    resumed = torch.load(ckpt_dir / "latest.pt", weights_only=True)
    assert resumed["global_step"] == 768 and resumed["config"]["device"] == "cpu"
    for key, tensor in straight["model"].items():  # all on the CPU: the same run, bit for bit
        assert torch.equal(tensor, resumed["model"][key]), key


def test_batch_state_to_its_own_device_is_the_same_object():
    from sevenrocks_env.batched.state import BatchState

    state = BatchState(3, "cpu")
    assert state.to("cpu") is state and state.to(torch.device("cpu")) is state


def test_a_ckpt_opponent_plays_on_the_learners_device():
    """A ``ckpt:`` training opponent is moved to the learner's device (built from the config,
    or restored from a checkpoint's key); torch's ``meta`` device stands in for a GPU here."""
    from sevenrocks_env.policy import PolicyNet
    from training.opponents import OpponentPool

    pool = OpponentPool(["ckpt:shipped", "greedy"], PolicyNet().to("meta"))
    restored = OpponentPool(["greedy"], PolicyNet().to("meta"))
    for agent in (pool.restore("ckpt:shipped")[1], restored.restore("ckpt:shipped")[1]):
        assert agent.device.type == "meta"
        assert {p.device.type for p in agent.model.parameters()} == {"meta"}
    assert OpponentPool(["ckpt:shipped"], PolicyNet()).restore("ckpt:shipped")[1].device.type \
        == "cpu"


# -- with a GPU ------------------------------------------------------------------------------------

@needs_cuda
def test_a_rollout_on_cuda_is_the_cpu_rollout():
    """Same seed, same weights: the deals, the observations and (the draws being made on the
    CPU) the sampled actions are the same; values agree to float rounding."""
    from training.batched_rollout import BatchedSelfPlayEngine
    from training.networks import build_networks
    from training.seats import RolloutBuffer

    cfg = load_config(SMOKE, ["critic=oracle"])
    buffers = {}
    for device in ("cpu", "cuda"):
        torch.manual_seed(5)
        model, critic, _, _ = build_networks(cfg, device)
        engine = BatchedSelfPlayEngine(16, 7, device=device)
        buffers[device] = RolloutBuffer(16 * 16)
        engine.collect(model, buffers[device], 16, critic)
    cpu, cuda = buffers["cpu"], buffers["cuda"]
    for name in ("obs", "masks", "actions", "hands", "next_index", "dones"):
        assert (getattr(cpu, name) == getattr(cuda, name)).all(), name
    for name in ("values", "logprobs", "rewards", "bootstrap"):
        assert abs(getattr(cpu, name) - getattr(cuda, name)).max() < 1e-4, name


@needs_cuda
def test_training_on_cuda_writes_cpu_checkpoints_that_resume_on_either_device(tmp_path):
    """Every kind of opponent (a snapshot, the batched baselines, a ``ckpt:`` policy, an agent
    with only ``act``), the oracle critic; the run really used the GPU; its files are CPU
    tensors; it resumes on the CPU, and a CPU checkpoint resumes on the GPU."""
    cfg = _smoke(tmp_path, "total_steps=768", "eval_every=0", "device=cuda", "critic=oracle",
                 "opponents=[past, heuristic, greedy, 'ckpt:shipped', random]",
                 "opponent_fraction=0.5")
    torch.cuda.reset_peak_memory_stats()
    train(cfg, final_table=False)
    assert torch.cuda.max_memory_allocated() > 1 << 20
    ckpt_dir = tmp_path / "ckpt" / "smoke"
    data = torch.load(ckpt_dir / "step_256.pt", weights_only=True)  # no map_location
    devices = {tensor.device.type for tensor in _tensors(data)}
    assert devices == {"cpu"}
    assert all(bool(torch.isfinite(t).all()) for t in data["model"].values())
    assert main(["--resume", str(ckpt_dir / "step_256.pt"), "--set", "device=cpu",  # (back over
                 "--set", "final_eval_pairs=1", "--force", *_folders(tmp_path)]) == 0  # 768's)
    on_cpu = torch.load(ckpt_dir / "latest.pt", weights_only=True)
    assert on_cpu["config"]["device"] == "cpu" and on_cpu["global_step"] == 768
    assert main(["--resume", str(ckpt_dir / "step_512.pt"), "--set", "device=cuda",
                 "--set", "final_eval_pairs=1", "--force", *_folders(tmp_path)]) == 0
    assert torch.load(ckpt_dir / "latest.pt", weights_only=True)["config"]["device"] == "cuda"
