"""``sevenrocks_env.arguments``: the benchmark and example scripts refuse a bad number or device
with argparse's one-line usage error (``--seconds nan``, ``--pairs 0`` and
``--device bogus`` gave tracebacks from inside the run)."""
import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sevenrocks_env import arguments

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted([*ROOT.glob("benchmarks/*.py"), *ROOT.glob("examples/*.py")])


@pytest.mark.parametrize("kind, text", [
    (arguments.count, "0"), (arguments.count, "-3"), (arguments.count, "1.5"),
    (arguments.count, "1e13"), (arguments.seed, "-1"), (arguments.seed, str(2 ** 63)),
    (arguments.training_seed, str(2 ** 32)),  # SB3 and RLlib: np.random.seed's bound
    (arguments.positive_real, "nan"), (arguments.positive_real, "inf"),
    (arguments.positive_real, "0"), (arguments.non_negative_real, "-0.1"),
    (arguments.non_negative_int, "-1"), (arguments.device, "bogus"), (arguments.device, "meta"),
    (arguments.pairs, str(10 ** 9 + 1)), (arguments.workers, "65"), (arguments.threads, "257"),
    (arguments.workers, "0"), (arguments.threads, "0"), (arguments.seconds, "3601"),
    (arguments.seconds, "1e12"), (arguments.seconds, "0"), (arguments.seconds, "nan"),
    (arguments.batch, str(2 ** 16 + 1)), (arguments.non_negative_pairs, "-1"),
    (arguments.output_file, "/tmp"), (arguments.output_file, "/proc/x/y.json"),
    (arguments.output_folder, "/proc/x"), (arguments.output_folder, __file__),
])
def test_bad_values_are_argparse_errors(kind, text):
    with pytest.raises(argparse.ArgumentTypeError):
        kind(text)


def test_good_values_pass():
    assert arguments.count("12") == 12 and arguments.seed("0") == 0
    assert arguments.positive_real("0.5") == 0.5 and arguments.non_negative_real("0") == 0.0
    assert arguments.non_negative_int("0") == 0 and arguments.device("cpu:0") == "cpu"
    assert arguments.non_negative_pairs("0") == 0 and arguments.threads("256") == 256
    assert arguments.workers("1") == 1 and arguments.workers("64") == 64
    assert arguments.seconds("3600") == 3600.0 and arguments.seconds("0.5") == 0.5
    assert arguments.output_file("/tmp/new/folder/x.json") == "/tmp/new/folder/x.json"
    assert arguments.output_folder("/tmp/new/folder") == "/tmp/new/folder"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_script_checks_its_numbers(script):
    """No bare ``type=int``/``type=float``: each number has a range (this module's types)."""
    bare = re.findall(r'add_argument\([^)]*type=(?:int|float)\b', script.read_text())
    assert not bare, bare


def test_a_script_exits_2_with_one_line():
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "vector_speed.py"),
                          "--seconds", "nan"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines()[-1].endswith(
        "argument --seconds: must be a finite number > 0, got nan")
    assert "Traceback" not in run.stderr


def test_one_line_errors_is_a_scripts_exit_status(capsys):
    def bad():
        raise ValueError("labels.npz: not a labels file")

    def broken():
        raise KeyError("a bug, not bad input")

    assert arguments.one_line_errors(lambda: None) == 0
    assert arguments.one_line_errors(bad) == 2
    assert capsys.readouterr().err == "error: labels.npz: not a labels file\n"
    with pytest.raises(KeyError):  # a bug keeps its traceback
        arguments.one_line_errors(broken)


def test_real_at_most_takes_its_range_and_names_it():
    real_at_most = arguments.real_at_most
    power = real_at_most(10.0, positive=False)
    assert power("0") == 0.0 and power("10") == 10.0
    for text, words in (("10.5", r"in \[0, 10\], got 10.5"), ("1e308", "got 1e308"),
                        ("nan", "finite"), ("-1", "finite")):
        with pytest.raises(argparse.ArgumentTypeError, match=words):
            power(text)
    with pytest.raises(argparse.ArgumentTypeError, match="finite number > 0, got 0"):
        real_at_most(1000.0)("0")
    with pytest.raises(argparse.ArgumentTypeError, match=r"in \(0, 1000\], got 1001"):
        real_at_most(1000.0)("1001")


@pytest.mark.parametrize("script, option, value, words", [
    ("vector_speed.py", "--sizes", "20000000", "--sizes: must be an int in [1, 16777216]"),
    ("inference_search.py", "--samples", "580", "--samples: must be an int in [1, 579]"),
    ("inference_search.py", "--power", "11", "--power: must be a number in [0, 10]"),
    ("inference_search.py", "--against", "bogus", "--against: unknown agent spec 'bogus'"),
    ("inference_search.py", "--candidates", "3", "candidates must be an int in [samples = 64"),
    ("openspiel_ladder.py", "--sims", "2000000", "--sims: must be an int in [1, 1000000]"),
    ("ladder.py", "--scale", "1e308", "--scale: must be a number in (0, 1000]"),
    ("inference_signal.py", "--power", "1e308", "--power: must be a number in (0, 10]"),
])
def test_benchmark_options_have_the_bounds_of_what_they_set(script, option, value, words):
    """Each was refused by the code it sets only after the work before it: a traceback, some
    hours in (``--sizes 256 20000000``), or NaN results (``--power 1e308``)."""
    path = ROOT / "benchmarks" / script
    run = subprocess.run([sys.executable, str(path), option, value], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 2 and words in run.stderr.strip().splitlines()[-1], run.stderr
