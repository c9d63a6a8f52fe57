"""training.plot_curve: readable axes for runs of seconds or hours, bands from the logged pairs."""

import pytest

pytest.importorskip("matplotlib", reason="needs the [train] extra")
pytest.importorskip("tensorboard", reason="needs the [train] extra")

from PIL import Image  # noqa: E402
from torch.utils.tensorboard import SummaryWriter  # noqa: E402

from training.plot_curve import _pairs_from_table, main, read_run, time_unit, x_axis  # noqa: E402


def write_run(folder, minutes, pairs=(1, 2), rates=(0.25, 0.5, 0.75), pairs_logged=None,
              extra=()):
    """A run's event file; ``extra``: more ``(tag, value, step)`` scalars in the same file."""
    writer = SummaryWriter(str(folder))
    for k, count in enumerate(pairs_logged or (), start=1):
        writer.add_scalar("eval/pairs", count, 256 * k)
    if pairs is not None:
        writer.add_text("hyperparameters", f"|param|value|\n|-|-|\n|eval_pairs|{pairs[0]}|\n"
                                           f"|final_eval_pairs|{pairs[1]}|")
    for k, (m, rate) in enumerate(zip(minutes, rates), start=1):
        writer.add_scalar("eval/win_rate_vs_random", rate, 256 * k)
        writer.add_scalar("eval/win_rate_vs_greedy", rate / 2, 256 * k)
        writer.add_scalar("eval/wall_minutes", m, 256 * k)
    for tag, value, step in extra:
        writer.add_scalar(tag, value, step)
    writer.close()
    return folder


@pytest.mark.parametrize("seconds, unit", [(3.5, "seconds"), (119, "seconds"), (120, "minutes"),
                                           (3600, "minutes"), (7200, "hours"), (36000, "hours")])
def test_time_unit_suits_the_run_length(seconds, unit):
    assert time_unit(seconds)[0] == unit


def test_a_seconds_long_run_reads_in_seconds_with_bands(tmp_path):
    run = read_run(write_run(tmp_path / "smoke", minutes=(0.01, 0.03, 0.06)))
    assert run["pairs"] == (1, 2) and run["name"] == "smoke"
    points = run["curves"]["random"]  # float32 scalars: seconds to within 1e-6
    assert [p[0] for p in points] == [256, 512, 768]
    assert [p[1] for p in points] == pytest.approx([0.6, 1.8, 3.6], rel=1e-6)
    assert x_axis(run, "time") == ("wall time (seconds)", 1.0, 1)
    assert x_axis(run, "steps") == ("learner decisions", 1.0, 0)
    out = tmp_path / "curve.png"
    assert main([str(tmp_path / "smoke"), "--out", str(out)]) == 0
    assert Image.open(out).size == (900, 520)
    assert main([str(tmp_path / "smoke"), "--out", str(out), "--x", "steps"]) == 0


def test_long_run_in_hours_and_pairs_from_the_command_line(tmp_path, monkeypatch):
    import training.plot_curve as plot_curve

    run = read_run(write_run(tmp_path / "long", minutes=(30, 200, 400), pairs=None))
    assert run["pairs"] is None and x_axis(run, "time")[0] == "wall time (hours)"
    drawn, original = [], plot_curve.wilson_interval
    monkeypatch.setattr(plot_curve, "wilson_interval",
                        lambda p, n: drawn.append(n) or original(p, n))
    assert main([str(tmp_path / "long"), "--out", str(tmp_path / "c.png"), "--pairs", "50"]) == 0
    assert drawn == [50] * 6  # every point of both curves: nothing logged says otherwise


@pytest.mark.parametrize("logged", ["eval/pairs", "hyperparameters", "both"])
def test_pairs_given_override_whatever_the_run_logged(tmp_path, monkeypatch, logged):
    """``draw(..., pairs=50)``: every band over 50 pairs, not the logged eval/pairs (30) nor the
    hyperparameters' eval_pairs and final_eval_pairs (30, 200)."""
    import training.plot_curve as plot_curve

    run = read_run(write_run(tmp_path / "run", minutes=(1, 2, 3),
                             pairs=None if logged == "eval/pairs" else (30, 200),
                             pairs_logged=None if logged == "hyperparameters" else (30, 30, 30)))
    drawn, original = [], plot_curve.wilson_interval
    monkeypatch.setattr(plot_curve, "wilson_interval",
                        lambda p, n: drawn.append(n) or original(p, n))
    plot_curve.draw(run, tmp_path / "c.png", pairs=50)
    assert drawn == [50] * 6


def test_a_run_logging_eval_pairs_at_only_some_evaluations_is_drawn_by_the_config_s_rule(
        tmp_path, monkeypatch):
    """A run resumed across the version that began logging eval/pairs: the evaluations before
    it have none; all points take the logged hyperparameters' rule (no crash, no band lost)."""
    import training.plot_curve as plot_curve

    run = read_run(write_run(tmp_path / "mixed", minutes=(1, 2, 3), pairs=(30, 200),
                             pairs_logged=(30,)))
    assert run["pairs_at"] == {256: 30}
    drawn, original = [], plot_curve.wilson_interval
    monkeypatch.setattr(plot_curve, "wilson_interval",
                        lambda p, n: drawn.append(n) or original(p, n))
    plot_curve.draw(run, tmp_path / "mixed.png")
    assert drawn == [30, 30, 200] * 2


def test_the_logged_pairs_of_each_evaluation_size_its_band(tmp_path, monkeypatch):
    """A run stopped by Ctrl-C has no final evaluation: its last point played eval_pairs, not
    final_eval_pairs; the logged eval/pairs says so, and the band follows it."""
    import training.plot_curve as plot_curve

    run = read_run(write_run(tmp_path / "cut", minutes=(1, 2, 3), pairs=(30, 200),
                             pairs_logged=(30, 30, 30)))
    assert run["pairs_at"] == {256: 30, 512: 30, 768: 30}
    drawn, original = [], plot_curve.wilson_interval
    monkeypatch.setattr(plot_curve, "wilson_interval", lambda p, n: drawn.append(n) or original(p, n))
    plot_curve.draw(run, tmp_path / "cut.png")
    assert set(drawn) == {30}  # not 200 for the last point


def test_the_runs_folder_or_a_file_given_for_a_run_is_named_as_such(tmp_path, capsys):
    """``tensorboard --logdir runs`` takes the parent; plot_curve takes one run: the parent said
    only "no evaluations logged", and a file said "no such folder" though it exists."""
    for name in ("b_run", "a_run", "c_run", "d_run"):
        write_run(tmp_path / "runs" / name, minutes=(0.1,), rates=(0.5,))
    (tmp_path / "runs" / "notes").mkdir()
    out = ["--out", str(tmp_path / "c.png")]
    assert main([str(tmp_path / "runs"), *out]) == 2
    err = capsys.readouterr().err
    assert "no evaluations logged" in err and err.count("\n") == 1
    runs = [str(tmp_path / "runs" / name) for name in ("a_run", "b_run", "c_run")]
    assert err.strip().endswith(f"; it holds runs, give one: {', '.join(runs)}, ...")
    assert main([str(tmp_path / "runs" / "a_run" / "x.png"), *out]) == 2
    assert "no such folder" in capsys.readouterr().err
    (tmp_path / "file.png").write_bytes(b"")
    assert main([str(tmp_path / "file.png"), *out]) == 2
    assert "not a folder: give a run's folder (runs/<run>)" in capsys.readouterr().err


def test_hparams_table_parsing():
    assert _pairs_from_table("|param|value|\n|eval_pairs|3|\n|final_eval_pairs|40|") == (3, 40)
    assert _pairs_from_table("|param|value|\n|eval_pairs|3|") is None


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    out = ["--out", str(tmp_path / "c.png")]
    assert main([str(tmp_path / "missing"), *out]) == 2
    assert "no such folder" in capsys.readouterr().err
    SummaryWriter(str(tmp_path / "empty")).close()
    assert main([str(tmp_path / "empty"), *out]) == 2
    assert "no evaluations logged" in capsys.readouterr().err
    assert main([str(tmp_path / "empty"), "--pairs", "0", *out]) == 2
    capsys.readouterr()
    for out, words in ((tmp_path / "c.xyz", "name a .png"), (tmp_path / "d.png", "not a regular")):
        (tmp_path / "d.png").mkdir(exist_ok=True)  # a folder where the picture would go
        assert main([str(tmp_path / "empty"), "--out", str(out)]) == 2
        assert words in capsys.readouterr().err


def test_without_logged_pairs_the_last_point_has_the_final_evaluation_s_pairs(tmp_path,
                                                                                monkeypatch):
    """Runs from before eval/pairs: "the logged hyperparameters
    eval_pairs, final_eval_pairs for the last point" (docs/training.md)."""
    import training.plot_curve as plot_curve

    run = plot_curve.read_run(write_run(tmp_path / "old", minutes=(1, 2, 3), pairs=(30, 200)))
    assert run["pairs_at"] == {}
    drawn, original = [], plot_curve.wilson_interval
    monkeypatch.setattr(plot_curve, "wilson_interval",
                        lambda p, n: drawn.append(n) or original(p, n))
    plot_curve.draw(run, tmp_path / "old.png")
    assert drawn == [30, 30, 200] * 2   # two curves (random, greedy)


def test_pairs_zero_is_refused_on_a_real_run(tmp_path, capsys):
    """--pairs must be at least 1, also for a run that can be drawn
    (the existing check uses an empty run, which fails for its own reason)."""
    write_run(tmp_path / "run", minutes=(1, 2, 3))
    assert main([str(tmp_path / "run"), "--out", str(tmp_path / "c.png"), "--pairs", "0"]) == 2
    assert "--pairs must be at least 1" in capsys.readouterr().err
    assert not (tmp_path / "c.png").exists()


def test_a_win_rate_without_its_wall_time_is_skipped(tmp_path):
    """Only evaluations with eval/wall_minutes are points (the x axis
    needs it): a stray win-rate scalar is left out, not a KeyError."""
    write_run(tmp_path / "run", minutes=(1, 2, 3),
              extra=[("eval/win_rate_vs_random", 0.9, 1000)])
    assert [p[0] for p in read_run(tmp_path / "run")["curves"]["random"]] == [256, 512, 768]


def test_a_run_resumed_from_any_checkpoint_resume_takes_is_drawn(tmp_path):
    """--resume takes a wall_time up to 1e9 s; the curves refused minutes past a year, so a run
    resumed from 5e7 s (833,333 minutes) trained and could not be drawn."""
    from training.checkpoint import MAX_WALL_SECONDS
    from training.plot_curve import read_run
    late = MAX_WALL_SECONDS / 60
    run = read_run(write_run(tmp_path / "run", minutes=(1, 833_334, late)))
    assert [seconds for _, seconds, _ in run["curves"]["random"]][1:] == [
        pytest.approx(833_334 * 60), pytest.approx(late * 60)]


@pytest.mark.parametrize("extra, words", [
    ([("eval/win_rate_vs_random", 1.5, 256)], "'eval/win_rate_vs_random' is 1.5 at step 256, "
                                              "not a win rate"),
    ([("eval/pairs", float("inf"), 256)], "'eval/pairs' is inf at step 256, not a number of pairs"),
    ([("eval/pairs", float("nan"), 256)], "'eval/pairs' is nan"),
    ([("eval/pairs", 2.5, 256)], "not a number of pairs"),
    ([("eval/wall_minutes", -4.0, 512)], "'eval/wall_minutes' is -4.0 at step 512"),
    ([("eval/wall_minutes", 2e7, 512)], "'eval/wall_minutes' is 20000000.0 at step 512, not a "
                                        "number of minutes"),  # well past a checkpoint's 1e9 s
])
def test_odd_logged_values_are_one_line_naming_the_tag(tmp_path, capsys, extra, words):
    """A run folder from elsewhere: every value read is checked before it is drawn (the tag
    quoted: a tag's escapes were sent raw to the terminal)."""
    write_run(tmp_path / "run", minutes=(1, 2, 3), extra=extra)
    assert main([str(tmp_path / "run"), "--out", str(tmp_path / "c.png")]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err
    assert not (tmp_path / "c.png").exists()


def test_a_run_with_one_evaluation_shows_its_interval(tmp_path, monkeypatch):
    """eval_every=0 (or an agent evaluated once): a band between points has no width at one
    point, so its interval is drawn as a bar; the title says "bands" and the picture shows them
    (before: a bare marker)."""
    from matplotlib.figure import Figure

    write_run(tmp_path / "once", minutes=(0.3,), rates=(0.75,), pairs=(8, 8))
    # Wilson over 8 pairs: vs random 0.75 in [0.409, 0.929], vs greedy 0.375 in [0.137, 0.694]
    where, original = {}, Figure.savefig

    def spy(fig, *args, **kwargs):
        ax = fig.axes[0]
        where["x"] = float(ax.get_lines()[0].get_xdata()[0])
        where["to_pixels"] = ax.transData.transform
        return original(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", spy)
    out = tmp_path / "once.png"
    assert main([str(tmp_path / "once"), "--out", str(out)]) == 0
    picture = Image.open(out).convert("RGB")
    for rate in (0.25, 0.88, 0.92):  # inside one interval only, away from the markers
        x, y = where["to_pixels"]((where["x"], rate))
        column = [picture.getpixel((int(round(x)) + dx, picture.height - int(round(y))))
                  for dx in (-1, 0, 1)]
        # a curve's colour, not the white background nor the grey grid
        assert any(max(pixel) - min(pixel) > 20 for pixel in column), (rate, column)
