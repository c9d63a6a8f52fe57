"""The hand-guess auxiliary task (``hand_coef``): its loss against a hand computation, its
gradient into the policy's trunk, and the trainer's checkpoints and resume with it."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tensorboard")

from sevenrocks_env.observation import action_mask, encode  # noqa: E402
from sevenrocks_env.policy import PolicyNet, load_policy  # noqa: E402
from positions import random_state  # noqa: E402
from test_ppo_loss import config, sampled  # noqa: E402
from test_training import _folders, _scalars, _smoke, drop_checkpoints_after  # noqa: E402
from training.checkpoint import export_policy  # noqa: E402
from training.critic import hidden_hands  # noqa: E402
from training.hand_guess import HandGuess  # noqa: E402
from training.ppo import ppo_update, trained_parameters  # noqa: E402
from training.train import main, train  # noqa: E402


def test_loss_is_the_cross_entropy_over_the_hidden_tiles_only():
    guess = HandGuess(4)
    hidden = torch.randn(2, 4)
    hands = torch.zeros(2, 3, 28)
    hands[0, 0, 3] = hands[0, 2, 5] = hands[0, 1, 27] = 1     # row 0: three hidden tiles
    # row 1: none hidden (the round's last tile was just played): it adds nothing
    loss, accuracy = (value.detach() for value in guess.loss(hidden, hands.view(2, -1)))
    logits = guess(hidden).detach().double()
    terms = [-torch.log_softmax(logits[0, :, tile], 0)[holder]
             for tile, holder in ((3, 0), (5, 2), (27, 1))]
    assert float(loss) == pytest.approx(float(sum(terms) / 3), rel=1e-5)
    right = sum(int(logits[0, :, tile].argmax()) == holder
                for tile, holder in ((3, 0), (5, 2), (27, 1)))
    assert float(accuracy) == pytest.approx(right / 3)


def test_a_fresh_head_guesses_near_uniformly():
    """The head starts near zero (gain 0.01): the loss is ln 3 on real positions."""
    states = [random_state(seed, 3 + seed % 20) for seed in range(16)]
    hands = torch.from_numpy(np.stack([hidden_hands(m, m.turn) for m in states]))
    obs = torch.from_numpy(np.stack([encode(m, m.turn) for m in states]))
    model = PolicyNet([32, 32])
    with torch.no_grad():
        loss, _ = HandGuess(32).loss(model.trunk(obs), hands)
    assert float(loss) == pytest.approx(math.log(3), abs=0.02)


def _position():
    match = random_state(5, 9)
    return encode(match, match.turn), action_mask(match, match.turn)


def _batch(model, size=32):
    states = [random_state(seed, 2 + seed % 24) for seed in range(size)]
    obs, masks, _, values, dist, actions = sampled(model, states)
    return {"obs": obs, "masks": masks, "actions": actions, "logprobs": dist.log_prob(actions),
            "advantages": torch.zeros(size), "values": values, "returns": values,
            "hands": torch.from_numpy(np.stack([hidden_hands(m, m.turn) for m in states]))}


def test_the_update_trains_the_trunk_toward_the_hands():
    """With zero advantages and returns equal to the values, PPO's own gradient is zero but for
    the entropy (off here): only the guess moves the trunk, and its loss falls."""
    torch.manual_seed(0)
    model, guess = PolicyNet([32, 32]), HandGuess(32)
    batch = _batch(model)
    trunk_before = [p.detach().clone() for p in model.trunk.parameters()]
    optimizer = torch.optim.Adam(trained_parameters(model, None, guess), lr=3e-3)
    cfg = config(hand_coef=1.0, update_epochs=4)
    first = ppo_update(model, optimizer, batch, cfg, guess=guess)
    for _ in range(20):
        last = ppo_update(model, optimizer, batch, cfg, guess=guess)
    assert last["losses/hand_guess_loss"] < first["losses/hand_guess_loss"] - 0.1
    assert 0 <= last["charts/hand_guess_accuracy"] <= 1
    assert any(not torch.equal(a, b) for a, b in zip(trunk_before, model.trunk.parameters()))
    # without the guess the same update leaves the trunk alone: it was the guess that moved it
    still = PolicyNet([32, 32])
    before = [p.detach().clone() for p in still.trunk.parameters()]
    plain = ppo_update(still, torch.optim.Adam(still.parameters(), lr=3e-3), _batch(still),
                       config(update_epochs=1))
    assert "losses/hand_guess_loss" not in plain
    assert all(torch.equal(a, b) for a, b in zip(before, still.trunk.parameters()))


def test_smoke_run_logs_saves_and_resumes_the_head_bit_for_bit(tmp_path, capsys):
    cfg = _smoke(tmp_path, "total_steps=768", "eval_every=0", "hand_coef=0.5")
    train(cfg, final_table=False)
    ckpt_dir = tmp_path / "ckpt" / "smoke"
    straight = torch.load(ckpt_dir / "step_768.pt", weights_only=True)
    assert set(straight["hand_guess"]) == {"head.weight", "head.bias"}
    scalars = _scalars(tmp_path / "runs" / "smoke")
    assert len(scalars["losses/hand_guess_loss"]) == 3
    assert all(0 <= v <= 1 for _, v in scalars["charts/hand_guess_accuracy"])
    drop_checkpoints_after(ckpt_dir, 256)  # (what the resume writes is compared, not these)
    assert main(["--resume", str(ckpt_dir / "step_256.pt"), "--set", "final_eval_pairs=1",
                 *_folders(tmp_path)]) == 0
    resumed = torch.load(ckpt_dir / "latest.pt", weights_only=True)
    for part in ("model", "critic", "hand_guess"):
        for key, tensor in straight[part].items():
            assert torch.equal(tensor, resumed[part][key]), (part, key)
    # the head is not part of the policy: an exported policy file leaves it out and plays
    exported = export_policy(ckpt_dir / "latest.pt", tmp_path / "policy.pt")
    assert "hand_guess" not in torch.load(exported, weights_only=True)
    assert load_policy(exported).act(*_position()) >= 0
    capsys.readouterr()
    assert main(["--resume", str(ckpt_dir / "latest.pt"), "--set", "hand_coef=0",
                 *_folders(tmp_path)]) == 2
    assert "hand_coef cannot change between 0 and > 0" in capsys.readouterr().err
    # another weight is only a weight, as vf_coef is
    assert main(["--resume", str(ckpt_dir / "step_512.pt"), "--set", "hand_coef=0.25",
                 "--set", "final_eval_pairs=1", "--force", *_folders(tmp_path)]) == 0


@pytest.mark.parametrize("engine", ["batched", "python"])
def test_the_guess_sees_the_hands_whatever_the_critic_and_engine(tmp_path, engine):
    """The python engine stored the hidden hands only for the oracle critic: with ``critic:
    shared`` the guess trained on empty hands, a loss of 0, silently."""
    train(_smoke(tmp_path, "total_steps=256", "eval_every=0", "hand_coef=0.5", "critic=shared",
                 f"engine={engine}"), final_table=False)
    scalars = _scalars(tmp_path / "runs" / "smoke")
    (_, loss), = scalars["losses/hand_guess_loss"]
    (_, accuracy), = scalars["charts/hand_guess_accuracy"]
    assert loss == pytest.approx(math.log(3), abs=0.05) and accuracy > 0.2


def test_resume_rejects_a_damaged_or_missing_head(tmp_path, capsys):
    train(_smoke(tmp_path, "total_steps=256", "eval_every=0", "hand_coef=0.5"),
          final_table=False)
    data = torch.load(tmp_path / "ckpt" / "smoke" / "latest.pt", weights_only=True)
    heads = ({k: v[:1] for k, v in data["hand_guess"].items()},
             {k: torch.full_like(v, float("nan")) for k, v in data["hand_guess"].items()}, None)
    broken = tmp_path / "ckpt" / "smoke" / "broken.pt"  # in the run's folder: its own
    for head in heads:
        torch.save({**data, "hand_guess": head}, broken)
        assert main(["--resume", str(broken), *_folders(tmp_path)]) == 2
        assert "'hand_guess'" in capsys.readouterr().err
