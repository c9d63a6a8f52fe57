"""``train()``'s wiring: what the loop hands from one piece to the next, checked against the
config and against values computed here, not against another run of the same code (a wrong
connection -- advantages and returns swapped, gamma and lambda swapped, the oracle critic or the
entropy schedule not passed on -- gives a run that is just as reproducible as the right one).

One tiny training run (two updates of 64 decisions, oracle critic, a ``past``/``greedy`` pool)
is shared by every test here; spies on ``training.train``'s names record what each step got."""

from __future__ import annotations

import inspect
import time
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tensorboard")

import training.train as train_module  # noqa: E402
from training.config import load_config  # noqa: E402
from training.ppo import compute_gae  # noqa: E402
from training.seats import RolloutBuffer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "configs" / "smoke.yaml"
GAMMA, LAMBDA = 0.99, 0.5          # far apart: swapping them changes every advantage
ENT_COEF, ENT_COEF_FINAL = 0.01, 0.05
UPDATES = 2


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The run's config and checkpoint, its wall time, and per update: the buffer's GAE inputs,
    what ``compute_gae`` and ``ppo_update`` were called with, the critic's values of the batch
    before the update, and the policy's weights after it."""
    base = tmp_path_factory.mktemp("wiring")
    cfg = load_config(SMOKE, [
        f"log_dir={base / 'runs'}", f"checkpoint_dir={base / 'ckpt'}",
        "num_matches=8", "num_steps=8", f"total_steps={UPDATES * 64}", "eval_every=0",
        "final_eval_pairs=1", "critic=oracle", f"gamma={GAMMA}", f"gae_lambda={LAMBDA}",
        f"ent_coef={ENT_COEF}", f"ent_coef_final={ENT_COEF_FINAL}", "snapshot_every=1",
        "opponents=[past, greedy]", "opponent_fraction=0.25"])
    assert cfg.num_updates == UPDATES and cfg.batch_size == 64
    buffers, gae_calls, updates, scalars = [], [], [], []
    real_gae, real_update = train_module.compute_gae, train_module.ppo_update
    gae_signature = inspect.signature(real_gae)
    update_signature = inspect.signature(real_update)

    def recording_buffer(capacity):
        buffers.append(RolloutBuffer(capacity))
        return buffers[-1]

    def spy_gae(*args, **kwargs):
        gae_calls.append(dict(gae_signature.bind(*args, **kwargs).arguments))
        return real_gae(*args, **kwargs)

    def spy_update(*args, **kwargs):
        bound = update_signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = bound.arguments
        batch, critic = arguments["batch"], arguments["critic"]
        (buffer,) = buffers
        record = {"batch": {k: v.detach().clone() for k, v in batch.items()},
                  "ent_coef": arguments["ent_coef"],
                  "lrs": [group["lr"] for group in arguments["optimizer"].param_groups],
                  "buffer": {name: getattr(buffer, name)[:buffer.size].copy() for name in
                             ("rewards", "values", "dones", "next_index", "bootstrap")}}
        with torch.no_grad():
            record["critic_values"] = critic(batch["obs"], batch["hands"]).clone()
        out = real_update(*args, **kwargs)
        record["losses"] = dict(out)
        record["model_after"] = {k: v.detach().clone()
                                 for k, v in arguments["model"].state_dict().items()}
        updates.append(record)
        return out

    from torch.utils.tensorboard import SummaryWriter
    real_add_scalar = SummaryWriter.add_scalar

    def spy_add_scalar(writer, tag, value, step=None, *args, **kwargs):
        scalars.append((tag, float(value), step))
        return real_add_scalar(writer, tag, value, step, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(train_module, "RolloutBuffer", recording_buffer)
        patch.setattr(train_module, "compute_gae", spy_gae)
        patch.setattr(train_module, "ppo_update", spy_update)
        patch.setattr(SummaryWriter, "add_scalar", spy_add_scalar)
        started = time.time()
        out = train_module.train(cfg, final_table=False)
        elapsed = time.time() - started
    assert out["global_step"] == UPDATES * 64 and len(updates) == len(gae_calls) == UPDATES
    saved = torch.load(base / "ckpt" / "smoke" / "latest.pt", weights_only=True)
    return {"cfg": cfg, "updates": updates, "gae_calls": gae_calls, "saved": saved,
            "elapsed": elapsed, "scalars": scalars}


def test_the_update_trains_on_gae_advantages_and_returns_of_the_rollout(run):
    """``batch["advantages"]`` is GAE of the rollout's rewards and values at the config's gamma
    and lambda, ``batch["returns"]`` is advantages + values (not the other way round)."""
    cfg = run["cfg"]
    for record in run["updates"]:
        arrays, batch = record["buffer"], record["batch"]
        advantages, returns = compute_gae(arrays["rewards"], arrays["values"], arrays["dones"],
                                          arrays["next_index"], arrays["bootstrap"], cfg.gamma,
                                          cfg.gae_lambda)
        np.testing.assert_array_equal(batch["values"].numpy(), arrays["values"])
        np.testing.assert_allclose(batch["advantages"].numpy(), advantages, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(batch["returns"].numpy(), advantages + arrays["values"],
                                   rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(batch["returns"].numpy(), returns, rtol=1e-6, atol=1e-6)
        # the check can see a swap: the two differ, and so do GAE at (lambda, gamma)
        assert not np.allclose(advantages, returns, atol=1e-3)
        swapped, _ = compute_gae(arrays["rewards"], arrays["values"], arrays["dones"],
                                 arrays["next_index"], arrays["bootstrap"], cfg.gae_lambda,
                                 cfg.gamma)
        assert not np.allclose(advantages, swapped, atol=1e-3)


def test_compute_gae_gets_the_config_s_gamma_and_lambda(run):
    for call in run["gae_calls"]:
        assert (call["gamma"], call["gae_lambda"]) == (GAMMA, LAMBDA)


def test_with_the_oracle_critic_the_rollout_values_are_the_critic_s(run):
    """The stored values (what GAE and the clipped value loss use) are the oracle critic's of
    each transition's observation and hidden hands, before the update; not the policy's own
    value head's."""
    for record in run["updates"]:
        batch = record["batch"]
        assert "hands" in batch and batch["hands"].abs().sum() > 0
        torch.testing.assert_close(batch["values"], record["critic_values"], rtol=1e-5,
                                   atol=1e-5)


def test_each_update_gets_its_scheduled_entropy_coefficient(run):
    cfg = run["cfg"]
    coefs = [record["ent_coef"] for record in run["updates"]]
    assert coefs == pytest.approx([cfg.ent_coef_at(u, UPDATES) for u in range(1, UPDATES + 1)])
    assert coefs[0] == pytest.approx(ENT_COEF) and coefs[1] != pytest.approx(coefs[0])
    logged = [value for tag, value, _ in run["scalars"] if tag == "charts/ent_coef"]
    assert logged == pytest.approx(coefs)


def test_past_snapshots_are_the_policy_after_each_update(run):
    """snapshot_every=1: the pool keeps the initial policy, then the policy each update left."""
    snapshots = run["saved"]["pool"]["snapshots"]
    assert len(snapshots) == 1 + UPDATES
    for snapshot, record in zip(snapshots[1:], run["updates"]):
        for key, tensor in record["model_after"].items():
            assert torch.equal(snapshot[key], tensor), key
    for key, tensor in run["saved"]["model"].items():
        assert torch.equal(snapshots[-1][key], tensor), key
    assert not all(torch.equal(snapshots[0][k], snapshots[-1][k]) for k in snapshots[0])


def test_the_checkpoint_s_wall_time_is_the_run_s(run):
    assert 0 < run["saved"]["wall_time"] <= run["elapsed"]


def test_steps_per_second_count_this_session_s_steps(run):
    sps = [(value, step) for tag, value, step in run["scalars"] if tag == "charts/SPS"]
    assert [step for _, step in sps] == [64 * u for u in range(1, UPDATES + 1)]
    # steps / seconds of the session so far: at least steps / the whole run's seconds
    assert all(value >= step / run["elapsed"] for value, step in sps), sps


def test_each_update_trains_at_its_annealed_learning_rate(run):
    """docs/training.md: linear learning-rate annealing, CleanRL's: update u of N trains at
    ``learning_rate * (1 - (u - 1) / N)`` -- the rate the optimizer holds when ``ppo_update``
    runs, not only the one logged as ``charts/learning_rate``."""
    cfg = run["cfg"]
    assert cfg.anneal_lr
    want = [cfg.learning_rate * (1 - (u - 1) / UPDATES) for u in range(1, UPDATES + 1)]
    for record, lr in zip(run["updates"], want):
        assert record["lrs"] == pytest.approx([lr] * len(record["lrs"]), rel=1e-9)
    logged = [value for tag, value, _ in run["scalars"] if tag == "charts/learning_rate"]
    assert logged == pytest.approx(want, rel=1e-6)
    assert want[1] != pytest.approx(want[0])


def test_the_logged_losses_are_those_the_update_returned(run):
    """Every ``losses/*`` statistic of ``ppo_update`` is written to TensorBoard under its own
    name at that update's global step, unchanged."""
    logged = {(tag, step): value for tag, value, step in run["scalars"]}
    for u, record in enumerate(run["updates"], start=1):
        losses = record["losses"]
        assert {"losses/value_loss", "losses/policy_loss", "losses/entropy", "losses/approx_kl",
                "losses/clipfrac", "losses/explained_variance"} <= set(losses)
        for tag, value in losses.items():
            assert logged[tag, 64 * u] == pytest.approx(value, rel=1e-6, abs=1e-9,
                                                        nan_ok=True), tag
