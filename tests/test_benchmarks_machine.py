"""What the benchmark scripts share: the machine their header lines name
(``sevenrocks_env/machine.py``: ``platform.processor()`` is empty on Linux, so they printed
only ``x86_64``, some no CPU count, some no machine at all; each script's own header:
``says_its_machine`` in their tests), and their ``--plot`` pictures, saved in the format their
suffix names (``ladder.py`` wrote PNG bytes to ``r.pdf``)."""

import argparse
import sys
from pathlib import Path

import pytest

from sevenrocks_env import arguments, machine

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R)   CPU @ 2.20GHz
flags\t\t: fpu vme

processor\t: 1
model name\t: another, not read
"""


def test_the_cpu_model_is_cpuinfo_s_first_model_name(tmp_path, monkeypatch):
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO)
    assert machine.cpu_model(str(path)) == "Intel(R) Xeon(R) CPU @ 2.20GHz"
    # no model name (an ARM board's format) or no file: platform's words
    monkeypatch.setattr(machine.platform, "processor", lambda: "")
    monkeypatch.setattr(machine.platform, "machine", lambda: "aarch64")
    path.write_text("processor\t: 0\nBogoMIPS\t: 50.00\n")
    assert machine.cpu_model(str(path)) == "aarch64"
    assert machine.cpu_model(str(tmp_path / "missing")) == "aarch64"


def test_machine_text_names_the_cpus_the_load_and_torch_s_threads(tmp_path, monkeypatch):
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO)
    monkeypatch.setattr(machine, "CPUINFO", str(path))
    monkeypatch.setattr(machine.os, "cpu_count", lambda: 7)
    monkeypatch.setattr(machine.os, "getloadavg", lambda: (6.25, 4.0, 0.5))
    assert machine.machine_text() == (
        "Intel(R) Xeon(R) CPU @ 2.20GHz, 7 CPUs, load average 6.2/4.0/0.5")
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(3)
        assert machine.machine_text(with_torch=True).endswith(
            f"load average 6.2/4.0/0.5, torch {torch.__version__}, 3 torch thread(s)")
    finally:
        torch.set_num_threads(threads)

    def no_load():
        raise OSError("no load average here")
    monkeypatch.setattr(machine.os, "getloadavg", no_load)
    assert machine.machine_text().endswith(", 7 CPUs, load average ?")


def test_a_picture_s_format_is_its_suffix_s():
    assert [arguments.picture_format(name) for name in ("r.png", "r.SVG", "d/r.pdf")] == [
        "png", "svg", "pdf"]
    assert arguments.picture_format("r.txt") is None and arguments.picture_format("r") is None
    assert arguments.picture_file("r.pdf") == "r.pdf"
    for name in ("r", ".png", "a/.png", "x\x1b.txt"):  # (".png" is a name with no suffix)
        with pytest.raises(argparse.ArgumentTypeError) as error:
            arguments.picture_file(name)
        assert str(error.value) == ("give a file name ending in .png, .svg or .pdf, got "
                                    + repr(name))


@pytest.fixture
def ladder():
    pytest.importorskip("matplotlib")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import ladder
    return ladder


MAGIC = {"png": b"\x89PNG", "pdf": b"%PDF", "svg": b"<?xml"}


@pytest.mark.parametrize("suffix", ["pdf", "svg", "png"])
def test_the_ladder_plot_is_saved_in_its_suffix_s_format(ladder, tmp_path, suffix):
    """``r.pdf`` held PNG bytes (the format was always "png")."""
    rated = ladder.ratings([
        {"agent_a": "greedy", "agent_b": "random", "win_rate": 0.9, "pairs": 40},
        {"agent_a": "heuristic", "agent_b": "greedy", "win_rate": 0.7, "pairs": 40},
        {"agent_a": "heuristic", "agent_b": "random", "win_rate": 0.95, "pairs": 40}])
    path = tmp_path / f"ratings.{suffix}"
    ladder.plot(rated, str(path))
    assert path.read_bytes().startswith(MAGIC[suffix])


def test_the_ladder_refuses_another_picture_before_playing(ladder, tmp_path, capsys):
    out = tmp_path / "ladder"
    with pytest.raises(SystemExit) as stop:
        ladder.main(["--only", "random", "--out", str(out), "--plot", str(tmp_path / "r.txt")])
    assert stop.value.code == 2 and not out.exists()
    assert capsys.readouterr().err.strip().endswith(
        f"argument --plot: give a file name ending in .png, .svg or .pdf, got "
        f"{str(tmp_path / 'r.txt')!r}")
