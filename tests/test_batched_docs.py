"""The code in docs/vector.md runs as written (the random-play and policy-gradient loops)."""

import re
from pathlib import Path

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Small tensors: one thread is faster, and keeps a busy machine's cores for other work."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)

DOC = Path(__file__).resolve().parent.parent / "docs" / "vector.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_doc_has_the_three_examples():
    assert len(BLOCKS) == 3


@pytest.mark.parametrize("index", [1, 2], ids=["random_play", "policy_gradient"])
def test_doc_loop_runs(index, capsys):
    exec(compile(BLOCKS[index], f"{DOC.name} block {index}", "exec"), {"__name__": "doc"})
    out = capsys.readouterr().out
    assert ("matches won" in out) if index == 1 else ("iteration 9: loss" in out)
