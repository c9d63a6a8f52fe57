"""``benchmarks/vector_speed.py``'s table and plot: each rate and ratio over ``raw_env``'s in its
own column (eager, compiled, packed, with observations), the compiling steps' seconds, each
line and band of the plot, the memory line, and the defaults and bounds of its usage line.  No
speed is measured (the measurements are stand-ins); the measurements themselves:
``test_benchmarks_audit_vector_rates.py``."""

from types import SimpleNamespace

import pytest
import torch

from test_benchmarks_audit import any_device
from test_benchmarks_tables import says_its_machine, table_rows, usage_error

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # the scripts set threads: restored


def test_vector_blocks_are_4_to_1000(vector, capsys):
    assert usage_error(vector.main, ["--blocks", "3"], capsys).endswith(
        "argument --blocks: must be an int in [4, 1000], got 3")
    assert "--blocks" in usage_error(vector.main, ["--blocks", "1001"], capsys)


def _fake_vector_parts(vector, monkeypatch):
    """Stand-ins for the measurements of ``vector_speed.main``; returns their calls."""
    calls = {"aec": [], "memory": [], "batched": [], "compiled": [], "threads": [], "blocks": []}

    def rate(value):  # a figure +- a tenth of it
        return vector.Rate(value, 0.9 * value, 1.1 * value)

    def aec_rate(seconds, observe, blocks):
        calls["aec"].append((seconds, observe))
        calls["blocks"].append(blocks)
        return rate(40.0 if observe else 100.0)

    def memory(num_envs, device):
        calls["memory"].append((num_envs, device))
        return 3 * 2**20, 5 * 2**20

    def batched(num_envs, seconds, observe, device, validate, packed=False, blocks=None):
        calls["batched"].append((num_envs, seconds, observe, device, validate, packed))
        calls["threads"].append(torch.get_num_threads())
        calls["blocks"].append(blocks)
        return rate(num_envs * (300 if observe else 2500 if packed else 1000))

    def compiled_against_eager(num_envs, seconds, observe, device, validate, packed=False,
                               blocks=None):
        calls["compiled"].append((num_envs, seconds, observe, device, validate, packed))
        calls["blocks"].append(blocks)
        if observe:
            return rate(num_envs * 300), rate(num_envs * 900), 99.0
        if packed:
            return rate(num_envs * 2500), rate(num_envs * 5000), 77.0
        return rate(num_envs * 1000), rate(num_envs * 4000), 1.5 + num_envs

    for name, fake in (("aec_rate", aec_rate), ("memory", memory), ("batched", batched),
                       ("compiled_against_eager", compiled_against_eager)):
        monkeypatch.setattr(vector, name, fake)
    monkeypatch.setattr(vector.resource, "getrusage",
                        lambda who: SimpleNamespace(ru_maxrss=7 * 2**10))  # KiB: 7 MiB
    return calls


def test_vector_main_puts_each_rate_and_ratio_in_its_column(vector, monkeypatch, capsys):
    """raw_env: 100 steps/s mask only, 40 with observations; a size B: 1,000 B and 300 B."""
    any_device(monkeypatch)
    calls = _fake_vector_parts(vector, monkeypatch)
    vector.main(["--sizes", "4", "8", "2", "--seconds", "0.5", "--threads", "2", "--device",
                 "gpu9", "--validate"])
    out = capsys.readouterr().out
    assert out.startswith("# ") and says_its_machine(out.splitlines()[0], torch_threads=2)
    assert calls["aec"] == [(0.5, False), (0.5, True)]
    assert calls["memory"] == [(8, "gpu9")]  # the largest size, not the first or the last
    assert calls["batched"] == [(size, 0.5, observe, "gpu9", True, packed)
                                for size in (4, 8, 2)
                                for observe, packed in ((False, False), (True, False),
                                                        (False, True))]
    assert calls["threads"] == [2] * 9 and calls["blocks"] == [5] * 11
    assert "raw_env random play: 100 ± 10 steps/s (mask only), 40 ± 4 steps/s (observation + " \
           "mask)" in out
    assert table_rows(out, "") == [
        ["B", "masks only, steps/s", "x raw_env", "masks + observations, steps/s", "x raw_env",
         "packed legal set, steps/s", "x raw_env"],
        ["4", "4,000 ± 400", "40.0", "1,200 ± 120", "30.0", "10,000 ± 1,000", "100.0"],
        ["8", "8,000 ± 800", "80.0", "2,400 ± 240", "60.0", "20,000 ± 2,000", "200.0"],
        ["2", "2,000 ± 200", "20.0", "600 ± 60", "15.0", "5,000 ± 500", "50.0"]]
    assert "\n|" + "---:|" * 7 + "\n" in out  # a separator cell for every column
    assert ("memory at B = 8 (eager, measured first): env tensors 3.0 MiB (393216 bytes/match), "
            "process RSS growth 5.0 MiB; peak RSS of the whole run 7 MiB") in out


def _spy_plots(monkeypatch) -> tuple[dict, list]:
    """Each line ``Axes.plot`` draws, by label, and each band ``fill_between`` draws, in order."""
    from matplotlib.axes import Axes
    plotted, bands, plot, fill = {}, [], Axes.plot, Axes.fill_between

    def spy_plot(self, x, y, *rest, label=None, **options):
        plotted[label] = (list(x), list(y))
        return plot(self, x, y, *rest, label=label, **options)

    def spy_fill(self, x, low, high, *rest, **options):
        bands.append((list(x), list(low), list(high)))
        return fill(self, x, low, high, *rest, **options)
    monkeypatch.setattr(Axes, "plot", spy_plot)
    monkeypatch.setattr(Axes, "fill_between", spy_fill)
    return plotted, bands


def test_vector_main_compiled_columns_warm_ups_and_plot(vector, monkeypatch, tmp_path, capsys):
    plotted, bands = _spy_plots(monkeypatch)
    calls = _fake_vector_parts(vector, monkeypatch)
    path = tmp_path / "new" / "speed.png"
    vector.main(["--sizes", "8", "2", "--seconds", "0.5", "--compile", "--blocks", "9",
                 "--plot", str(path)])
    out = capsys.readouterr().out
    assert calls["compiled"] == [
        (size, 0.5, observe, "cpu", False, packed) for size in (8, 2)
        for observe, packed in ((False, False), (False, True), (True, False))]
    assert calls["blocks"] == [9] * 8
    assert table_rows(out, "")[1:] == [
        ["8", "8,000 ± 800", "80.0", "32,000 ± 3,200", "320.0", "20,000 ± 2,000", "200.0",
         "40,000 ± 4,000", "400.0", "2,400 ± 240", "60.0", "7,200 ± 720", "180.0"],
        ["2", "2,000 ± 200", "20.0", "8,000 ± 800", "80.0", "5,000 ± 500", "50.0",
         "10,000 ± 1,000", "100.0", "600 ± 60", "15.0", "1,800 ± 180", "45.0"]]
    assert "the first 5 steps (compiling; Inductor's on-disk cache makes a later run's " \
           "shorter), by B: 8: 9.5 s, 2: 3.5 s" in out
    assert plotted == {"batched, masks only": ([8, 2], [8000, 2000]),
                       "batched, masks + observations": ([8, 2], [2400, 600]),
                       "batched, packed legal set": ([8, 2], [20000, 5000]),
                       "compile=True, masks only": ([8, 2], [32000, 8000]),
                       "compile=True, masks + observations": ([8, 2], [7200, 1800]),
                       "compile=True, packed legal set": ([8, 2], [40000, 10000])}
    # each line's band: its rows' intervals, in the order the lines were drawn
    assert bands == [([8, 2], [0.9 * a, 0.9 * b], [1.1 * a, 1.1 * b])
                     for a, b in ((8000, 2000), (2400, 600), (20000, 5000), (32000, 8000),
                                  (7200, 1800), (40000, 10000))]
    assert f"wrote {path}" in out and [p.name for p in path.parent.iterdir()] == ["speed.png"]
    assert path.read_bytes().startswith(b"\x89PNG")


def test_vector_main_plots_the_packed_sampler_beside_the_mask(vector, monkeypatch, tmp_path):
    plotted, bands = _spy_plots(monkeypatch)
    _fake_vector_parts(vector, monkeypatch)
    vector.main(["--sizes", "8", "2", "--seconds", "0.5", "--plot", str(tmp_path / "s.png")])
    assert plotted == {"batched, masks only": ([8, 2], [8000, 2000]),
                       "batched, masks + observations": ([8, 2], [2400, 600]),
                       "batched, packed legal set": ([8, 2], [20000, 5000])}
    assert len(bands) == 3


def test_vector_defaults_are_the_usage_line_s(vector, monkeypatch, capsys):
    """``[--sizes 256 1024 4096 16384 65536] [--seconds 3] [--threads 1] [--device cpu]``."""
    calls = _fake_vector_parts(vector, monkeypatch)
    vector.main([])
    assert [c[0] for c in calls["batched"][::3]] == [256, 1024, 4096, 16384, 65536]
    assert {c[1:] for c in calls["batched"]} == {(3.0, False, "cpu", False, False),
                                                  (3.0, True, "cpu", False, False),
                                                  (3.0, False, "cpu", False, True)}
    assert calls["threads"] == [1] * 15 and calls["memory"] == [(65536, "cpu")]
