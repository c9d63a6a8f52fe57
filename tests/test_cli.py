"""The ``sevenrocks`` command line, and the package as a user installs it."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sevenrocks_env import __version__
from sevenrocks_env.cli import SUBCOMMANDS, help_text, main


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"sevenrocks {__version__}"


def test_help_lists_every_subcommand(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in SUBCOMMANDS:
        assert name in out


def test_no_subcommand_is_a_usage_error(capsys):
    """``sevenrocks`` alone printed the usage and exited 0: a script calling it by mistake
    went on as if something had run."""
    assert main([]) == 2
    captured = capsys.readouterr()
    assert "usage: sevenrocks" in captured.out and "give a subcommand" in captured.err


def test_unknown_subcommand_is_exit_2(capsys):
    assert main(["nonsense"]) == 2
    assert "unknown subcommand 'nonsense'" in capsys.readouterr().err


def test_train_is_the_trainer_and_its_help_names_the_command_it_was_run_as(capsys):
    """``sevenrocks train --help`` printed ``usage: python -m training.train`` and the
    docstring's reStructuredText marks (````--force````); ``python -m training.train --help``
    names itself."""
    with pytest.raises(SystemExit) as exit_:
        main(["train", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: sevenrocks train ") and "python -m" not in out
    assert "`" not in out and "(--force writes into it anyway)" in out
    assert main(["train", "--help-config"]) == 0
    assert "`" not in capsys.readouterr().out
    module = subprocess.run([sys.executable, "-m", "training.train", "--help"],
                            capture_output=True, text=True)
    assert module.returncode == 0, module.stderr[-2000:]
    assert module.stdout.startswith("usage: python -m training.train ")
    assert "`" not in module.stdout and "sevenrocks train" not in module.stdout


@pytest.mark.parametrize("stdout", ["closed pipe", "/dev/full"])
def test_python_m_training_train_handles_a_closed_or_full_stdout(stdout):
    """``python -m training.train --help-config | head -1`` ended in a BrokenPipeError
    traceback (``sevenrocks train`` did not): now the same quiet exit, and a full disk one line."""
    if stdout == "closed pipe":
        read_end, out = os.pipe()
        os.close(read_end)  # the reader went away before the first write
    else:
        out = os.open("/dev/full", os.O_WRONLY)
    try:
        proc = subprocess.run([sys.executable, "-m", "training.train", "--help-config"],
                              stdout=out, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(out)
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    if stdout == "closed pipe":
        assert proc.returncode == 1 and proc.stderr == ""
    else:
        assert proc.returncode == 2
        assert proc.stderr == "error: python -m training.train: No space left on device\n"


def test_help_config_says_where_make_train_s_values_are(capsys):
    assert main(["train", "--help-config"]) == 0
    out = capsys.readouterr().out
    assert "configs/default.yaml" in out.splitlines()[1] and "total_steps (default" in out


def test_help_text_drops_restructuredtext_marks():
    assert help_text("``--force`` (:mod:`training.seats`), 'x'") == "--force (training.seats), 'x'"


def test_wheel_carries_the_shipped_policy_and_license(tmp_path):
    """A plain wheel install has the shipped policy as package data (load_policy("shipped")) and
    make train's and make smoke's configs (--config default), and building it raises no
    setuptools deprecation warning."""
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), "."], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-2000:]
    assert "SetuptoolsDeprecationWarning" not in built.stderr
    (wheel,) = tmp_path.glob("sevenrocks-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "sevenrocks_env/shipped/sevenrocks_ppo.pt" in names
    assert "sevenrocks_env/shipped/MODEL_CARD.md" in names
    assert any(name.endswith("licenses/LICENSE") for name in names)
    for name in ("default", "smoke"):  # the files themselves (training/configs is a link)
        packaged = zipfile.ZipFile(wheel).read(f"training/configs/{name}.yaml")
        assert packaged == (Path(__file__).resolve().parents[1] / "configs"
                            / f"{name}.yaml").read_bytes()


def test_a_missing_optional_package_exits_2(monkeypatch, capsys):
    monkeypatch.setitem(SUBCOMMANDS, "play", ("sevenrocks_env.no_such_module", "x"))
    assert main(["play"]) == 2
    assert "needs a package that is not installed" in capsys.readouterr().err


def test_ctrl_c_while_a_subcommand_loads_is_one_line_and_130(monkeypatch, capsys):
    """``sevenrocks train`` imports torch for seconds before its own Ctrl-C handler is set up:
    a Ctrl-C then printed a 30-line KeyboardInterrupt traceback."""
    import importlib

    def interrupted(name):
        raise KeyboardInterrupt

    monkeypatch.setattr(importlib, "import_module", interrupted)
    assert main(["train", "--config", "configs/default.yaml"]) == 130
    assert capsys.readouterr().err.strip() == "sevenrocks: interrupted"


def test_a_users_training_package_that_hides_ours_is_named(monkeypatch, tmp_path, capsys):
    """A user's own ``training/`` in the working folder hides our trainer (installed from a
    wheel): the error said a package was not installed, as if an extra were missing."""
    import importlib
    import types

    import training as ours
    from sevenrocks_env import cli

    def missing(name):
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)

    monkeypatch.setattr(importlib, "import_module", missing)
    theirs = types.ModuleType("training")
    theirs.__path__ = [str(tmp_path / "training")]
    monkeypatch.setitem(sys.modules, "training", theirs)
    assert cli.main(["train", "--help"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'training'} is named 'training' too, and it hides" in err
    script = types.ModuleType("training")  # a user's training.py: a module, no __path__
    script.__file__ = str(tmp_path / "training.py")
    monkeypatch.setitem(sys.modules, "training", script)
    assert cli.main(["train", "--help"]) == 2
    assert f"{tmp_path / 'training.py'} is named 'training' too" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "training", ours)  # ours, and still failing: an extra
    assert cli.main(["train", "--help"]) == 2
    assert "needs a package that is not installed" in capsys.readouterr().err


def test_guarded_commands_escape_what_stdout_s_encoding_lacks(monkeypatch):
    """On an ASCII or Latin-1 stdout a name with an accent was a UnicodeEncodeError traceback
    (sevenrocks play lost its record; training.ship had played its arena and wrote nothing)."""
    import io

    from sevenrocks_env.cli import guarded
    out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr(sys, "stdout", out)
    assert guarded("test", lambda: print("caf\u00e9 \u00b1") or 0) == 0
    out.flush()
    assert out.buffer.getvalue() == b"caf\\xe9 \\xb1\n"


@pytest.mark.parametrize("module", ["training.ship", "training.distill", "training.plot_curve",
                                    "training.train"])
def test_the_trainer_s_scripts_run_as_guarded_commands(module):
    """Each ``python -m`` entry point goes through ``cli.guarded`` (the escapes, a closed
    stdout) as ``sevenrocks`` does: its ``__main__`` block names it."""
    import importlib.util
    source = open(importlib.util.find_spec(module).origin, encoding="utf-8").read()
    main_block = source[source.index('if __name__ == "__main__":'):]
    assert f'guarded("python -m {module}"' in main_block


BENCHMARKS = sorted(path.name for path in
                    (Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("script", BENCHMARKS)
def test_every_benchmark_runs_as_a_guarded_command(script):
    """The benchmarks print tables with ``±``: on an ASCII stdout that was a traceback."""
    source = (Path(__file__).resolve().parents[1] / "benchmarks" / script).read_text()
    assert f'guarded("benchmarks/{script}", main)' in source[source.index('if __name__'):]


def test_a_benchmark_s_table_is_written_on_an_ascii_stdout(tmp_path):
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "vector_speed.py"
    proc = subprocess.run([sys.executable, str(script), "--sizes", "16", "--seconds", "0.1",
                           "--blocks", "4"], capture_output=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 0 and b" \\xb1 " in proc.stdout, proc.stderr[-400:]


def test_pip_flags_reach_every_pip_install_of_the_makefile():
    """README: PIP_FLAGS goes to every pip install (a host that reaches only a mirror):
    ``pip install --upgrade pip`` went to the default index."""
    root = Path(__file__).resolve().parents[1]
    shown = subprocess.run(["make", "-n", "-B", "install", "install-rllib",
                            "PIP_FLAGS=--index-url=http://mirror.invalid/simple"],
                           cwd=root, capture_output=True, text=True, check=True).stdout
    installs = [line for line in shown.splitlines() if " -m pip install " in line]
    assert len(installs) == 6  # pip, torch and the package, in each of the two venvs
    assert all("--index-url=http://mirror.invalid/simple" in line for line in installs)
