"""Hostile game record files (issue 15): the bytes and the file around a record -- hostile JSON,
the count of JSON values bounded before parsing, bad bytes, the size limit at its exact edge,
FIFOs, devices, folders, pipes, read errors and odd paths -- each refused with one short
message, and ``sevenrocks replay`` exits 2 with one line (the record's values:
``test_hostile_records.py``)."""

import copy
import json
import re
import sys
import time

import pytest

from sevenrocks_env import record as records
from sevenrocks_env.record import MAX_ROUNDS, RecordError, load, parse
from sevenrocks_env.render.replay import main as replay_main
from sevenrocks_env.rules import Match
from sevenrocks_env.textfile import read_text

from positions import played_to_the_end

from test_hostile_records import MESSAGE_LIMIT, RECORD, deep_list, finished_record, refused


@pytest.mark.parametrize("text,message", [
    ("[" * 2000 + "]" * 2000, "nested too deeply"),
    ('{"a": ' * 2000 + "1" + "}" * 2000, "nested too deeply"),
    ('{"target": ' + "9" * 5000 + "}", "not a game record"),
    ('{"target": NaN}', "NaN"),
    ('{"target": -Infinity}', "Infinity"),
    ("{not json", "not JSON"),
])
def test_parse_refuses_hostile_json(text, message):
    with pytest.raises(RecordError, match=message) as info:
        parse(text)
    assert len(str(info.value)) < MESSAGE_LIMIT


def test_the_count_of_json_values_is_bounded_before_parsing(monkeypatch):
    """32 MB of ``[{},{},...]`` used to parse into ~870 MB of dicts before being refused; the
    text's values are counted first.  A record at every bound (1000 rounds, each with 28
    placements and 88 knocks, indented as ``save`` writes it) is under the count."""
    placement = next(m for m in RECORD["rounds"][0]["moves"] if "tile" in m)
    knock = {"seat": 0, "action": 112, "pass": True}
    longest_round = dict(RECORD["rounds"][0], moves=[placement] * 28 + [knock] * 88)
    longest = dict(RECORD, rounds=[longest_round] * MAX_ROUNDS)
    assert isinstance(parse(json.dumps(longest, indent=1)), dict)  # not refused for its size
    exactly = "[" + ",".join(["0"] * records.MAX_JSON_VALUES) + "]"  # N-1 commas and one [
    assert len(parse(exactly)) == records.MAX_JSON_VALUES  # at the bound: read
    many = "[" + ",".join(["{}"] * records.MAX_JSON_VALUES) + "]"
    parsed = []
    monkeypatch.setattr(records.json, "loads", lambda *a, **k: parsed.append(1))
    with pytest.raises(RecordError, match="JSON values"):
        parse(many)
    assert not parsed  # refused before the parser ran


def test_load_refuses_bad_bytes_and_huge_files(tmp_path, monkeypatch):
    path = tmp_path / "game.json"
    path.write_bytes(b'{"format": "\xff\xfe"}')
    with pytest.raises(RecordError, match="not UTF-8"):
        load(path)
    monkeypatch.setattr(records, "MAX_RECORD_BYTES", 100)
    path.write_text(json.dumps(RECORD))
    with pytest.raises(RecordError, match="larger than"):
        load(path)


@pytest.mark.parametrize("content", [
    "[" * 2000 + "]" * 2000,
    '{"format": "sevenrocks-record/1", "target": ' + "7" * 5000 + "}",
    b"\xff\xfe\x00garbage",
])
def test_replay_cli_exits_2_with_one_line(tmp_path, monkeypatch, capsys, content):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "bad.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    assert replay_main([str(path), "--out", "game.gif"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and len(err) < MESSAGE_LIMIT
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json"]  # nothing written


def test_replay_cli_refuses_a_target_that_would_hang_the_picture(tmp_path, capsys):
    record = finished_record(seed=5)
    record["target"] = 10**9  # draw_scores would draw target/10 peg holes per frame
    path = tmp_path / "big.json"
    path.write_text(json.dumps(record))
    assert replay_main([str(path), "--out", str(tmp_path / "g.gif")]) == 2
    assert "target must be an int in [1, 5000]" in capsys.readouterr().err


def test_recursion_limit_is_untouched():
    limit = sys.getrecursionlimit()
    refused(deep_list(10_000))
    assert sys.getrecursionlimit() == limit


def test_a_file_of_exactly_the_limit_is_read(tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes(b"a" * 100)
    assert read_text(path, 100, "thing") == "a" * 100
    path.write_bytes(b"a" * 101)
    with pytest.raises(ValueError, match="larger than 100 bytes"):
        read_text(path, 100, "thing")


def test_the_size_limit_is_named_in_megabytes_from_one_mb(tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes(b"a" * (2**20 + 1))
    with pytest.raises(ValueError, match="larger than 1 MB; not a thing"):
        read_text(path, 2**20, "thing")


def test_wrong_types_are_named_as_types_and_load_names_the_file(tmp_path):
    """'seat 1.0 moved but it is seat 1's turn' and 'the record says 8 and True' read as if the
    numbers were wrong; a replay error did not name the file; a 5000-digit integer's message was
    Python's, cut off mid-word."""
    moves = RECORD["rounds"][0]["moves"]
    first = next(i for i, m in enumerate(moves) if m["action"] != 112)
    record = copy.deepcopy(RECORD)
    record["rounds"][0]["moves"][first]["seat"] = float(moves[first]["seat"])
    assert f"seat must be an int 0-3, got {float(moves[first]['seat'])}" in refused(record)
    record = copy.deepcopy(RECORD)
    record["rounds"][0]["moves"][first]["points"] = True
    assert "end_sum and points must be ints >= 0, got" in refused(record)
    record = copy.deepcopy(RECORD)
    record["winner"] = 1 - RECORD["winner"]
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(record))
    with pytest.raises(RecordError, match=r"^.*edited\.json: record says winner"):
        records.load(path)
    with pytest.raises(RecordError, match=r"an integer of more than \d+ digits$"):
        parse('{"target": ' + "9" * 5000 + "}")


@pytest.mark.timeout(20)  # the old read waited in open() for a writer that never came
def test_a_fifo_waits_a_bounded_time_and_a_device_or_a_folder_is_refused(tmp_path, capsys,
                                                                          monkeypatch):
    """``sevenrocks replay FIFO --check`` and ``train --config FIFO`` waited for ever for a
    writer; a FIFO nobody writes to is now refused after ``PIPE_WAIT_S`` (an empty config file
    trained with every default), a writer that comes later is read (the reader-first pattern
    ``train --config f & gen > f``), a device or a folder is refused, and a pipe with a writer
    is read (``... | sevenrocks replay /dev/stdin --check``)."""
    import os
    import subprocess
    import threading

    from sevenrocks_env import textfile
    from training.config_yaml import ConfigError, load_yaml_file

    monkeypatch.setattr(textfile, "PIPE_WAIT_S", 0.2)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    unwritten = f"{fifo} is a pipe nothing was written to in 0.2 s; not a "
    with pytest.raises(ValueError, match="^" + re.escape(unwritten + "thing") + "$"):
        read_text(fifo, 100, "thing")
    assert replay_main([str(fifo), "--check"]) == 2
    assert capsys.readouterr().err == f"error: {unwritten}game record\n"
    with pytest.raises(ConfigError, match=re.escape(unwritten + "config file")):
        load_yaml_file(fifo)
    monkeypatch.setattr(textfile, "PIPE_WAIT_S", 10.0)

    def write_later():
        time.sleep(0.3)
        fifo.write_text("seed: 1\n")
    # (a daemon, joined with a timeout: a reader that failed leaves the writer blocked in open
    # for ever, which must fail the test, not hang pytest)
    writer = threading.Thread(target=write_later, daemon=True)
    writer.start()
    assert load_yaml_file(fifo) == {"seed": 1}  # the reader waited for the writer
    writer.join(5)
    for path, words in (("/dev/zero", "is not a regular file (a device?), not a thing"),
                        (tmp_path, "is a folder, not a thing")):
        with pytest.raises(ValueError, match="^" + re.escape(f"{path} {words}")):
            read_text(path, 100, "thing")
    (tmp_path / "comments.yaml").write_text("# seed: 1\n")
    with pytest.raises(ConfigError, match=r"holds no settings \(empty, or comments only\)"):
        load_yaml_file(tmp_path / "comments.yaml")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["comments.yaml", "pipe"]
    match = played_to_the_end(Match.new(3, target=50), choose=lambda _, legal: legal[0])
    piped = subprocess.run([sys.executable, "-m", "sevenrocks_env.cli", "replay", "/dev/stdin",
                            "--check"], input=json.dumps(records.game_record(match)),
                           capture_output=True, text=True, timeout=60)
    assert piped.returncode == 0 and "a valid sevenrocks-record/1 record" in piped.stdout, piped


@pytest.mark.timeout(20)
def test_a_pipe_s_text_is_read_whole_when_it_arrives_in_parts(tmp_path):
    """After a FIFO's first bytes it is read to its end as any pipe is: a writer that pauses
    between two writes is not cut off at the pause."""
    import os
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def write_in_two_parts():
        with open(fifo, "wb", buffering=0) as pipe:
            pipe.write(b'{"a": ')
            time.sleep(0.5)
            pipe.write(b"1}")
    writer = threading.Thread(target=write_in_two_parts, daemon=True)  # (as above)
    writer.start()
    try:
        assert read_text(fifo, 100, "thing") == '{"a": 1}'
    finally:
        writer.join(5)


def test_a_read_error_is_a_value_error_naming_the_file(tmp_path, monkeypatch):
    """An I/O error while reading (a failing disk, a network file system gone) is one
    ``ValueError`` naming what was read and the file, not a bare ``OSError``."""
    import errno
    import os

    path = tmp_path / "f.txt"
    path.write_text("x")

    class Failing:
        def __init__(self, descriptor):
            os.close(descriptor)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def read(self, size):
            raise OSError(errno.EIO, "Input/output error")
    monkeypatch.setattr(os, "fdopen", lambda descriptor, mode: Failing(descriptor))
    with pytest.raises(ValueError, match=f"^cannot read thing {re.escape(str(path))}: "
                                         "Input/output error$"):
        read_text(path, 100, "thing")


def test_a_path_with_a_nul_character_is_named_in_the_message():
    """Python's "embedded null byte" named neither the path nor what was being read."""
    with pytest.raises(ValueError, match=r"^cannot read thing 'a\\x00b': embedded null byte$"):
        read_text("a\x00b", 100, "thing")


def test_the_bad_byte_of_a_utf8_file_with_a_bom_is_counted_from_the_file_s_start(tmp_path):
    """The message names the first bad byte by its offset in the file, for UTF-8 with a byte
    order mark (Notepad's) too: Python's utf-8-sig counted it after the BOM's 3 bytes, so a
    file whose byte 5 is bad was reported as "byte 2", the BOM's last byte (until 2026-12-07)."""
    from sevenrocks_env.textfile import decoded

    data = b"\xef\xbb\xbfab\xffc"
    assert data.index(b"\xff") == 5
    path = tmp_path / "record.json"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=r"is not UTF-8 text \(byte 5\)$"):
        read_text(path, 100, "game record")
    # the rule the other encodings follow: the offset in the bytes given
    with pytest.raises(ValueError, match=r"\(byte 6\)$"):
        decoded(b"\xfe\xff\x00a\x00b\x00", "f")  # UTF-16-BE with a BOM, cut short at byte 6
    with pytest.raises(ValueError, match=r"is not UTF-8 text \(byte 2\)$"):
        decoded(b"ab\xffc", "f")
