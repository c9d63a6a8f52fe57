"""``benchmarks/openspiel_ladder.py``: the timing mode measures real decisions, wall and CPU."""

import sys
from pathlib import Path

import pytest

pytest.importorskip(
    "pyspiel", reason="open-spiel is not installed (pip install open-spiel, or the [openspiel] extra)")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import openspiel_ladder  # noqa: E402


def test_timing_measures_the_bots_decisions_in_wall_and_cpu_time():
    wall, cpu = openspiel_ladder.timing("openspiel:ismcts:sims=4", 6)
    assert wall > 0 and cpu > 0
    assert cpu <= wall * 1.5  # one thread: CPU time cannot run far ahead of the clock


def test_timing_table_and_bad_count(capsys):
    assert openspiel_ladder.main(["--sims", "3", "--timing", "2"]) == 0
    out = capsys.readouterr().out
    assert "| `openspiel:ismcts:sims=3` | 2 |" in out
    with pytest.raises(SystemExit):
        openspiel_ladder.main(["--timing", "0"])
