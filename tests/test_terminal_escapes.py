"""Text from a file someone else wrote reaches the terminal quoted: an escape sequence in an
arena pair log, a checkpoint path a config names or an agent spec (clear the screen, set the
window title, recolour what follows) is shown as ``'\\x1b[2J...'``, never sent raw."""

import json

import pytest

from sevenrocks_env import arena
from sevenrocks_env.arena_log import PairLogError
from sevenrocks_env.policy import load_policy, shipped_path
from sevenrocks_env.policy_file import CheckpointError

ESCAPE = "\x1b[2J\x1b]0;title\x07"


def _rewrite(log, index: int, change: dict) -> None:
    lines = log.read_text().splitlines()
    entry = json.loads(lines[index])
    entry.update(change)
    lines[index] = json.dumps(entry)
    log.write_text("\n".join(lines) + "\n")


def _quoted(message: str) -> None:
    assert "\x1b" not in message and "\x07" not in message
    assert "\\x1b[2J" in message


@pytest.mark.parametrize("index, change", [(1, {"score": ESCAPE}), (1, {"pair": ESCAPE}),
                                           (1, {"rounds": ESCAPE})])
def test_a_pair_log_value_is_quoted(tmp_path, index, change):
    log = tmp_path / "l.jsonl"
    arena.evaluate("greedy", "random", 2, seed=3, log=log)
    _rewrite(log, index, change)
    with pytest.raises(PairLogError) as error:
        arena.evaluate("greedy", "random", 2, seed=3, log=log)
    _quoted(str(error.value))


def test_a_pair_log_fingerprint_is_quoted(tmp_path):
    ckpt, log = tmp_path / "policy.pt", tmp_path / "l.jsonl"
    ckpt.write_bytes(shipped_path().read_bytes())
    arena.evaluate(f"ckpt:{ckpt}", "random", 1, seed=3, log=log)
    _rewrite(log, 0, {"files_a": ESCAPE})
    with pytest.raises(PairLogError, match="was played with files of SHA-256") as error:
        arena.evaluate(f"ckpt:{ckpt}", "random", 1, seed=3, log=log)
    _quoted(str(error.value))


def test_a_checkpoint_path_is_quoted(tmp_path):
    with pytest.raises(CheckpointError, match="no such file") as error:
        load_policy(str(tmp_path / (ESCAPE + "x.pt")))
    _quoted(str(error.value))
    folder = tmp_path / (ESCAPE + "dir.pt")
    folder.mkdir()
    with pytest.raises(CheckpointError) as error:
        load_policy(str(folder))
    _quoted(str(error.value))


def test_an_openspiel_bot_name_is_quoted_and_cut_short():
    from sevenrocks_env.openspiel.bots import make_openspiel_agent

    with pytest.raises(ValueError, match="unknown OpenSpiel bot") as error:
        make_openspiel_agent(ESCAPE + "x" * 2000)
    _quoted(str(error.value))
    assert len(str(error.value)) < 500
