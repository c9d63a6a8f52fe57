"""The code in docs/vector.md runs as written (the random-play and policy-gradient loops)."""

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("one_torch_thread")

DOC = Path(__file__).resolve().parent.parent / "docs" / "vector.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_doc_has_the_three_examples():
    assert len(BLOCKS) == 3


@pytest.mark.parametrize("index", [1, 2], ids=["random_play", "policy_gradient"])
def test_doc_loop_runs(index, capsys):
    exec(compile(BLOCKS[index], f"{DOC.name} block {index}", "exec"), {"__name__": "doc"})
    out = capsys.readouterr().out
    assert ("matches won" in out) if index == 1 else ("iteration 9: loss" in out)
