"""``sevenrocks play`` (play.py, play_answers.py, play_record.py): tests written in a mutation
audit, each for a deliberate small change of the product code that no earlier test noticed."""

import io

import pytest

from sevenrocks_env.agents import make_agent
from sevenrocks_env.play import Session, move_words, round_summary
from sevenrocks_env.play_answers import MAX_ANSWER, parse_answer, printable
from sevenrocks_env.rules import Match, apply_action, legal_actions
from sevenrocks_env.scoring import round_to_five
from sevenrocks_env.tiles import KNOCK, WEST, encode_action, parse_tile, pips_of

from positions import finished_round
from rules_examples import EXAMPLES, example_match
from test_play import run


def test_a_knock_and_the_opening_move_are_worded_as_the_web_page_shows_them():
    """The web page lists ``move_words`` (views.py): a forced knock, and the opening tile."""
    match = Match.new(3)
    assert match.opening
    first = legal_actions(match)[0]
    assert "to open the round -> end sum" in move_words(match, first)
    assert move_words(match, KNOCK) == "knock (no tile fits)"
    apply_action(match, first)
    assert not match.opening
    words = [move_words(match, a) for a in legal_actions(match) if a != KNOCK]
    assert words and all(" on the " in w and "to open" not in w for w in words)


def test_one_pip_is_singular():
    from sevenrocks_env.tiles import pips_words
    assert [pips_words(n) for n in (0, 1, 2, 12)] == ["0 pips", "1 pip", "2 pips", "12 pips"]


def test_each_remaining_hand_is_shown_with_its_pips_rounded_to_five():
    """R7: a remaining hand costs its pips rounded to 5; the summary says both numbers."""
    log = finished_round(accept=lambda log: any(
        pips_of(h) % 5 for h in log.remaining_hands())).history[-1]
    lines = [line for line in round_summary(log) if line.lstrip().startswith("seat ")]
    for seat, line in enumerate(lines):
        pips = pips_of(log.remaining_hands()[seat])
        words = f"{pips} pip" + ("" if pips == 1 else "s")  # (not "1 pips")
        assert f" {words:>7} -> rounds to {round_to_five(pips):>2}," in line, line


def _session(stdin: io.StringIO, out: io.StringIO, **kwargs) -> Session:
    agents = {s: make_agent("random", seed=s) for s in (1, 2, 3)}
    return Session(0, agents, seed=3, target=250, stdin=stdin, stdout=out,
                   echo=kwargs.pop("echo", False), **kwargs)


@pytest.mark.parametrize("byte", [b"\x80", b"\xc3", b"\xff"])
def test_every_byte_that_is_not_utf_8_is_refused_at_its_line(byte):
    """Read with ``surrogateescape``, the bytes 0x80..0xff that are not UTF-8 are the
    surrogates U+DC80..U+DCFF: each one, the last included, is not an answer."""
    stdin = io.TextIOWrapper(io.BytesIO(byte + b"\n"), encoding="utf-8",
                             errors="surrogateescape")
    with pytest.raises(UnicodeDecodeError):
        _session(stdin, io.StringIO()).ask("? ")


def test_the_default_target_is_250_and_seat_4_is_refused(tmp_path, capsys):
    """R8's default target (docs/rules.md), and the seats 0..3 of --seat."""
    from sevenrocks_env import record as records

    path = tmp_path / "g.json"
    assert run(["--seed", "3", "--opponents", "random", "--record", str(path)], "q\n")[0] == 0
    assert records.load(path)["target"] == 250
    assert run(["--seat", "4", "--opponents", "random"], "")[0] == 2
    assert "argument --seat: invalid choice: 4" in capsys.readouterr().err


def test_the_ending_signals_have_their_default_action_again_after_the_game(tmp_path):
    """SIGHUP and SIGTERM end the game as Ctrl-C does only while it runs: a program that
    calls ``main`` (a test, a wrapper) gets its signals back as they were."""
    import signal

    from sevenrocks_env.play import ENDING_SIGNALS, _as_ctrl_c

    seen = []

    class Watches(io.StringIO):
        def readline(self, *args):
            seen.extend(signal.getsignal(number) for number in ENDING_SIGNALS)
            return "q\n"

    before = [signal.signal(number, signal.SIG_DFL) for number in ENDING_SIGNALS]
    try:
        assert run(["--seed", "3", "--opponents", "random", "--record",
                    str(tmp_path / "g.json")], Watches())[0] == 0
        assert seen and all(handler is _as_ctrl_c for handler in seen)
        assert all(signal.getsignal(n) is signal.SIG_DFL for n in ENDING_SIGNALS)
    finally:
        for number, handler in zip(ENDING_SIGNALS, before):
            signal.signal(number, handler)


def _position_a():
    """Example A after 4 steps, seat 0 on turn: ends west 1 (spinner), east 3; seat 0 holds
    1|2 (fits west only) and 1|3 (fits both)."""
    match = example_match(EXAMPLES["A"], steps=4)
    match.turn = 0
    return match, legal_actions(match)


def test_answers_spelled_with_a_comma_pass_or_knock_and_an_empty_answer():
    match, legal = _position_a()
    west = encode_action(parse_tile("1|2"), WEST)
    assert parse_answer("1-2,w", match, legal) == parse_answer("1-2, west", match, legal) == west
    for word in ("k", "knock", "pass", " PASS "):
        assert parse_answer(word, match, [KNOCK]) == KNOCK
    with pytest.raises(ValueError, match="must place one"):
        parse_answer("pass", match, legal)
    for empty in ("", "   ", "\n"):
        with pytest.raises(ValueError, match="^empty answer$"):
            parse_answer(empty, match, legal)


def test_a_huge_number_is_shown_cut_and_with_its_length():
    match, legal = _position_a()
    with pytest.raises(ValueError, match=rf"^123456\.\.\.\(20 digits\) is not on the list: "
                                         rf"choose 1\.\.{len(legal)}$"):
        parse_answer("1234567890" * 2, match, legal)
    with pytest.raises(ValueError, match=r"^123456789012 is not on the list"):
        parse_answer("123456789012", match, legal)


def test_a_tile_that_fits_nowhere_lists_an_end_showing_a_blank_as_open():
    """Example C after step 2: ends west 0, east 5; seat 2 holds 1|1 (R3: a blank is open)."""
    match = example_match(EXAMPLES["C"], steps=2)
    match.turn = 2
    with pytest.raises(ValueError, match=r"^1\|1 fits no open end \(open: west 0, east 5\)$"):
        parse_answer("1-1", match, legal_actions(match))


def test_printable_shows_control_characters_and_cuts_at_max_answer():
    assert printable("a\x1b[2Jb\x07") == "a\\x1b[2Jb\\x07"
    assert printable("x" * (MAX_ANSWER + 30)) == "x" * MAX_ANSWER


def test_a_refused_tile_answer_says_which_ends_to_add_or_the_number_the_end_shows():
    match, legal = _position_a()
    with pytest.raises(ValueError, match=r"^1\|3 fits more than one end: add w or e$"):
        parse_answer("1-3", match, legal)
    with pytest.raises(ValueError, match=r"^1\|2 does not fit the east end \(open number 3\)$"):
        parse_answer("1-2 e", match, legal)


def test_an_existing_record_is_refused_as_not_writable_when_only_writing_is_denied(
        tmp_path, monkeypatch, capsys):
    """The check asks for write access (a file that may be read but not written)."""
    import os

    from sevenrocks_env import play_record
    path = tmp_path / "old.json"
    path.write_text("{}")
    real = os.access
    monkeypatch.setattr(play_record.os, "access", lambda p, mode: mode != os.W_OK
                        if str(p) == str(path) else real(p, mode))
    code, out = run(["--seed", "3", "--opponents", "random", "--record", str(path)], "q\n")
    assert code == 2 and capsys.readouterr().err == f"error: --record {path}: not writable\n"
    assert path.read_text() == "{}" and "your move" not in out
