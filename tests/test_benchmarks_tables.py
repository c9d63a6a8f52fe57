"""The speed and ablation scripts' tables say what they measured: their seeds, no spread where
none was measured; their time budgets are honoured and bounded (``benchmarks/search_speed.py``,
``ablation.py``, ``cut_bias.py``, ``env_speed.py``, ``vector_speed.py``; ``arena_speed.py``'s
seed and its single difference labelled as one: test_benchmarks_audit.py)."""

import argparse
import os
import re

import pytest

from sevenrocks_env import arguments
from sevenrocks_env.agents.belief import MAX_WORLDS
from sevenrocks_env.machine import cpu_model
from script_modules import benchmark

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # the scripts set 1 thread: restored


def script(name: str):
    """``benchmarks/<name>.py`` as a module (:func:`script_modules.benchmark`)."""
    return benchmark(name)


def accepted(*_, **__):
    """Stands for a script's first step after its arguments: a test of a bound ends here, not in
    a long run, when the bound is missing."""
    raise AssertionError("the arguments were accepted")


def table_rows(out: str, start: str) -> list[list[str]]:
    """The cells of the Markdown rows of ``out`` that begin with ``| <start>``."""
    return [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in out.splitlines() if line.startswith(f"| {start}")]


def says_its_machine(out: str, torch_threads: int | None = None) -> bool:
    """``out`` names the machine as :func:`sevenrocks_env.machine.machine_text` does: the CPU
    model (``/proc/cpuinfo``'s, not ``platform.processor()``'s empty words), the CPU count, the
    load average and, for a script that sets them, torch's version and threads."""
    import torch
    words = (rf"{re.escape(cpu_model())}, {os.cpu_count()} CPUs, load average [0-9.?/]+"
             + ("" if torch_threads is None else
                rf", torch {re.escape(torch.__version__)}, {torch_threads} torch thread\(s\)"))
    return re.search(words, out) is not None


def usage_error(main, argv, capsys) -> str:
    """The last line of the usage error ``main(argv)`` exits with (exit status 2)."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_seconds_type_is_bounded():
    """``--seconds 1e12`` was taken (a run of 30,000 years)."""
    assert arguments.seconds("0.5") == 0.5 and arguments.seconds("3600") == 3600.0
    for text in ("1e12", "3600.5", "nan", "inf", "0", "-1", "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            arguments.seconds(text)


def test_search_speed_batched_rows_claim_no_spread_and_the_table_says_its_seeds(capsys):
    """A row deciding all decisions in one call split that call's time evenly, so its median and
    p90 repeated its mean; they are "—" now, with a footnote."""
    assert script("search_speed").main(["--decisions", "3", "--samples", "1", "--seed", "5"]) == 0
    out = capsys.readouterr().out
    assert "seeds: positions from random-play matches --seed 5, worlds 0" in out
    assert "batched rows on cpu" in out
    assert says_its_machine(out.splitlines()[0], torch_threads=1)
    rows = [line for line in out.splitlines() if line.startswith("| `search")]
    assert len(rows) == 5
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        float(cells[1])  # the mean: always measured
        if "3 decisions a call" in row:
            assert cells[2:] == ["—", "—"]
        else:
            float(cells[2]), float(cells[3])
    assert "no decision was timed on its own to give a median or p90" in out


def test_env_speed_pettingzoo_benchmark_runs_for_seconds(fake_clocks, capsys):
    """PettingZoo's own ``performance_benchmark`` always ran 5 s, whatever ``--seconds`` said;
    with clocks moving 0.01 s a reading, 0.05 s is about five cycles."""
    env_speed = script("env_speed")
    fake_clocks(env_speed, 0.01, 0.0)
    turns, cycles, elapsed = env_speed.pettingzoo_performance_benchmark(0.05)
    assert 0.05 < elapsed < 0.07 and 5 <= cycles <= 6 and turns >= cycles
    out = capsys.readouterr().out
    assert "its loop for 0.05 s" in out and f"({turns:,} turns in {elapsed:.2f} s)" in out


def test_env_speed_main_gives_its_budget_to_every_part_and_says_its_seeds(fake_clocks, capsys):
    env_speed = script("env_speed")
    fake_clocks(env_speed, 1.0, 0.0)  # every row: one match; the PettingZoo loop: one cycle
    env_speed.main(["--seconds", "0.5", "--repeats", "1"])
    out = capsys.readouterr().out
    assert "seeds: reset 0, 1, 2, ... and actions random.Random(0)" in out
    assert "its loop for 0.5 s" in out and "turns in 1.00 s)" in out
    assert says_its_machine(out.splitlines()[0])


def test_ablation_says_its_seeds_and_bounds_steps(monkeypatch, tmp_path, capsys):
    ablation = script("ablation")
    result = {"variant": "baseline", "flags": [], "train_minutes": 1.0, "steps": 8192,
              "trained_steps": 8192,
              "heuristic": {"win_rate": 0.5, "ci95": [0.4, 0.6], "pairs": 10}}
    monkeypatch.setattr(ablation, "run", lambda variant, args: result)
    assert ablation.main(["--steps", "8192", "--seed", "3", "--deal-seed", "11", "--pairs", "10",
                          "--opponents", "heuristic", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "seeds: training --seed 3, arena --deal-seed 11" in out
    assert "| baseline | (default) | 1.0 | 8,192 | 50.0 % [40.0, 60.0] (10 pairs) |" in out
    # the trainer refuses more than 10**11 steps (a traceback from its subprocess)
    assert usage_error(ablation.main, ["--steps", str(10 ** 11 + 1), "--opponents", "heuristic",
                                       "--out", str(tmp_path)], capsys).endswith(
        f"argument --steps: must be an int in [8192, {10 ** 11}], got {10 ** 11 + 1}")


def test_ablation_takes_fewer_than_5_pairs_when_greedy_is_not_played(monkeypatch, tmp_path):
    """``--pairs`` >= 5 is for greedy's fifth of them: refused with ``--opponents heuristic``
    too, where no greedy pairing is played."""
    ablation = script("ablation")
    monkeypatch.setattr(ablation, "run", accepted)
    with pytest.raises(AssertionError, match="the arguments were accepted"):
        ablation.main(["--pairs", "4", "--opponents", "heuristic", "search",
                       "--out", str(tmp_path)])


def test_cut_bias_says_its_seeds(tmp_path, capsys):
    from policy_files import save_policy
    path = save_policy(tmp_path / "policy.pt")
    cut_bias = script("cut_bias")
    assert cut_bias.main([str(path), "--matches", "2", "--steps", "4", "--samples", "2",
                          "--seed", "5"]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert header.endswith("seeds: self-play --seed 5, continuations 6")


def test_oracle_search_plays_both_pairings_and_says_its_seed(capsys):
    """The oracle's worlds are the true hands in the seat's frame (``OracleSearch`` asserts
    they hold the unseen tiles in each relative seat's count, at every decision)."""
    oracle_search = script("oracle_search")
    assert oracle_search.main(["--pairs", "1", "--samples", "2", "--target", "40",
                               "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "deal seed 3, 1 pairs, target 40" in out
    assert says_its_machine(out.splitlines()[0], torch_threads=1)  # (its timings' machine)
    rows = [line for line in out.splitlines() if line.startswith("| search")]
    assert [row.split("|")[1].strip() for row in rows] == [
        "search:policy=shipped,samples=2", "search:samples=64"]


def test_inference_search_plays_each_opponent_and_reports_its_worlds(capsys):
    inference_search = script("inference_search")
    assert inference_search.main(["--pairs", "1", "--samples", "2", "--candidates", "4",
                                  "--target", "30", "--seed", "3", "--against", "plain",
                                  "--against", "greedy"]) == 0
    out = capsys.readouterr().out
    # the agent's name is its spec: samples=2 included (it read search:policy,inference=1,...)
    assert out.startswith("search:policy=shipped,samples=2,inference=1,candidates=4: deal seed "
                          "3, 1 pairs")
    assert says_its_machine(out.splitlines()[0], torch_threads=1)
    rows = [line.split("|")[1].strip() for line in out.splitlines()[4:6]]
    assert rows == ["search:policy=shipped,samples=2", "greedy"]
    assert "of 4 weighted" in out


def test_inference_signal_reports_both_rows(capsys):
    """(Its replay is ``agents.inference.play_log_likelihoods``: tests/test_inference.py ties
    it to a replay in the rules engine, and the true world's replay to the real position.)"""
    inference_signal = script("inference_signal")
    assert inference_signal.main(["--matches", "2", "--samples", "4", "--every", "7"]) == 0
    out = capsys.readouterr().out
    assert "| uniform (the search's) |" in out and "| weighted by the other seats' plays" in out
    weighted = float(out.split("| weighted by the other seats' plays this round |")[1]
                     .split("|")[0])
    assert 0.0 < weighted < 1.0 and "of 2 self-play matches" in out


def test_cut_bias_bounds_matches_steps_and_samples(monkeypatch, tmp_path, capsys):
    """A billion matches, steps or samples was taken, then ran out of memory."""
    cut_bias = script("cut_bias")
    monkeypatch.setattr(cut_bias, "read_checkpoint", accepted)
    main = cut_bias.main
    path = str(tmp_path / "unread.pt")  # the bounds are checked before the file is read
    assert usage_error(main, [path, "--matches", "65537"], capsys).endswith(
        "argument --matches: must be an int in [1, 65536], got 65537")
    assert usage_error(main, [path, "--steps", "65537"], capsys).endswith(
        "argument --steps: must be an int in [1, 65536], got 65537")
    assert usage_error(main, [path, "--samples", "1025"], capsys).endswith(
        "argument --samples: must be an int in [2, 1024], got 1025")
    assert "--matches * --steps must be at most 1048576" in usage_error(
        main, [path, "--matches", "60000", "--steps", "64"], capsys)
    assert "4 * --matches * --samples (continuations) must be at most 1048576" in usage_error(
        main, [path, "--matches", "60000", "--steps", "1", "--samples", "8"], capsys)


def test_env_speed_help_describes_the_script_in_whole_sentences(capsys):
    """The description was the docstring's first line, cut mid-sentence ("... alone, beside")."""
    with pytest.raises(SystemExit):
        script("env_speed").main(["--help"])
    assert "beside PettingZoo's connect_four_v3 measured in the same run." in " ".join(
        capsys.readouterr().out.split())


SECONDS_ERROR = "argument --seconds: must be a number of seconds in (0, 3600], got 1e12"


@pytest.mark.parametrize("name, first_step, argv, error", [
    # --samples above the search's bound was a traceback after the positions were built
    ("search_speed", "positions", ["--decisions", "10001"],
     "argument --decisions: must be an int in [1, 10000], got 10001"),
    ("search_speed", "positions", ["--samples", str(MAX_WORLDS + 1)],
     f"argument --samples: must be an int in [1, {MAX_WORLDS}], got {MAX_WORLDS + 1}"),
    ("env_speed", "aec_random_play", ["--seconds", "1e12"], SECONDS_ERROR),
    ("env_speed", "aec_random_play", ["--repeats", "1001"],
     "argument --repeats: must be an int in [1, 1000], got 1001"),
    ("vector_speed", "aec", ["--seconds", "1e12"], SECONDS_ERROR),  # aec: its first step
    # a .txt plot: refused before minutes of measuring
    ("vector_speed", "aec", ["--plot", "speed.txt"],
     "--plot: give a file name ending in .png, .svg or .pdf, got 'speed.txt'"),
    ("ablation", "run", ["--steps", "8191"],
     "argument --steps: must be an int in [8192, 100000000000], got 8191"),
    ("ablation", "run", ["--pairs", "4"],
     "--pairs must be >= 5 (a fifth of them are played against greedy)"),
    ("inference_signal", "load_policy", ["--samples", "1"],
     "argument --samples: must be an int in [2, 4096], got 1"),
    # the bounds are checked before the checkpoint is read
    ("cut_bias", "read_checkpoint", ["policy.pt", "--samples", "1"],
     "argument --samples: must be an int in [2, 1024], got 1"),
    ("cut_bias", "read_checkpoint", ["policy.pt", "--matches", "17", "--steps", "65536"],
     "--matches * --steps must be at most 1048576 (the trainer's largest rollout), got 1114112"),
])
def test_scripts_bound_their_arguments(monkeypatch, tmp_path, capsys, name, first_step, argv,
                                       error):
    """Refused with a usage error before the script's first step.  (In a fresh folder: a row's
    relative paths, and what a script would make were a bound missing, are there.)"""
    monkeypatch.chdir(tmp_path)
    module = script(name)
    monkeypatch.setattr(module, first_step, accepted)
    assert usage_error(module.main, argv, capsys).endswith(error)


def test_oracle_search_bounds_samples_by_the_search_s_own_limit(monkeypatch, capsys):
    """1,000 passed the parser (its bound was 1,024) and failed deep in the first pairing."""
    module = script("oracle_search")
    monkeypatch.setattr(module, "evaluate_batched", accepted)
    assert usage_error(module.main, ["--samples", str(MAX_WORLDS + 1)], capsys).endswith(
        f"argument --samples: must be an int in [1, {MAX_WORLDS}], got {MAX_WORLDS + 1}")


def test_train_speed_refuses_a_thread_count_it_would_ignore(monkeypatch, capsys):
    module = script("train_speed")
    monkeypatch.setattr(module, "measure", accepted)
    assert usage_error(module.main, ["--set", "torch_threads=2"], capsys).endswith(
        "--set/--batched-set torch_threads: this script sets torch's threads with --threads")


def test_inference_signal_says_when_no_decision_was_measured(capsys):
    """--every larger than a match's decisions: a traceback unpacking no rows."""
    assert script("inference_signal").main(["--matches", "1", "--every", "1000"]) == 2
    assert "no decision was measured" in capsys.readouterr().err


def test_agents_gives_a_named_search_agent_the_search_pairs(monkeypatch, capsys):
    """'s=search:...' was played with --pairs: only a name starting with 'search' counted."""
    module = script("agents")
    played = []

    def evaluate(a, b, pairs, *rest, **options):
        played.append((a, b, pairs))
        raise KeyboardInterrupt  # the first pairing is all this test needs
    monkeypatch.setattr(module, "evaluate", evaluate)
    with pytest.raises(KeyboardInterrupt):
        module.main(["--agents", "s=search:samples=2", "random", "--pairs", "7",
                     "--search-pairs", "1"])
    assert played == [("s=search:samples=2", "random", 1)]


def test_inference_signal_s_interval_is_student_s_t_over_the_matches(monkeypatch, capsys):
    """The gain's 95% CI over matches is Student's t (it was the normal's 1.96: 29% too
    narrow at 5 matches); under 4 matches it gives none (it printed one from 2)."""
    import math

    import numpy as np

    from sevenrocks_env.ratings import t_quantile_975

    inference_signal = script("inference_signal")
    gains = [0.1, 0.3, 0.0, 0.2, 0.15]  # one decision a match: the match means are the gains
    rows = [(m, 0.4, 0.4 + g, 10.0, 8) for m, g in enumerate(gains)]
    monkeypatch.setattr(inference_signal, "measure", lambda *args: rows)
    assert inference_signal.main(["--matches", "5"]) == 0
    half = t_quantile_975(4) * float(np.std(gains, ddof=1)) / math.sqrt(5)
    assert f"(95% CI +-{half:.3f})" in capsys.readouterr().out
    monkeypatch.setattr(inference_signal, "measure", lambda *args: rows[:3])
    assert inference_signal.main(["--matches", "3"]) == 0
    assert "(too few matches for a 95% CI)" in capsys.readouterr().out
