"""``benchmarks/openspiel_ladder.py``: the timing mode measures real decisions, wall and CPU."""

import sys
from pathlib import Path

import pytest

pytest.importorskip(
    "pyspiel", reason="open-spiel is not installed (pip install open-spiel, or the [openspiel] extra)")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import openspiel_ladder  # noqa: E402


def test_timing_measures_the_bots_decisions_in_wall_and_cpu_time(fake_clocks):
    """Each decision read from both clocks: with clocks that move 0.5 s and 0.125 s a reading,
    every decision takes 500 and 125 ms (the mean, in ms; no speed is measured)."""
    clock = fake_clocks(openspiel_ladder, 0.5, 0.125)
    assert openspiel_ladder.timing("openspiel:ismcts:sims=4", 6) == (500.0, 125.0)
    assert clock == {"wall": 0.5 * 2 * 6, "cpu": 0.125 * 2 * 6}  # six decisions, no more


def test_timing_table_and_bad_count(capsys):
    assert openspiel_ladder.main(["--sims", "3", "--timing", "2"]) == 0
    out = capsys.readouterr().out
    assert "| `openspiel:ismcts:sims=3` | 2 |" in out
    with pytest.raises(SystemExit):
        openspiel_ladder.main(["--timing", "0"])
