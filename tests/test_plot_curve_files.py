"""training.plot_curve on hostile or damaged run folders: every bad event file is one error line
naming it and exit 2 (never a traceback, never gigabytes of memory); the bounds are checked
before TensorBoard reads the files, and runs in progress or resumed read as TensorBoard reads
them."""

import os
import struct

import pytest

pytest.importorskip("matplotlib", reason="needs the [train] extra")
pytest.importorskip("tensorboard", reason="needs the [train] extra")

from tensorboard.compat.proto import types_pb2  # noqa: E402
from tensorboard.compat.proto.event_pb2 import Event  # noqa: E402
from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata  # noqa: E402
from tensorboard.compat.proto.tensor_pb2 import TensorProto  # noqa: E402
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c  # noqa: E402
from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402
from torch.utils.tensorboard import SummaryWriter  # noqa: E402

import training.plot_curve as plot_curve  # noqa: E402
from training.plot_curve import _pairs_from_table, main, read_run  # noqa: E402

FILE = "events.out.tfevents.1.test"


def scalar(tag, value, step):
    return Event(step=step, summary=Summary(value=[Summary.Value(tag=tag, simple_value=value)]))


def text(table: bytes | None, step=0):
    tensor = TensorProto(dtype=types_pb2.DT_STRING, string_val=[] if table is None else [table])
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="text"))
    return Event(step=step, summary=Summary(value=[Summary.Value(
        tag="hyperparameters/text_summary", metadata=meta, tensor=tensor)]))


EVALS = [scalar("eval/wall_minutes", 1.0, 10), scalar("eval/win_rate_vs_random", 0.5, 10)]


def write(folder, events, tail=b""):
    """An event file of ``events`` (after the file version, as TensorBoard writes it), then
    ``tail`` bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / FILE, "wb") as file:
        writer = RecordWriter(file)
        for event in [Event(file_version="brain.Event:2"), *events]:
            writer.write(event.SerializeToString())
        file.write(tail)
    return folder


def header(length: int) -> bytes:
    """A record's length and its valid checksum."""
    size = struct.pack("<Q", length)
    return size + struct.pack("<I", masked_crc32c(size))


def one_error_line(capsys, folder, *words):
    assert main([str(folder), "--out", str(folder.parent / "c.png")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and len(err) < 300, err
    for word in words:
        assert word in err, err
    assert not (folder.parent / "c.png").exists()
    return err


def test_a_text_summary_without_text_is_one_line(tmp_path, capsys):
    folder = write(tmp_path / "run", [*EVALS, text(None)])
    one_error_line(capsys, folder, str(folder), "hyperparameters hold no text")


@pytest.mark.parametrize("length", [2 ** 62, 2 ** 30, 2 ** 24 + 1])  # MAX_RECORD_BYTES + 1
def test_a_record_claiming_gigabytes_is_refused_before_reading(tmp_path, capsys, length):
    """TensorBoard's reader did file.read(length): 2^62 was a MemoryError."""
    assert plot_curve.MAX_RECORD_BYTES == 2 ** 24  # the parameters' last length
    folder = write(tmp_path / "run", EVALS, header(length) + b"x" * 100)
    one_error_line(capsys, folder, FILE, "claims", "bytes, more than")


def test_huge_pairs_in_the_hyperparameters_are_refused(tmp_path, capsys):
    """400 digits were an OverflowError in wilson_interval while drawing."""
    table = b"|eval_pairs|" + b"9" * 400 + b"|\n|final_eval_pairs|" + b"9" * 400 + b"|"
    folder = write(tmp_path / "run", [text(table), *EVALS])
    one_error_line(capsys, folder, str(folder), "eval_pairs", "not a number of pairs")
    for final in ("5|\n|eval_pairs|0", plot_curve.MAX_PAIRS + 1, "9" * 5000):
        table = f"|eval_pairs|5|\n|final_eval_pairs|{final}|"
        with pytest.raises(ValueError, match="not a number of pairs"):
            _pairs_from_table(table)
    assert _pairs_from_table(f"|eval_pairs|1|\n|final_eval_pairs|{plot_curve.MAX_PAIRS}|") \
        == (1, plot_curve.MAX_PAIRS)


def test_pairs_past_the_bound_on_the_command_line(tmp_path, capsys):
    folder = write(tmp_path / "run", EVALS)
    assert main([str(folder), "--out", str(tmp_path / "c.png"), "--pairs", "9" * 400]) == 2
    assert "--pairs must be at least 1 and at most" in capsys.readouterr().err


def test_event_files_past_the_bound_are_refused_before_reading(tmp_path, capsys, monkeypatch):
    folder = write(tmp_path / "run", EVALS)
    monkeypatch.setattr(plot_curve, "MAX_EVENT_BYTES", (folder / FILE).stat().st_size - 1)
    one_error_line(capsys, folder, str(folder), "event files hold", "more than")


@pytest.mark.parametrize("problem", [MemoryError(), OverflowError("too big"), IndexError("x"),
                                     PermissionError(13, "Permission denied")])
def test_reader_failures_are_one_line_naming_the_folder(tmp_path, capsys, monkeypatch, problem):
    from tensorboard.backend.event_processing import event_accumulator

    def failing(self):
        raise problem

    folder = write(tmp_path / "run", EVALS)
    monkeypatch.setattr(event_accumulator.EventAccumulator, "Reload", failing)
    one_error_line(capsys, folder, str(folder), "cannot be read", type(problem).__name__)


def test_foreign_files_are_one_line(tmp_path, capsys):
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / FILE).write_bytes(b"not an event file at all, just text")
    one_error_line(capsys, tmp_path / "foreign", FILE, "length checksum")


def test_a_record_whose_data_fails_its_checksum_is_refused(tmp_path, capsys):
    """TensorBoard's reader stops at such a record without a word: one flipped byte dropped the
    run's later evaluations, drawn as if they had never been logged."""
    later = [scalar("eval/wall_minutes", 2.0, 20), scalar("eval/win_rate_vs_random", 0.75, 20)]
    folder = write(tmp_path / "run", [*EVALS, *later])
    data = bytearray((folder / FILE).read_bytes())
    second_last = len(data) - 2 * (16 + len(later[0].SerializeToString()))  # a later record
    data[second_last + 14] ^= 0xFF  # inside the record's data
    (folder / FILE).write_bytes(bytes(data))
    one_error_line(capsys, folder, FILE, "fails its data checksum", "dropping every later")


def test_a_record_still_being_written_is_left_out(tmp_path):
    """A run in progress: its last record may be cut short; the rest is drawn."""
    last = scalar("eval/win_rate_vs_random", 0.75, 20).SerializeToString()
    folder = write(tmp_path / "run", [*EVALS, scalar("eval/wall_minutes", 2.0, 20)],
                   header(len(last)) + last[:5])
    assert main([str(folder), "--out", str(tmp_path / "c.png")]) == 0
    assert read_run(folder)["curves"] == {"random": [(10, 60.0, 0.5)]}


def write_resumed_run(folder, steps) -> None:
    """A run's logs at ``steps``, then a resume's from step 15 on (``purge_step``) at 25."""
    first = SummaryWriter(str(folder), filename_suffix=".a")
    first.add_text("hyperparameters", "|eval_pairs|3|\n|final_eval_pairs|40|")
    for step in steps:
        first.add_scalar("eval/wall_minutes", step / 10, step)
        first.add_scalar("eval/win_rate_vs_random", 0.25, step)
    first.close()
    second = SummaryWriter(str(folder), purge_step=15, filename_suffix=".b")
    second.add_scalar("eval/wall_minutes", 5.0, 25)
    second.add_scalar("eval/win_rate_vs_random", 0.75, 25)
    second.close()


def test_a_resumed_run_drops_what_its_restart_purges(tmp_path):
    """``SummaryWriter(purge_step=...)`` (the trainer's resume): TensorBoard drops the values
    logged at that step or later before the restart; so does plot_curve."""
    write_resumed_run(tmp_path / "run", (10, 20, 30))
    run = read_run(tmp_path / "run")
    assert run["curves"] == {"random": [(10, 60.0, 0.25), (25, 300.0, 0.75)]}
    assert run["pairs"] == (3, 40)


def test_a_resumed_run_is_read_without_tensorboard_s_restart_warning(tmp_path, caplog):
    """TensorBoard's reader warned "Detected out of order event.step likely caused by a
    TensorFlow restart. Purging expired events..." for every resumed run (the purge is the
    resume's own); its logger is held to errors while reading, and its level put back."""
    import logging
    write_resumed_run(tmp_path / "run", (10, 20))
    tensorboard = logging.getLogger("tensorboard")
    level = tensorboard.level
    with caplog.at_level(logging.DEBUG):  # every record the reader makes reaches caplog
        tensorboard.setLevel(logging.INFO)
        try:
            assert main([str(tmp_path / "run"), "--out", str(tmp_path / "curve.png")]) == 0
            assert tensorboard.level == logging.INFO  # put back
        finally:
            tensorboard.setLevel(level)
    assert not [r for r in caplog.records if r.name.startswith("tensorboard")
                and r.levelno >= logging.WARNING], caplog.text


def test_logged_names_are_drawn_as_plain_text(tmp_path):
    """An agent named with ``$``: matplotlib's mathtext failed on it while saving."""
    folder = write(tmp_path / "run$x", [EVALS[0], scalar("eval/win_rate_vs_$\\nope{$", 0.5, 10)])
    assert main([str(folder), "--out", str(tmp_path / "c.png")]) == 0


def test_a_picture_that_cannot_be_written_is_one_line(tmp_path, capsys, monkeypatch):
    """savefig's OSError (a full disk) was a traceback."""
    import matplotlib.figure

    def full(self, *args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", full)
    folder = write(tmp_path / "run", EVALS)
    assert main([str(folder), "--out", str(tmp_path / "c.png")]) == 1
    err = capsys.readouterr().err
    assert err == f"error: cannot write {tmp_path / 'c.png'}: No space left on device\n", err


def test_a_failed_write_keeps_the_old_picture_and_leaves_no_partial_file(tmp_path, capsys,
                                                                          monkeypatch):
    """The picture is written beside its name and renamed once complete: a write that fails
    half way leaves the previous picture as it was and no temporary file."""
    import matplotlib.figure

    def half_written(self, fname, *args, **kwargs):
        with open(fname, "wb") as file:
            file.write(b"\x89PNG half")
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", half_written)
    folder = write(tmp_path / "run", EVALS)
    (tmp_path / "c.png").write_bytes(b"the old picture")
    assert main([str(folder), "--out", str(tmp_path / "c.png")]) == 1
    assert (tmp_path / "c.png").read_bytes() == b"the old picture"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.png", "run"]


def test_an_output_made_a_folder_while_reading_is_one_line(tmp_path, capsys, monkeypatch):
    """The output is checked before the run is read and again when the picture is written:
    a folder put under its name meanwhile is one error line, not a traceback or a write into
    the folder."""
    folder = write(tmp_path / "run", EVALS)
    read = plot_curve.read_run

    def read_then_mkdir(run_dir):
        run = read(run_dir)
        (tmp_path / "c.png").mkdir()
        return run
    monkeypatch.setattr(plot_curve, "read_run", read_then_mkdir)
    assert main([str(folder), "--out", str(tmp_path / "c.png")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: output ") and "not a regular file" in err, err
    assert err.count("\n") == 1 and not list((tmp_path / "c.png").iterdir())


def test_win_rates_at_steps_without_a_wall_time_are_one_line(tmp_path, capsys):
    """Every win rate at a step with no eval/wall_minutes: the curves were all empty and
    drawing them raised ValueError (max of an empty sequence) as a traceback."""
    folder = write(tmp_path / "run", [scalar("eval/wall_minutes", 1.0, 10),
                                      scalar("eval/win_rate_vs_random", 0.5, 20)])
    one_error_line(capsys, folder, "no eval/win_rate_vs_<agent> scalars at a step that has")
    # one agent at a matching step is drawn; the other, at none, is left out
    write(folder, [scalar("eval/wall_minutes", 1.0, 10), scalar("eval/win_rate_vs_random", 0.5, 20),
                   scalar("eval/win_rate_vs_greedy", 0.25, 10)])
    assert list(read_run(folder)["curves"]) == ["greedy"]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name, link", [("events.out.tfevents.2.fifo", False),
                                        ("events.out.tfevents.2.link", True),
                                        ("events.out.tfevents.\x1b]0;pwned\x07\x1b[2J", True)])
def test_a_fifo_under_an_event_file_s_name_is_refused_unopened(tmp_path, capsys, name, link):
    """TensorBoard's reader opened it and waited for a writer for ever (a FIFO, or a link to
    one: the check skipped what was not a regular file); a name is quoted unless plain text."""
    folder = write(tmp_path / "run", EVALS)
    os.mkfifo(tmp_path / "fifo" if link else folder / name)
    if link:
        os.symlink(tmp_path / "fifo", folder / name)
    err = one_error_line(capsys, folder, "is not a regular file", "not a TensorBoard event file")
    assert ("\\x1b[2J" in err and "\x1b" not in err) if "\x1b" in name else name in err, err


def test_more_curves_than_a_run_evaluates_against_are_refused_before_drawing(tmp_path, capsys):
    """2,000 eval/win_rate_vs_<agent> scalars at one step took 9 s to draw (20,000: over 110 s),
    the legend unreadable; the trainer evaluates against at most 32 agents."""
    rates = [scalar(f"eval/win_rate_vs_a{i}", 0.5, 10) for i in range(33)]
    folder = write(tmp_path / "run", [EVALS[0], *rates])
    one_error_line(capsys, folder, "33 eval/win_rate_vs_<agent> curves, more than 32")
    write(folder, [EVALS[0], *rates[:32]])
    assert len(read_run(folder)["curves"]) == 32


def test_a_scalar_with_more_values_than_a_curve_may_have_is_refused(tmp_path, capsys,
                                                                     monkeypatch):
    monkeypatch.setattr(plot_curve, "MAX_POINTS", 3, raising=False)
    events = [scalar(tag, 0.5, step) for step in range(1, 5)
              for tag in ("eval/wall_minutes", "eval/win_rate_vs_random")]
    folder = write(tmp_path / "run", events)
    one_error_line(capsys, folder, "'eval/wall_minutes' holds 4 values, more than the 3")
    write(folder, events[:6])
    assert len(read_run(folder)["curves"]["random"]) == 3


def test_event_records_past_the_bound_are_refused_before_tensorboard_reads_them(
        tmp_path, capsys, monkeypatch):
    """200,000 evaluations (19 MB) took 10 s and 190 MB to read and draw; TensorBoard reads
    ~50,000 records a second, whatever they hold: 1 GiB of them was ~8 minutes and 4 GB."""
    from tensorboard.backend.event_processing import event_accumulator

    def reload(self):
        raise AssertionError("TensorBoard read the files")
    monkeypatch.setattr(event_accumulator.EventAccumulator, "Reload", reload)
    monkeypatch.setattr(plot_curve, "MAX_EVENT_RECORDS", 2, raising=False)  # records: 3
    folder = write(tmp_path / "run", EVALS)
    one_error_line(capsys, folder, str(folder), "event files hold more than 2 records")


def test_tags_past_the_bound_are_refused_before_tensorboard_reads_them(tmp_path, capsys,
                                                                      monkeypatch):
    """TensorBoard's reader keeps a reservoir for every tag: 999,000 tags of one scalar each
    (61 MB, within the bounds on bytes and records) took 3.5 GB and 67 s to be refused."""
    from tensorboard.backend.event_processing import event_accumulator

    def reload(self):
        raise AssertionError("TensorBoard read the files")
    tags = [scalar(f"charts/x{i}", 0.5, 10) for i in range(1001)]
    folder = write(tmp_path / "run", [*EVALS, *tags[:998]])  # 1,000 tags: read
    assert read_run(folder)["curves"] == {"random": [(10, 60.0, 0.5)]}
    monkeypatch.setattr(event_accumulator.EventAccumulator, "Reload", reload)
    write(folder, [*EVALS, *tags[:999]])
    one_error_line(capsys, folder, str(folder), "event files hold more than 1,000 tags")


def test_a_record_that_is_not_an_event_is_refused(tmp_path, capsys):
    folder = write(tmp_path / "run", EVALS)
    with open(folder / FILE, "ab") as file:
        RecordWriter(file).write(b"\xff\xff\xff")  # its checksums right, its data no event
    one_error_line(capsys, folder, FILE, "record at byte", "is not an event")


def test_tag_names_in_error_lines_are_quoted_not_sent_to_the_terminal(tmp_path, capsys):
    """A tag's escapes (a terminal title, a cleared screen) were printed raw to stderr."""
    folder = write(tmp_path / "run", [EVALS[0], scalar("eval/win_rate_vs_\x1b]0;pwned\x07"
                                                       "\x1b[2J", 2.0, 10)])
    err = one_error_line(capsys, folder, "is 2.0 at step 10, not a win rate", "\\x1b")
    assert "\x1b" not in err and "\x07" not in err, err
