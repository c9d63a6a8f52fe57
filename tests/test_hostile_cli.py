"""``sevenrocks play`` under hostile input and signals (issues 14, 15): Ctrl-C and undecodable
bytes save the game record and exit with one line; records go to ``games/`` unless ``--record``
says otherwise, and a bad ``--record`` is refused before the game starts."""

from __future__ import annotations

import io
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sevenrocks_env import record as records
from sevenrocks_env.play import GAMES, main, round_summary
from sevenrocks_env.rules import Match

from positions import played_to_the_end

PLAYERS = ["--partner", "random", "--opponents", "random"]


def default_sigint() -> None:
    """In the child: Ctrl-C's default action.  A test run started in the background by a
    non-interactive shell (as CI may be) inherits SIGINT *ignored*, and Python then installs no
    KeyboardInterrupt handler, so the SIGINT tests would test nothing.  Likewise SIGHUP and
    SIGTERM: a run under ``nohup`` inherits SIGHUP ignored, which ``sevenrocks play`` rightly
    leaves alone."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    for name in ("SIGHUP", "SIGTERM"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)


def start_play(tmp_path, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "sevenrocks_env.play", "--seat", "0",
                             "--seed", "3", *PLAYERS, *args], cwd=tmp_path,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=dict(os.environ, PYTHONUNBUFFERED="1"),
                            preexec_fn=default_sigint)


def read_until(process, text: bytes, limit: float = 120) -> bytes:
    """stdout until ``text`` appears (the prompt has no newline, so read raw chunks)."""
    seen, deadline = b"", time.monotonic() + limit
    while text not in seen:
        assert time.monotonic() < deadline, seen[-500:]
        ready, _, _ = select.select([process.stdout], [], [], 1)
        if ready:
            chunk = os.read(process.stdout.fileno(), 4096)
            assert chunk, seen[-500:]
            seen += chunk
    return seen


def test_ctrl_c_at_the_prompt_saves_the_record(tmp_path):
    process = start_play(tmp_path)
    read_until(process, b"choose a number")
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130
    lines = [line for line in err.decode().splitlines() if line.strip()]
    assert lines == [f"interrupted; game record saved to {GAMES}/sevenrocks-game-3.json"], err
    record = records.load(tmp_path / GAMES / "sevenrocks-game-3.json")
    assert record["rounds"][-1]["result"] is None
    assert sorted(os.listdir(tmp_path)) == [GAMES]  # nothing else written


def test_undecodable_input_saves_the_record(tmp_path):
    process = start_play(tmp_path, "--record", "game.json")
    _, err = process.communicate(b"\xff\xfe\xfd\n", timeout=60)
    assert process.returncode == 2
    lines = [line for line in err.decode().splitlines() if line.strip()]
    assert lines == ["error: input is not UTF-8 text; game record saved to game.json"], err
    records.load(tmp_path / "game.json")


def test_the_answers_before_an_undecodable_line_are_played(tmp_path):
    """``printf '1\\n\\xc3\\n' | sevenrocks play``: the strict decoder failed on the whole chunk
    read, so the answer 1 before the bad line was lost too (no move of the human recorded)."""
    process = start_play(tmp_path, "--record", "game.json")
    _, err = process.communicate(b"1\n\xc3\n", timeout=60)
    assert process.returncode == 2 and b"input is not UTF-8 text" in err, err
    moves = records.load(tmp_path / "game.json")["rounds"][0]["moves"]
    assert [m["seat"] for m in moves].count(0) == 1


@pytest.mark.parametrize("record,words", [
    ("missing/folder/g.json", "does not exist"),
    (".", "is a folder"),
    ("x" * 300, "cannot be used (File name too long)"),  # an OSError, not a traceback
    ("/proc/sevenrocks.json", "cannot write in /proc"),  # was refused only after the game
])
def test_a_bad_record_path_is_refused_before_the_game(tmp_path, monkeypatch, capsys, record,
                                                      words):
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    assert main(["--seed", "1", *PLAYERS, "--record", record], stdin=io.StringIO("1\n"),
                stdout=out) == 2
    assert words in capsys.readouterr().err and out.getvalue() == ""  # no game shown
    assert os.listdir(tmp_path) == []


def test_records_go_to_games_by_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    assert main(["--seed", "5", *PLAYERS], stdin=io.StringIO("q\n"), stdout=out) == 0
    assert (tmp_path / GAMES / "sevenrocks-game-5.json").is_file()


def test_a_record_never_replaces_a_file(tmp_path, monkeypatch, capsys):
    """``--record`` of an existing file is refused before the game (it was overwritten, even on
    an immediate quit); the default name of a seed played again gets ``-2``."""
    monkeypatch.chdir(tmp_path)
    precious = tmp_path / "notes.txt"
    precious.write_text("precious\n")
    assert main(["--seed", "5", *PLAYERS, "--record", str(precious)],
                stdin=io.StringIO("q\n"), stdout=io.StringIO()) == 2
    assert "exists already" in capsys.readouterr().err
    assert precious.read_text() == "precious\n"
    for _ in range(2):
        assert main(["--seed", "5", *PLAYERS], stdin=io.StringIO("q\n"),
                    stdout=io.StringIO()) == 0
    assert sorted(os.listdir(tmp_path / GAMES)) == ["sevenrocks-game-5-2.json",
                                                    "sevenrocks-game-5.json"]

    class _MadeMeanwhile(io.StringIO):  # a file appears at the record's path during the game
        def readline(self, *args):
            (tmp_path / "mine.json").write_text("mine\n")
            return "q\n"
    assert main(["--seed", "5", *PLAYERS, "--record", "mine.json"], stdin=_MadeMeanwhile(),
                stdout=io.StringIO()) == 0
    assert (tmp_path / "mine.json").read_text() == "mine\n"
    records.load(tmp_path / "mine-2.json")  # the record went beside it


def test_a_record_is_never_written_through_a_symbolic_link(tmp_path, monkeypatch, capsys):
    """``--record`` of a link to nothing said "game record saved" and made the file the link
    points at, in another folder; a link (to anything) is refused before the game, the default
    name skips one, and one made during the game gets the record beside it."""
    monkeypatch.chdir(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "d.json").symlink_to(elsewhere / "target.json")
    (tmp_path / "f.json").symlink_to(tmp_path / "elsewhere")  # to a folder
    for link in ("d.json", "f.json"):
        out = io.StringIO()
        assert main(["--seed", "1", *PLAYERS, "--record", link], stdin=io.StringIO("q\n"),
                    stdout=out) == 2
        err = capsys.readouterr().err
        assert f"--record {link}: is a symbolic link" in err and err.count("\n") == 1, err
        assert out.getvalue() == ""  # refused before the game
    assert os.listdir(elsewhere) == []
    (tmp_path / GAMES).mkdir()
    (tmp_path / GAMES / "sevenrocks-game-1.json").symlink_to(elsewhere / "default.json")
    assert main(["--seed", "1", *PLAYERS], stdin=io.StringIO("q\n"), stdout=io.StringIO()) == 0
    records.load(tmp_path / GAMES / "sevenrocks-game-1-2.json")

    class _LinkedMeanwhile(io.StringIO):  # a link appears at the record's path during the game
        def readline(self, *args):
            (tmp_path / "late.json").symlink_to(elsewhere / "late.json")
            return "q\n"
    assert main(["--seed", "1", *PLAYERS, "--record", "late.json"], stdin=_LinkedMeanwhile(),
                stdout=io.StringIO()) == 0
    records.load(tmp_path / "late-2.json")
    assert os.listdir(elsewhere) == []


def test_a_drawn_seed_is_not_told_before_the_game(tmp_path, monkeypatch):
    """The seed deals every hand: as on the web page, a drawn one is not shown at the start
    (the record's name says it once the game is over); a seed the player gave is."""
    monkeypatch.chdir(tmp_path)
    drawn, given = io.StringIO(), io.StringIO()
    assert main([*PLAYERS], stdin=io.StringIO("q\n"), stdout=drawn) == 0
    assert main(["--seed", "5", *PLAYERS], stdin=io.StringIO("q\n"), stdout=given) == 0
    assert drawn.getvalue().startswith("Seven Rocks: you are seat 0")
    assert given.getvalue().startswith("Seven Rocks, seed 5: you are seat 0")
    (name,) = [n for n in os.listdir(tmp_path / GAMES) if n != "sevenrocks-game-5.json"]
    seed = int(name.removeprefix("sevenrocks-game-").removesuffix(".json"))
    assert str(seed) not in drawn.getvalue().splitlines()[0] and seed >= 0


def test_deductions_never_show_minus_zero():
    for seed in range(40):
        match = played_to_the_end(Match.new(seed, target=60), choose=lambda _, legal: legal[0])
        for log in match.history:
            assert not any("-0" in line.split("->")[-1] for line in round_summary(log)[1:])


def test_forced_knock_plays_itself_with_a_note():
    notes = 0
    for seed in range(12):
        out = io.StringIO()
        main(["--seat", "0", "--seed", str(seed), *PLAYERS, "--target", "100", "--record",
              os.devnull], stdin=io.StringIO("1\n" * 400), stdout=out)
        text = out.getvalue()
        notes += text.count("you knock (R6)")
        assert "knock (no tile fits)" not in text  # never offered as a numbered choice
    assert notes > 0


def test_escape_codes_long_lines_and_huge_numbers_are_answered_safely(tmp_path):
    """A pasted escape sequence is echoed escaped (never sent to the terminal raw); a line past
    the answer limit is refused without being kept or repeated; a 60-digit number is simply
    not on the list."""
    out = io.StringIO()
    answers = "\x1b]0;PWNED\x07\n" + "9" * 60 + "\n" + "9" * 5000 + "\n" + "x" * 1_000_000 + "\nq\n"
    code = main(["--seed", "3", *PLAYERS, "--record", str(tmp_path / "g.json")],
                stdin=io.StringIO(answers), stdout=out)
    text = out.getvalue()
    assert code == 0 and "\x1b" not in text and "\x07" not in text
    assert "\\x1b]0;PWNED\\x07" in text
    assert "is not on the list" in text and "Exceeds the limit" not in text
    assert text.count("an answer is at most 64 characters") == 2
    assert len(text) < 20_000  # the megabyte line is neither echoed nor quoted back


class _Zeros:
    """``< /dev/zero``: a line that never ends."""

    def readline(self, limit=-1):
        return "\0" * limit


def test_input_without_line_ends_is_the_end_of_input(tmp_path):
    """``sevenrocks play < /dev/zero`` read and dropped characters for ever."""
    out = io.StringIO()
    path = tmp_path / "g.json"
    assert main(["--seed", "3", *PLAYERS, "--record", str(path)], stdin=_Zeros(), stdout=out) == 0
    assert "no line end in 1048576 characters: end of input" in out.getvalue()
    records.load(path)


class _ClosedOutput(io.StringIO):
    """A stdout whose reader went away after the first few writes (``| head``)."""

    def write(self, text):
        if self.tell() > 200:
            raise BrokenPipeError(32, "Broken pipe")
        return super().write(text)


def test_a_closed_output_still_saves_the_record(tmp_path, capsys):
    path = tmp_path / "g.json"
    code = main(["--seed", "3", *PLAYERS, "--record", str(path)],
                stdin=io.StringIO("1\n" * 50), stdout=_ClosedOutput())
    assert code == 1
    assert "error: cannot write the game: Broken pipe; game record saved to" in \
        capsys.readouterr().err
    records.load(path)


def test_the_sevenrocks_command_stops_quietly_on_a_closed_pipe(tmp_path):
    """``sevenrocks ... | head -c 1`` with more output than a pipe holds: no traceback, exit 1
    as other tools; a full stdout (/dev/full): one line naming the subcommand, exit 2."""
    program = ("import sys, types, sevenrocks_env.cli as cli\n"
               "module = types.ModuleType('chatty')\n"
               "module.main = lambda argv: print('x' * 4_000_000) or 0\n"
               "sys.modules['chatty'] = module\n"
               "cli.SUBCOMMANDS['arena'] = ('chatty', '')\n"
               "sys.exit(cli.main(['arena']))\n")
    script = tmp_path / "chatty.py"
    script.write_text(program)
    closed = subprocess.run(["bash", "-c", f"{sys.executable} {script} | head -c 1; "
                                           "exit ${PIPESTATUS[0]}"],
                            capture_output=True, text=True, timeout=120)
    assert closed.returncode == 1 and "Traceback" not in closed.stderr, closed.stderr
    full = subprocess.run(["bash", "-c", f"{sys.executable} {script} > /dev/full"],
                          capture_output=True, text=True, timeout=120)
    assert full.returncode == 2 and "Traceback" not in full.stderr
    assert full.stderr.strip().startswith("error: sevenrocks arena:"), full.stderr


@pytest.mark.parametrize("module, args", [
    ("sevenrocks_env.arena", "greedy random --pairs 1 --no-progress"),
    ("sevenrocks_env.arena_cli", "greedy random --pairs 1 --no-progress"),
])
def test_python_dash_m_handles_a_full_stdout_as_the_sevenrocks_command(module, args):
    """``python -m sevenrocks_env.arena ... > /dev/full`` was an OSError traceback."""
    full = subprocess.run(["bash", "-c", f"{sys.executable} -m {module} {args} > /dev/full"],
                          capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[1])
    assert full.returncode == 2 and "Traceback" not in full.stderr, full.stderr
    assert full.stderr.startswith("error: sevenrocks ") and full.stderr.count("\n") == 1


@pytest.mark.parametrize("stdout", ["closed pipe", "/dev/full"])
def test_the_dispatcher_s_own_output_handles_a_closed_or_full_stdout(stdout):
    """``sevenrocks --version > /dev/full`` ended with status 120 and "Exception ignored";
    ``sevenrocks --help | head`` could print a BrokenPipeError traceback: the dispatcher's own
    text goes through the same guard as a subcommand's."""
    if stdout == "closed pipe":
        read_end, out = os.pipe()
        os.close(read_end)
    else:
        out = os.open("/dev/full", os.O_WRONLY)
    try:
        proc = subprocess.run([sys.executable, "-c", "import sys, sevenrocks_env.cli as c; "
                               "sys.exit(c.main(['--version']))"], stdout=out,
                              stderr=subprocess.PIPE, text=True, timeout=120,
                              env={**os.environ, "PYTHONUNBUFFERED": "1"})
    finally:
        os.close(out)
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
    if stdout == "closed pipe":
        assert proc.returncode == 1 and proc.stderr == ""
    else:
        assert proc.returncode == 2 and proc.stderr.startswith("error: sevenrocks: No space")


def test_sevenrocks_play_into_a_closed_pipe_exits_1_with_one_line(tmp_path):
    """``sevenrocks play | head -1``: play kept its record and said so, then the interpreter's
    flush at exit failed again (status 120, "Exception ignored ... BrokenPipeError")."""
    record = tmp_path / "game.json"
    proc = subprocess.Popen([sys.executable, "-c", "import sys, sevenrocks_env.cli as c; "
                             "sys.exit(c.main(sys.argv[1:]))", "play", "--seed", "2",
                             "--opponents", "random", "--target", "5000",  # more than a pipe holds
                             "--record", str(record)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={k: v for k, v in os.environ.items()
                                            if k != "PYTHONUNBUFFERED"})
    proc.stdin.write("1\n" * 5000)
    proc.stdin.close()
    assert proc.stdout.readline().startswith("Seven Rocks")   # as head -1 reads
    proc.stdout.close()
    code, err = proc.wait(timeout=120), proc.stderr.read()
    proc.stderr.close()
    assert code == 1 and "Exception ignored" not in err, err
    assert "cannot write the game: Broken pipe; game record saved" in err
    assert record.is_file()


@pytest.mark.parametrize("name", ["SIGHUP", "SIGTERM"])
def test_a_closed_terminal_or_kill_saves_the_record(tmp_path, name):
    """The terminal window closed (SIGHUP) or ``kill PID`` (SIGTERM) at the prompt ended the
    process at once and the game record was lost: they stop the game as Ctrl-C does, and exit
    with the shell's status for the signal, 128 + its number (it was Ctrl-C's 130)."""
    if not hasattr(signal, name):
        pytest.skip(f"no {name} on this system")
    process = start_play(tmp_path)
    read_until(process, b"choose a number")
    process.send_signal(getattr(signal, name))
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + getattr(signal, name), (process.returncode, err)
    lines = [line for line in err.decode().splitlines() if line.strip()]
    assert lines == [f"interrupted; game record saved to {GAMES}/sevenrocks-game-3.json"], err
    record = records.load(tmp_path / GAMES / "sevenrocks-game-3.json")
    assert record["rounds"][-1]["result"] is None


def test_a_hangup_ignored_on_purpose_stays_ignored(tmp_path):
    """``nohup sevenrocks play ...``: a SIGHUP the caller ignores is not made a Ctrl-C."""
    if not hasattr(signal, "SIGHUP"):
        pytest.skip("no SIGHUP on this system")
    process = subprocess.Popen(
        [sys.executable, "-m", "sevenrocks_env.play", "--seed", "3", *PLAYERS], cwd=tmp_path,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    read_until(process, b"choose a number")
    process.send_signal(signal.SIGHUP)
    out, _ = process.communicate(b"q\n", timeout=60)
    assert process.returncode == 0 and b"quit; game record saved" in out
