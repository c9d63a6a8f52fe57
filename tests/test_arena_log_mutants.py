"""The pair log (``sevenrocks_env.arena_log``): rules a mutation audit found unpinned (each test
here failed on one small change to the module)."""

from __future__ import annotations

import json
import os

import pytest

from sevenrocks_env import arena
from sevenrocks_env.arena_log import MAX_LINE, PairLogError, _checked_outcome

A, B = "greedy", "random"

#: A pair any two matches can give: A won both (max_rounds 100)
PAIR = {"pair": 0, "score": 2.0, "truncated": 0, "margin": 100, "rounds": 6, "points_a": 250,
        "points_b": 150, "round_wins_a": 4.0, "decisions": [30, 30], "think_s": [0.5, 0.25],
        "think_cpu_s": [0.25, 0.5]}


def _checked(max_rounds=100, **change):
    return _checked_outcome({**PAIR, **change}, 0, "log:2", max_rounds)


def _refused(message, max_rounds=100, **change):
    with pytest.raises(PairLogError, match=message):
        _checked(max_rounds, **change)


def test_a_cut_last_line_of_max_line_bytes_is_dropped_and_a_longer_one_refused(tmp_path):
    """A last line without its newline is a line cut short (played again) while it could be
    the start of a line of at most MAX_LINE bytes; past that it is refused as too long."""
    log = tmp_path / "l.jsonl"
    arena.evaluate(A, B, 2, seed=3, log=log)
    whole = log.read_text()
    lines = whole.splitlines(keepends=True)
    for length, refused in ((MAX_LINE, False), (MAX_LINE + 1, True)):
        log.write_text(lines[0] + lines[1] + "x" * length)
        if refused:
            with pytest.raises(PairLogError, match=f"l.jsonl:3: line longer than {MAX_LINE}"):
                arena.evaluate(A, B, 2, seed=3, log=log)
        else:
            arena.evaluate(A, B, 2, seed=3, log=log)
            again = log.read_text().splitlines(keepends=True)
            assert again[:2] == lines[:2] and len(again) == 3 and again[2].endswith("}\n")
            assert json.loads(again[2])["pair"] == 1


def test_the_base_pair_is_accepted_and_normalised():
    fields = _checked(think_s=[1, 0])
    assert fields["think_s"] == [1.0, 0.0] and all(type(v) is float for v in fields["think_s"])
    assert type(fields["score"]) is float and type(fields["round_wins_a"]) is float


@pytest.mark.parametrize("change, message", [
    ({"score": 2.5}, r"score must be a number in \[0, 2\]"),
    ({"truncated": 3}, r"truncated must be an int in \[0, 2\]"),
    ({"truncated": 0.0}, r"truncated must be an int"),
    ({"rounds": 201}, r"rounds must be an int in \[0, 200\]"),
    ({"round_wins_a": 7.0}, r"round_wins_a must be a number in \[0, 6\]"),
    ({"decisions": [200 * 112 + 1, 0]}, r"decisions must be an int in \[0, 22400\]"),
    ({"decisions": [30.0, 30]}, r"decisions must be an int"),
    ({"decisions": [30, 30, 1]}, r"decisions must be a list of two numbers"),
    ({"decisions": "ab"}, r"decisions must be a list of two numbers"),
    ({"margin": 100.0}, r"margin must be an int"),
    ({"points_a": 250.0}, r"points_a must be an int"),
    ({"points_b": 150.0}, r"points_b must be an int"),
    ({"think_s": [float("inf"), 0.0]}, r"think_s must be a number in \[0, 1000000000.0\]"),
    ({"think_cpu_s": [0.0, 1e9 + 1]}, r"think_cpu_s must be a number"),
    ({"extra": 1}, r"the pair line has an unknown key 'extra'"),
])
def test_each_value_s_type_and_range_is_named(change, message):
    _refused(message, **change)


def test_a_line_missing_a_key_or_not_an_object_is_named():
    data = {key: value for key, value in PAIR.items() if key != "rounds"}
    with pytest.raises(PairLogError, match="the pair line misses 'rounds'"):
        _checked_outcome(data, 0, "log:2", 100)
    with pytest.raises(PairLogError, match="a pair line must be a JSON object"):
        _checked_outcome([], 0, "log:2", 100)


@pytest.mark.parametrize("change, message", [
    ({"score": 1.5}, r"score 1.5 with 0 truncated matches"),
    ({"score": 2.0, "truncated": 2, "rounds": 200, "round_wins_a": 0.0},
     r"two truncated matches score 1/2 each"),
    ({"margin": 0, "points_a": 150}, r"score 2.0 with margin 0"),
    ({"round_wins_a": 4.25}, r"round_wins_a is not a multiple of 1/2"),
    # B lost both with points beyond 490 a round: B's points are bounded too
    ({"score": 0.0, "round_wins_a": 0.0, "points_a": 0, "points_b": 490 * 6 + 5,
      "margin": -490 * 6 - 5}, r"points beyond 490 a round"),
])
def test_each_consistency_rule_is_checked(change, message):
    _refused(f"not a pair any match can give: {message}", **change)


@pytest.mark.parametrize("change", [
    {"points_a": 490 * 6, "margin": 490 * 6 - 150},      # the most 6 rounds can move
    {"decisions": [0, 6]},                                 # every choice B's
    # A won one match, the other was cut at 100 rounds with A ahead in every round
    {"score": 1.5, "truncated": 1, "rounds": 102, "round_wins_a": 102.0,
     "decisions": [102, 0]},
])
def test_a_pair_at_the_edge_of_what_matches_give_is_accepted(change):
    _checked(**change)


def test_a_fingerprint_covers_every_byte_of_a_file_read_in_blocks(tmp_path):
    """A checkpoint is read in 1 MiB blocks: the digest is of the whole file, so a change
    past the first block (or late in any block) is a change of fingerprint."""
    import hashlib

    from sevenrocks_env.fingerprints import files_fingerprint
    data = bytes(range(256)) * (5 * 4096 + 7)  # 5 MiB and a bit: several blocks
    path = tmp_path / "policy.pt"
    path.write_bytes(data)
    digest = files_fingerprint(f"ckpt:{path}")
    assert digest == hashlib.sha256(data + b"\0").hexdigest()
    path.write_bytes(data[:-1] + b"\x00")
    assert files_fingerprint(f"ckpt:{path}") != digest


def test_a_huge_first_line_is_read_only_up_to_max_line_bytes(tmp_path):
    """A file of one long line (no newline in its first MAX_LINE bytes) is no pair log: it is
    refused having read MAX_LINE + 1 bytes, never loaded whole."""
    log = tmp_path / "l.jsonl"
    log.write_text('{"format": "sevenrocks-arena-pairs/2", "x": "' + "y" * 3 * MAX_LINE + '"}\n')
    with pytest.raises(PairLogError, match="no complete header line"):
        arena.evaluate(A, B, 1, seed=3, log=log)
    assert log.stat().st_size > 3 * MAX_LINE  # left as it was


def test_a_pair_line_of_max_line_bytes_with_its_newline_is_read_one_more_is_refused(tmp_path):
    """MAX_LINE bounds a line with its newline: a pair line padded (JSON allows spaces) to
    exactly MAX_LINE bytes reads back, one byte more is refused."""
    log = tmp_path / "l.jsonl"
    arena.evaluate(A, B, 2, seed=3, log=log)
    lines = log.read_text().splitlines()
    for length, refused in ((MAX_LINE, False), (MAX_LINE + 1, True)):
        padded = lines[1][:-1] + " " * (length - len(lines[1]) - 1) + "}"
        assert len(padded) + 1 == length and json.loads(padded) == json.loads(lines[1])
        log.write_text("\n".join([lines[0], padded, lines[2]]) + "\n")
        if refused:
            with pytest.raises(PairLogError, match=f"l.jsonl:2: line longer than {MAX_LINE}"):
                arena.evaluate(A, B, 2, seed=3, log=log)
        else:
            arena.evaluate(A, B, 2, seed=3, log=log)  # nothing to play: read, not rewritten
            assert log.read_text().splitlines()[1] == padded


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a full disk)")
def test_a_write_that_failed_is_one_error_and_closing_after_it_is_quiet():
    """A full disk: the write is a PairLogWriteError naming the log, and closing the writer
    after it (the same buffered bytes fail again) raises nothing more."""
    from sevenrocks_env.arena_log import PairLogWriteError, _Writer
    file = open("/dev/full", "wb")
    writer = _Writer(file, 0, "runs/l.jsonl")
    with pytest.raises(PairLogWriteError, match="runs/l.jsonl"):
        writer.write([arena.PairOutcome()])
    writer.close()
    assert file.closed


def test_a_pair_log_needs_spec_strings_and_makes_no_file_without_them(tmp_path):
    from sevenrocks_env.agents import GreedyAgent
    from sevenrocks_env.arena_log import open_log
    log = tmp_path / "l.jsonl"
    with pytest.raises(ValueError, match="a pair log needs agent spec strings"):
        open_log(log, [GreedyAgent(), B], 3, 250, 100, "python", 2)
    assert not log.exists()



def test_a_read_only_log_with_pairs_to_add_is_refused_and_its_lock_let_go(tmp_path,
                                                                            monkeypatch):
    """A log this run may not write (EACCES opening it to write: as root, chmod cannot make
    one) reads back, is a PairLogError once there are pairs to add, and its lock is let go:
    the next run, that may write it, goes on."""
    import errno

    from sevenrocks_env import arena_log_lock
    log = tmp_path / "l.jsonl"
    arena.evaluate(A, B, 1, seed=3, log=log)
    real_open = os.open

    def read_only(path, flags, *args):
        if str(path) == str(log) and flags & os.O_RDWR:
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(path, flags, *args)

    monkeypatch.setattr(arena_log_lock.os, "open", read_only)
    assert arena.evaluate(A, B, 1, seed=3, log=log).pairs == 1  # all logged: read back
    with pytest.raises(PairLogError, match="the pair log is read-only"):
        arena.evaluate(A, B, 2, seed=3, log=log)
    monkeypatch.setattr(arena_log_lock.os, "open", real_open)
    arena.evaluate(A, B, 2, seed=3, log=log)
    assert log.read_text().count("\n") == 3
