"""Hostile game records (issue 15): whatever a file or a Python caller hands us, the answer is
the record replayed exactly or a :class:`RecordError` with a short message; ``sevenrocks
replay`` exits 2 with one line.  Work is bounded by construction: target, rounds and moves per
round are checked before anything loops over them."""

import copy
import json
import math
import random
import re
import sys
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sevenrocks_env import record as records
from sevenrocks_env.checks import shown
from sevenrocks_env.record import (FORMAT, MAX_MOVES_PER_ROUND, MAX_ROUNDS, MAX_TARGET,
                                   RecordError, game_record, load, parse, validate)
from sevenrocks_env.render.replay import main as replay_main
from sevenrocks_env.rules import Match, apply_action, legal_actions
from sevenrocks_env.textfile import read_text

MESSAGE_LIMIT = 2000  # bytes; an error message is a line, not a dump of the input


def finished_record(seed=5, target=60):
    match = Match.new(seed, target=target)
    rng = random.Random(seed)
    while not match.over:
        apply_action(match, rng.choice(legal_actions(match)))
    return game_record(match)


RECORD = finished_record()
HUGE = 10 ** 5000 + 7


def deep_list(depth: int):
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def deep_dict(depth: int):
    value: dict = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def refused(record) -> str:
    with pytest.raises(RecordError) as info:
        validate(record)
    message = str(info.value)
    assert len(message) < MESSAGE_LIMIT and "\n" not in message
    return message


#: Values a hostile file or caller can put anywhere: wrong types, huge ints, NaN, deep nesting.
hostile_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.sampled_from([5000, -5000, 63, 19]).map(lambda d: (10 ** abs(d) + 7) * (1 if d > 0 else -1)),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
    st.sampled_from(["3|5", "0|0", "7|7", "x" * 5000, "112", ""]))
hostile_values = st.one_of(
    hostile_scalars,
    st.recursive(hostile_scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=8), inner, max_size=5)),
        max_leaves=20),
    st.integers(1000, 5000).map(deep_list), st.integers(1000, 5000).map(deep_dict))


def paths(value, prefix=()):
    """Every path into a JSON-like value (dict keys, list indexes)."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, prefix + (index,))


RECORD_PATHS = [p for p in paths(RECORD) if p]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(RECORD_PATHS), hostile_values)
def test_any_value_anywhere_is_replayed_or_refused(path, value):
    record = copy.deepcopy(RECORD)
    holder = record
    for key in path[:-1]:
        holder = holder[key]
    before = holder[path[-1]]
    holder[path[-1]] = value
    if type(value) is type(before) and value == before and not (
            isinstance(value, float) and math.isnan(value)):
        validate(record)  # unchanged: still a good record
        return
    try:
        validate(record)
    except RecordError as error:
        assert len(str(error)) < MESSAGE_LIMIT and "\n" not in str(error)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_values)
def test_any_value_as_a_whole_record_is_refused(value):
    refused(value)


def test_python_values_json_never_makes_are_refused_too():
    """``validate`` takes any Python value: a NumPy array as a tile escaped as NumPy's own
    ValueError (its ``==`` is an array), a key whose ``__str__`` raises as that error."""
    import numpy as np

    class Key:
        def __str__(self):
            raise RuntimeError("boom")
    record = copy.deepcopy(RECORD)
    placement = next(m for m in record["rounds"][0]["moves"] if "tile" in m)
    placement["tile"] = np.array([placement["tile"], "x"])
    assert "but the move says tile <ndarray>" in refused(record)
    assert "unknown keys ['<Key>']" in refused({**RECORD, Key(): 1})
    assert "unknown record format <ndarray>" in refused({**RECORD, "format": np.array([FORMAT])})
    assert refused(None).endswith("a game record is a JSON object, got null")  # JSON's names
    assert refused([1]).endswith("got an array") and refused("x").endswith("got a string")


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["target", "rounds", "winner", "scores", "format"]), hostile_values)
@example("target", 36).via("a target the same plays win at: hypothesis found it failing once")
@example("target", 35).via("one below: the match would have ended a tile earlier")
def test_top_level_keys(key, value):
    record = dict(RECORD, **{key: value})
    if value == RECORD[key] and type(value) is type(RECORD[key]):
        return
    if key == "target" and type(value) is int and value in TARGETS_OF_THE_SAME_MATCH:
        validate(record)  # a target the same plays also win at, on the same tile: valid
        return
    refused(record)


def _targets_of_the_same_match(record) -> range:
    """The targets under which ``record``'s plays give the same match: above every score a team
    held before the winning tile (R8: the win is checked after every scoring tile), up to the
    winner's final score."""
    scores, highest = [0, 0], 0
    placements = [move for rnd in record["rounds"] for move in rnd["moves"] if "points" in move]
    for rnd in record["rounds"]:
        for move in rnd["moves"]:
            if move is placements[-1]:
                return range(highest + 1, record["scores"][record["winner"]] + 1)
            scores[move["seat"] % 2] += move.get("points", 0)
            highest = max(highest, *scores)
        if rnd["result"] != "won":
            scores = list(rnd["scores"])  # after the round's deductions
    raise AssertionError("the record has no winning tile")


TARGETS_OF_THE_SAME_MATCH = _targets_of_the_same_match(RECORD)


@pytest.mark.parametrize("make", [deep_list, deep_dict])
def test_deep_python_nesting_in_every_message_position(make):
    deep = make(100_000)  # repr() of this would raise RecursionError
    for key in ("target", "winner", "scores", "format"):
        refused(dict(RECORD, **{key: deep}))
    record = copy.deepcopy(RECORD)
    record["rounds"][0]["moves"][0]["action"] = deep
    assert "illegal action" in refused(record)
    record = copy.deepcopy(RECORD)
    record["rounds"][0]["hands"][0][0] = deep
    assert "seat 0's hand" in refused(record)


def test_huge_integers_are_named_by_size_not_printed():
    for key in ("target", "winner"):
        message = refused(dict(RECORD, **{key: HUGE}))
        assert "bits" in message
    record = copy.deepcopy(RECORD)
    record["rounds"][0]["moves"][0]["seat"] = HUGE
    assert "bits" in refused(record)
    record = dict(RECORD, scores=[HUGE, 0])
    refused(record)


def test_bounds_before_work():
    assert "target" in refused(dict(RECORD, target=MAX_TARGET + 1))
    many = dict(RECORD, rounds=RECORD["rounds"] * (MAX_ROUNDS // len(RECORD["rounds"]) + 1))
    assert "rounds" in refused(many)
    record = copy.deepcopy(RECORD)
    record["rounds"][0]["moves"] = [{"seat": 0, "action": 112, "pass": True}] * (
        MAX_MOVES_PER_ROUND + 1)
    assert "moves" in refused(record)


def test_the_documented_bounds_are_exact_edges(tmp_path):
    """docs/security.md: at most 1000 rounds, 116 moves a round, 1,000,000 JSON values and
    32 MB of file; one past each is refused for its size, before any replay or parsing, and the
    bound itself is not (what is refused there is the content, not the size)."""
    assert (MAX_ROUNDS, MAX_MOVES_PER_ROUND) == (1000, 116)
    message = refused(dict(RECORD, rounds=[RECORD["rounds"][0]] * 1001))
    assert message == "record has 1001 rounds; at most 1000 are read"
    knock = {"seat": 0, "action": 112, "pass": True}
    for count, size_refused in ((116, False), (117, True)):
        record = copy.deepcopy(RECORD)
        record["rounds"][0]["moves"] = [knock] * count
        message = refused(record)
        assert ("a round has at most 116" in message) == size_refused, message
    values = 1_000_000
    with pytest.raises(RecordError, match="more than 1,000,000 JSON values"):
        parse("[" + ",".join(["0"] * (values + 1)) + "]")  # N commas and one [
    for score, words in ((10**6, "record says scores"), (-10**6, "record says scores"),
                         (10**6 + 1, r"scores must be two ints \(\|n\| <= 1000000\)")):
        assert re.search(words, refused(dict(RECORD, scores=[score, 0])))
    path = tmp_path / "big.json"
    path.write_bytes(b"{}" + b" " * (32 * 2**20 - 2))
    with pytest.raises(RecordError, match="unknown record format"):  # read: exactly 32 MB
        load(path)
    path.write_bytes(b"{}" + b" " * (32 * 2**20 - 1))
    with pytest.raises(RecordError, match="larger than 32 MB"):
        load(path)


def test_exactly_max_rounds_rounds_are_read():
    """At most MAX_ROUNDS rounds are read: a record of exactly that many is replayed (here it
    fails later, at round 1's opener), not refused for its length."""
    exactly = dict(RECORD, rounds=[RECORD["rounds"][0]] * MAX_ROUNDS)
    message = refused(exactly)
    assert message.startswith("round 1: ") and "are read" not in message, message


@pytest.mark.parametrize("value", [0, -1, MAX_TARGET + 1, True, 60.0, "60", None, [60]])
def test_a_target_outside_1_to_5000_or_not_an_int_is_refused(value):
    assert f"target must be an int in [1, {MAX_TARGET}]" in refused(dict(RECORD, target=value))


def test_a_bool_is_not_an_int_anywhere_in_a_record():
    """JSON ``true``/``false`` where the format has an int (a seat, an opener, an action, a
    slot, a point, a score, the winner, the target) is refused even where it equals the right
    number (``true == 1``): a reader in another language would not take it as one."""
    record = finished_record(seed=0)  # it has an action 0 (0|0 at slot 0) too
    assert any(m["action"] == 0 for rnd in record["rounds"] for m in rnd["moves"])
    won_at_one = finished_record(seed=1, target=1)  # a target of 1: true as the target
    checked = 0
    for base in (record, won_at_one):
        for path in paths(base):
            holder = base
            for key in path[:-1]:
                holder = holder[key]
            if not path or type(holder[path[-1]]) is not int or holder[path[-1]] not in (0, 1):
                continue
            bad = copy.deepcopy(base)
            holder = bad
            for key in path[:-1]:
                holder = holder[key]
            holder[path[-1]] = bool(holder[path[-1]])
            refused(bad)
            checked += 1
    assert checked > 100


def test_an_action_in_range_but_illegal_is_refused_as_illegal():
    """An action number 0-111 naming a tile the seat does not hold (its tile and slot written
    to match) is refused as illegal (R6), not played."""
    record = copy.deepcopy(RECORD)
    rnd = record["rounds"][0]
    move = rnd["moves"][0]
    other = rnd["hands"][(move["seat"] + 1) % 4][0]  # a tile of the next seat
    tile = next(t for t in range(28) if records.tile_name(t) == other)
    move.update(action=tile << 2 | move["slot"], tile=other)
    assert f"round 0, move 0: illegal action {tile << 2 | move['slot']}" in refused(record)


def _placement_index(record) -> int:
    return next(i for i, move in enumerate(record["rounds"][0]["moves"]) if "tile" in move)


@pytest.mark.parametrize("where", ["record", "round", "placement", "knock"])
@pytest.mark.parametrize("key, value", [("pass", True), ("bogus", [1, 2]), ("x" * 5000, 0)])
def test_a_key_the_format_does_not_have_is_refused_not_ignored(where, key, value):
    """A placement that also says ``pass: true``, or any key no writer produces, at any level."""
    record = copy.deepcopy(RECORD)
    moves = record["rounds"][0]["moves"]
    holder = {"record": record, "round": record["rounds"][0],
              "placement": moves[_placement_index(record)],
              "knock": next(move for move in moves if move["action"] == 112)}[where]
    if key in holder:
        return  # a knock has its pass already
    holder[key] = value
    message = refused(record)
    assert ("unknown keys" in message or "a knock is exactly" in message), message


@pytest.mark.parametrize("value", [False, None, 1, "true"])
def test_a_knock_says_pass_true(value):
    record = copy.deepcopy(RECORD)
    next(m for m in record["rounds"][0]["moves"] if m["action"] == 112)["pass"] = value
    assert "a knock is exactly" in refused(record)


def test_missing_keys_are_named():
    record = copy.deepcopy(RECORD)
    del record["rounds"][0]["moves"][_placement_index(record)]["points"]
    assert "missing keys ['points']" in refused(record)
    assert "missing keys ['winner']" in refused({k: v for k, v in RECORD.items() if k != "winner"})


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


def test_shown_is_short_for_anything():
    class Loud:
        def __repr__(self):
            raise RuntimeError("never called")
    for value in (HUGE, deep_list(50_000), "x" * 10**6, list(range(10**5)), Loud(), {1: HUGE}):
        assert len(shown(value)) <= 100


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
    writer = threading.Thread(target=write_later)
    writer.start()
    assert load_yaml_file(fifo) == {"seed": 1}  # the reader waited for the writer
    writer.join()
    for path, words in (("/dev/zero", "is not a regular file (a device?), not a thing"),
                        (tmp_path, "is a folder, not a thing")):
        with pytest.raises(ValueError, match="^" + re.escape(f"{path} {words}")):
            read_text(path, 100, "thing")
    (tmp_path / "comments.yaml").write_text("# seed: 1\n")
    with pytest.raises(ConfigError, match=r"holds no settings \(empty, or comments only\)"):
        load_yaml_file(tmp_path / "comments.yaml")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["comments.yaml", "pipe"]
    match = Match.new(3, target=50)
    while not match.over:
        apply_action(match, legal_actions(match)[0])
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
    writer = threading.Thread(target=write_in_two_parts)
    writer.start()
    try:
        assert read_text(fifo, 100, "thing") == '{"a": 1}'
    finally:
        writer.join()


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
