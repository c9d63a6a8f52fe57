"""A pair log of an earlier format is refused with the reason: the batched engine's random draws
changed on 2026-12-07 (``batched.deal.counter_key``), so a log of format 1 holds pairs this
version would not play, and continuing it would mix two sets of draws under one result."""

import json

import pytest

from sevenrocks_env import arena, arena_cli
from sevenrocks_env.arena_log import FORMAT, OLD_FORMATS, PairLogError


def _log_of_format(tmp_path, form: str):
    log = tmp_path / "l.jsonl"
    arena.evaluate("random", "greedy", 2, seed=4, log=log)
    lines = log.read_text().splitlines()
    header = json.loads(lines[0])
    assert header["format"] == FORMAT
    header["format"] = form
    log.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    return log


def test_a_log_of_format_1_is_refused_naming_why_and_left_as_it_was(tmp_path):
    assert FORMAT == "sevenrocks-arena-pairs/2" and set(OLD_FORMATS) == {
        "sevenrocks-arena-pairs/1"}
    log = _log_of_format(tmp_path, "sevenrocks-arena-pairs/1")
    before = log.read_bytes()
    with pytest.raises(PairLogError, match=r"format 'sevenrocks-arena-pairs/1', written before "
                                           r"2026-12-07.*start a new --log file"):
        arena.evaluate("random", "greedy", 3, seed=4, log=log)
    assert log.read_bytes() == before


def test_the_cli_says_so_in_one_line(tmp_path, capsys):
    log = _log_of_format(tmp_path, "sevenrocks-arena-pairs/1")
    assert arena_cli.main(["random", "greedy", "--pairs", "3", "--seed", "4",
                           "--log", str(log)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "written before 2026-12-07" in err
