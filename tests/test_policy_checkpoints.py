"""Loading trained policies from checkpoints: clear errors for truncated, damaged, malformed,
compressed, code-carrying or foreign files, networks refused at load (outputs not finite, legal
logits at the mask's scale), and what loads (a full opponent pool, weights without a wasted
initialisation).  Playing and the masked distribution: test_policy.py."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from sevenrocks_env.observation import OBS_VERSION  # noqa: E402
from sevenrocks_env.policy import (  # noqa: E402
    MASKED_LOGIT, CheckpointError, MaskedCategorical, PolicyNet, load_policy, read_checkpoint)
from policy_files import save_policy  # noqa: E402


# -- checkpoint errors ----------------------------------------------------------------------------

def test_truncated_checkpoint_gives_clear_error(tmp_path):
    good = save_policy(tmp_path / "good.pt", PolicyNet([16]))
    cut = tmp_path / "cut.pt"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(CheckpointError, match="not a readable checkpoint"):
        load_policy(cut)


@pytest.mark.parametrize("content, words", [
    (b"hello", "not a readable checkpoint"),
    (None, "no such file: .*x.pt$"),  # an absolute path: no "relative to" the working folder
])
def test_wrong_file_gives_clear_error(tmp_path, content, words):
    path = tmp_path / "x.pt"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ValueError, match=words):
        load_policy(path)


def test_a_folder_or_a_device_is_named_as_such(tmp_path):
    """A folder was reported as "no such file" and /dev/zero likewise."""
    with pytest.raises(ValueError, match="is a folder, not a checkpoint file"):
        load_policy(tmp_path)
    with pytest.raises(ValueError, match="is not a regular file"):
        load_policy("/dev/zero")


def test_other_layout_version_is_refused(tmp_path):
    path = save_policy(tmp_path / "old.pt", PolicyNet([16]), obs_version=OBS_VERSION + 1)
    with pytest.raises(CheckpointError, match="observation layout"):
        read_checkpoint(path)
    # a file that does not say its layout was "trained on observation layout vNone"
    path = save_policy(tmp_path / "unsaid.pt", PolicyNet([16]), obs_version=None, obs_size=None)
    with pytest.raises(CheckpointError, match=r"does not say which observation layout it was "
                                              r"trained on \(no obs_version, obs_size\); this "
                                              r"sevenrocks uses v1 \(238 features, 113 actions\)$"):
        read_checkpoint(path)


def test_damaged_bytes_inside_a_checkpoint_are_detected(tmp_path):
    """torch.load does not check the zip's CRCs; read_checkpoint does."""
    good = save_policy(tmp_path / "good.pt", PolicyNet([16]))
    data = bytearray(good.read_bytes())
    marker = data.find(b"/data/0")  # the first tensor's bytes follow its local header
    start = marker + 200
    data[start:start + 16] = bytes(b ^ 0xFF for b in data[start:start + 16])
    bad = tmp_path / "bad.pt"
    bad.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="damaged|not a readable"):
        load_policy(bad)


@pytest.mark.parametrize("changes, words", [
    ({"model_config": {"hidden_sizes": "abc"}}, "hidden_sizes"),
    ({"model_config": {"hidden_sizes": [50_000_000]}}, "hidden_sizes"),
    ({"obs_version": torch.tensor([1, 1])}, "observation layout"),
    ({"model": {1: torch.zeros(1)}}, "parameter names to tensors"),
    ({"model": {"trunk.0.weight": torch.full((2, 2), float("nan"))}}, "missing or unexpected"),
])
def test_malformed_checkpoint_contents_give_checkpoint_errors(tmp_path, changes, words):
    path = save_policy(tmp_path / "odd.pt", PolicyNet([16]), **changes)
    with pytest.raises(CheckpointError, match=words):
        load_policy(path)


def test_sparse_weights_are_refused_with_a_checkpoint_error(tmp_path):
    net = PolicyNet([16])
    sparse = {k: v.detach().to_sparse() for k, v in net.state_dict().items()}
    path = save_policy(tmp_path / "sparse.pt", net, model=sparse)
    with pytest.raises(CheckpointError, match="dense float32"):
        load_policy(path)


def test_a_compressed_checkpoint_is_refused_before_anything_is_unpacked(tmp_path, monkeypatch):
    """torch.save stores entries uncompressed.  A compressed entry is refused from the archive's
    index: zipfile inflates a bzip2 entry whole whatever size it declares (an 852-byte file
    holding 1 GB of zeros took 2 GB of memory), so declared sizes cannot be trusted."""
    import bz2
    import struct
    import zipfile

    import sevenrocks_env.torch_archive as torch_archive

    good = save_policy(tmp_path / "good.pt", PolicyNet([16]))
    for method in (zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2):
        packed = tmp_path / f"packed{method}.pt"
        with zipfile.ZipFile(good) as source, zipfile.ZipFile(packed, "w", method) as out:
            for info in source.infolist():
                out.writestr(info.filename, source.read(info.filename))
        with pytest.raises(CheckpointError, match="is compressed"):
            load_policy(packed)
    # one bzip2 entry holding 64 MB of zeros that declares 10 bytes (a few dozen bytes on disk),
    # and one that declares its compressed size: sizes that agree do not make it stored
    body, name = bz2.compress(bytes(64 << 20)), b"archive/data.pkl"
    for declared in (10, len(body)):
        local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 46, 0, 12, 0, 0, 0, len(body), declared,
                            len(name), 0) + name
        central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 46, 46, 0, 12, 0, 0, 0,
                              len(body), declared, len(name), 0, 0, 0, 0, 0, 0) + name
        end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central),
                          len(local) + len(body), 0)
        bomb = tmp_path / "bomb.pt"
        bomb.write_bytes(local + body + central + end)
        assert bomb.stat().st_size < 1 << 12
        with pytest.raises(CheckpointError, match="is compressed"):
            load_policy(bomb)
    monkeypatch.setattr(torch_archive, "MAX_ENTRIES", 5)  # a flood of entries is refused too
    with pytest.raises(CheckpointError, match="archive entries"):
        load_policy(good)


def test_non_policy_torch_file_is_refused(tmp_path):
    path = tmp_path / "weights.pt"
    torch.save({"weight": torch.zeros(3)}, path)
    with pytest.raises(CheckpointError, match="not a sevenrocks policy checkpoint"):
        load_policy(path)


def test_code_carrying_pickle_is_refused(tmp_path):
    path = tmp_path / "evil.pt"
    torch.save({"format": "sevenrocks-ppo/1", "payload": Path("x")}, path)  # a class, not data
    with pytest.raises(CheckpointError, match="refused by the safe loader"):
        load_policy(path)


def test_a_training_checkpoint_with_a_full_pool_still_loads(tmp_path):
    """max_snapshots goes up to 1000 and each snapshot is one archive entry per tensor: such a
    checkpoint (over 10,000 entries here) must stay readable (it is resumed, shipped, played)."""
    import zipfile

    from training.checkpoint import policy_entries, save_checkpoint
    from training.opponents import OpponentPool

    model = PolicyNet([8, 8, 8])
    pool = OpponentPool(["past"], model, max_snapshots=1000)
    for _ in range(1000):
        pool.add_snapshot(model)
    data = policy_entries(model, 0)
    data["pool"] = pool.state_dict()
    path = save_checkpoint(tmp_path / "full_pool.pt", data)
    with zipfile.ZipFile(path) as archive:
        assert len(archive.infolist()) > 10_000
    assert read_checkpoint(path)["pool"]


def test_loading_a_policy_skips_the_initialisation_its_weights_overwrite(monkeypatch):
    """``build_model`` loads every weight, so it builds the network inside ``loading_weights``
    (no orthogonal QR per layer); a network built for training is still initialised."""
    from torch import nn
    from sevenrocks_env.policy import build_model

    data = read_checkpoint("shipped")
    calls = []
    real = nn.init.orthogonal_
    monkeypatch.setattr(nn.init, "orthogonal_", lambda *a, **k: calls.append(1) or real(*a, **k))
    model = build_model(data)
    assert not calls
    for key, value in model.state_dict().items():
        assert torch.equal(value, data["model"][key]), key
    fresh = PolicyNet([64, 32])
    assert calls
    weight = fresh.trunk[2].weight                                   # [32, 64]: orthonormal rows
    assert torch.allclose(weight @ weight.T, 2.0 * torch.eye(32), atol=1e-4)
    assert not fresh.trunk[2].bias.any()


def test_weights_that_overflow_are_refused_at_load(tmp_path):
    """Finite weights of 3e38 loaded and then played action 0 or failed at some decision.
    Every one of 40 random 16-unit trunks is refused: with one probed position (the check
    before 2026-12-04) torch seed 6's trunk had no active unit there and loaded."""
    for seed in range(40):
        torch.manual_seed(seed)
        net = PolicyNet([16])
        with torch.no_grad():
            net.policy_head.weight.fill_(3e38)
        with pytest.raises(CheckpointError, match="outputs are not finite"):
            load_policy(save_policy(tmp_path / f"huge{seed}.pt", net))


def test_a_network_whose_legal_logits_reach_the_mask_s_is_refused_at_load(tmp_path):
    """A bias of -1e9 (every weight finite) loaded, then every decision failed with a message
    blaming the mask: the legal actions' logits were below the illegal ones' -1e8."""
    net = PolicyNet([16])
    for bias in (-1e9, MASKED_LOGIT):  # at the mask's own value too: as low as an illegal one
        with torch.no_grad():
            net.policy_head.bias.fill_(bias)
        with pytest.raises(CheckpointError, match="logits for legal actions reach the mask's "
                                                  r"scale \(-1e\+08 for illegal ones\)"):
            load_policy(save_policy(tmp_path / "sunk.pt", net))
    # and the distribution names the cause when such logits reach it
    dist = MaskedCategorical(torch.tensor([[-1e9, -1e9, 0.0]]),
                             torch.tensor([[True, True, False]]))
    with pytest.raises(ValueError, match=r"action 2 in row \[0\] is not legal there \(it was "
                                         "given, or the logits of the row's legal actions are at "
                                         r"or below the mask's -1e\+08\)"):
        dist.mode()
    with pytest.raises(ValueError, match="the row has no legal action, or it was given"):
        MaskedCategorical(torch.zeros(1, 3), torch.zeros(1, 3, dtype=torch.bool)).mode()


@pytest.mark.parametrize("critic", ["oracle", "shared"])
def test_a_training_checkpoint_of_an_oracle_critic_run_has_no_value_head(tmp_path, critic):
    """The oracle critic trains its own network: the policy's value head keeps its initial
    weights.  ``load_policy`` on such a run's step_N.pt or latest.pt gave that untrained head's
    numbers from ``value()``, where the same run's exported policy raises."""
    path = save_policy(tmp_path / "latest.pt", config={"critic": critic})
    model = load_policy(path).model
    obs = torch.zeros(1, 238)
    if critic == "shared":
        assert model.value(obs).shape == (1,)
        assert "value_head" not in model.model_config()
    else:
        with pytest.raises(RuntimeError, match="no value head"):
            model.value(obs)
        assert model.model_config()["value_head"] is False


def test_a_read_only_observation_is_played_without_a_warning(tmp_path):
    """torch warned ("The given NumPy array is not writable"), once a process: checked in a
    fresh one, with warnings as errors."""
    import subprocess
    import sys
    script = """if True:
        from sevenrocks_env.env import raw_env
        from sevenrocks_env.policy import load_policy
        env = raw_env()
        env.reset(seed=3)
        seen = env.observe(env.agent_selection)
        obs, mask = seen["observation"].copy(), seen["action_mask"].copy()
        obs.flags.writeable = mask.flags.writeable = False
        assert mask.sum() > 1 and mask[load_policy(PATH).act(obs, mask)]
        print("played")"""
    path = save_policy(tmp_path / "p.pt")
    proc = subprocess.run([sys.executable, "-W", "error", "-c",
                           script.replace("PATH", repr(str(path)))],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout == "played\n", proc.stderr[-500:]
