"""The code in docs/vector.md runs as written (the random-play and policy-gradient loops), and
its figure for the lookup tables' size is the code's."""

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


def test_the_lookup_tables_size_is_the_docs():
    """docs/vector.md gives the constant tables' bytes per device: every distinct storage a
    device's :class:`~sevenrocks_env.batched.tables.Tables` holds (it said 2,133,842 after tables
    were added)."""
    import torch

    from sevenrocks_env.batched.tables import tables

    storages = {}
    for value in vars(tables("cpu")).values():
        if isinstance(value, torch.Tensor):
            storages[value.untyped_storage().data_ptr()] = value.untyped_storage().nbytes()
    written = re.search(r"add ([\d.]+) MB per device \(([\d,]+) bytes\)", DOC.read_text())
    assert int(written[2].replace(",", "")) == sum(storages.values())
    assert float(written[1]) == round(sum(storages.values()) / 1e6, 1)
