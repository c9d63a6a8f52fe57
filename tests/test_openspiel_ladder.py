"""``benchmarks/openspiel_ladder.py``: the timing mode measures real decisions, wall and CPU."""

import sys
from pathlib import Path

import pytest

pytest.importorskip(
    "pyspiel", reason="open-spiel is not installed (pip install open-spiel, or the [openspiel] extra)")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import openspiel_ladder  # noqa: E402
from test_benchmarks_tables import says_its_machine  # noqa: E402


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
    # the load and CPUs above the table: its CPU times move with the load (docs/openspiel.md)
    assert says_its_machine(out.split("| bot |")[0])
    with pytest.raises(SystemExit):
        openspiel_ladder.main(["--timing", "0"])


def test_against_is_checked_before_playing_and_takes_names(monkeypatch, capsys):
    """A bad --against ended in a traceback after the header; NAME=SPEC, which the arena
    takes, must pass the check."""
    with pytest.raises(SystemExit):
        openspiel_ladder.main(["--against", "nonsense"])
    assert "--against: unknown agent spec 'nonsense'" in capsys.readouterr().err
    played = []
    monkeypatch.setattr(openspiel_ladder, "evaluate",
                        lambda a, b, *rest, **options: played.append(b) or exit_early())
    with pytest.raises(KeyboardInterrupt):
        openspiel_ladder.main(["--against", "h=heuristic", "--sims", "2", "--pairs", "1"])
    assert played == ["h=heuristic"]
    out = capsys.readouterr().out
    assert "deal seed 0" in out and says_its_machine(out.splitlines()[0])


def exit_early():
    raise KeyboardInterrupt


class _Result:
    """What the ladder reads from an ArenaResult."""

    def __init__(self, a, b):
        self.agent_a, self.agent_b, self.pairs = str(a), str(b), 1
        self.win_rate, self.ci95 = 0.5, (0.1, 0.9)
        self.seconds_per_decision = (0.007, 0.003)  # A's and B's, 7 and 3 ms


@pytest.mark.parametrize("swap", [False, True])
def test_swap_makes_the_opponent_agent_a_and_times_the_bot(monkeypatch, capsys, swap):
    """ms/decision is always the bot's: B's time with --swap, A's without."""
    played = []
    monkeypatch.setattr(openspiel_ladder, "evaluate",
                        lambda a, b, *rest, **options: played.append((a, b)) or _Result(a, b))
    argv = ["--against", "greedy", "--sims", "2", "--pairs", "1"] + (["--swap"] if swap else [])
    assert openspiel_ladder.main(argv) == 0
    bot = "openspiel:ismcts:sims=2"
    assert played == [("greedy", bot) if swap else (bot, "greedy")]
    row = capsys.readouterr().out.strip().splitlines()[-1]
    assert row.endswith(f"| {3 if swap else 7} |"), row
