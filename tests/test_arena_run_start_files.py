"""The weights that play an arena run are those its log header names, when the checkpoint is
replaced as the run starts (a training run saving ``latest.pt``): found by session 57's mutation
audit, where the batched arena built its playing agents before it took the run's fingerprints."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from sevenrocks_env import arena, fingerprints  # noqa: E402
from sevenrocks_env.arena_batched import evaluate_batched  # noqa: E402
from sevenrocks_env.policy import shipped_path  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

V2 = Path(__file__).resolve().parents[1] / "checkpoints" / "previous" / "v2_oracle" \
    / "sevenrocks_ppo.pt"


def _replaced_as_the_run_starts(monkeypatch, path):
    """The run's fingerprints are taken just after ``path`` is replaced by another policy (a
    training run saving latest.pt at that moment)."""
    taken = fingerprints.run_fingerprints

    def replaced_then_taken(agents):
        shutil.copyfile(V2, path)
        return taken(agents)
    monkeypatch.setattr(fingerprints, "run_fingerprints", replaced_then_taken)


@pytest.mark.parametrize("batched", [False, True])
def test_the_weights_that_play_are_those_the_log_names(monkeypatch, tmp_path, batched):
    path = tmp_path / "latest.pt"
    shutil.copyfile(shipped_path(), path)
    play = evaluate_batched if batched else arena.evaluate
    log = tmp_path / "pairs.jsonl"
    _replaced_as_the_run_starts(monkeypatch, path)
    try:
        result = play(f"ckpt:{path}", "greedy", 2, seed=4, target=100, log=log)
    except ValueError as error:  # refusing the run is as good as playing the new file
        assert "its file changed since the run began" in str(error)
        return
    monkeypatch.undo()
    header = json.loads(log.read_text().splitlines()[0])
    assert header["files_a"] == fingerprints.files_fingerprint(f"ckpt:{V2}")
    new = play(f"ckpt:{V2}", "greedy", 2, seed=4, target=100)
    old = play(f"ckpt:{shipped_path()}", "greedy", 2, seed=4, target=100)
    assert _played(new) != _played(old)  # (the test tells the two apart)
    assert _played(result) == _played(new)


def _played(result) -> dict:
    """A result's numbers, without the spec that names A's file."""
    return {k: v for k, v in result.as_dict(timing=False).items()
            if k not in ("agent_a", "spec_a")}
