"""``sevenrocks play`` scripted through a pipe: full rounds, the pause between rounds, quitting,
seats and seeds of the bots, saved record (issue 5).  Answers and the words of the game:
test_play_words.py; refused input and failures: test_play_failures.py."""

import io
import os
import subprocess
import sys

import pytest

from sevenrocks_env import record as records
from sevenrocks_env.agents import make_agent
from sevenrocks_env.play import Session, main
from sevenrocks_env.rules import Match
from sevenrocks_env.tiles import tile_name, tiles_of


def run(argv, answers):
    """``main`` on scripted answers (a string, or a stream standing for stdin)."""
    out = io.StringIO()
    code = main(argv, stdin=io.StringIO(answers) if isinstance(answers, str) else answers,
                stdout=out)
    return code, out.getvalue()


def test_scripted_match_plays_rounds_rejects_bad_input_and_saves(tmp_path):
    path = tmp_path / "game.json"
    answers = "99\n9-9 e\nhello\n" + "1\n" * 400
    code, out = run(["--seat", "0", "--seed", "3", "--partner", "greedy", "--opponents", "random",
                     "--target", "100", "--record", str(path)], answers)
    assert code == 0
    assert "not accepted: 99 is not on the list" in out
    assert "not accepted: not understood: '9-9 e'" in out or "not accepted: no tile 9|9" in out
    assert "round over" in out and "rounds to" in out and "scores: team 0" in out
    assert "wins" in out and f"game record saved to {path}" in out
    record = records.load(path)  # validates by replaying every move
    assert record["winner"] is not None and len(record["rounds"]) >= 2
    assert any(m["seat"] == 0 for m in record["rounds"][0]["moves"])


def test_quit_saves_the_round_in_progress(tmp_path):
    path = tmp_path / "quit.json"
    code, out = run(["--seat", "1", "--seed", "5", "--opponents", "random", "greedy",
                     "--record", str(path)], "1\nq\n")
    assert code == 0 and "quit; game record saved" in out
    record = records.load(path)
    assert record["rounds"][-1]["result"] is None


def test_real_pipe(tmp_path):
    path = tmp_path / "pipe.json"
    proc = subprocess.run(
        [sys.executable, "-m", "sevenrocks_env.cli", "play", "--seat", "2", "--seed", "8",
         "--opponents", "random", "--partner", "random", "--record", str(path)],
        input="1\n" * 30 + "q\n", capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "your move, seat 2" in proc.stdout and "quit; game record saved" in proc.stdout
    records.load(path)


def _play(path, answers, stdout=subprocess.PIPE, encoding="ascii"):
    return subprocess.run(
        [sys.executable, "-m", "sevenrocks_env.cli", "play", "--seed", "3", "--record", str(path)],
        input=answers.encode("utf-8"), stdout=stdout, stderr=subprocess.PIPE, timeout=60,
        env={**os.environ, "PYTHONIOENCODING": encoding})


def test_an_answer_the_terminal_cannot_show_is_escaped_and_the_game_saved(tmp_path):
    """On an ASCII or Latin-1 stdout, echoing a refused answer typed with an accent (or a
    full-width digit) was a UnicodeEncodeError traceback, and no record was saved."""
    path = tmp_path / "game.json"
    proc = _play(path, "\u00e9\n\uff13\nq\n")
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"not understood: '\\xe9'" in proc.stdout and b"Traceback" not in proc.stderr
    records.load(path)


def test_a_stdout_given_without_escapes_that_cannot_write_an_answer_still_saves(tmp_path):
    path = tmp_path / "game.json"
    out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")  # strict: no escapes
    code = main(["--seed", "3", "--record", str(path)], stdin=io.StringIO("\u00e9\nq\n"),
                stdout=out)
    assert code == 1
    records.load(path)


@pytest.mark.parametrize("command", ["play", "replay", "arena"])
def test_help_is_written_on_an_ascii_terminal(command):
    """The epilog's en dash (R1-R8) was a UnicodeEncodeError traceback on a stdout whose
    encoding lacks it (PYTHONIOENCODING=ascii, a Latin-1 locale)."""
    proc = subprocess.run([sys.executable, "-m", "sevenrocks_env.cli", command, "--help"],
                          capture_output=True, timeout=60,
                          env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 0 and b"R1-R8 are the sections" in proc.stdout, proc.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_an_output_full_from_its_first_line_still_saves_the_record(tmp_path):
    path = tmp_path / "game.json"
    with open("/dev/full", "wb") as full:
        proc = _play(path, "1\n" * 10, stdout=full, encoding="utf-8")
    assert proc.returncode == 1 and b"No space left on device" in proc.stderr, proc.stderr
    assert records.load(path)["rounds"][0]["moves"] == []


class _QuitAtPause(io.StringIO):
    """Answers 1 to every move prompt and q at the pause between rounds."""

    def __init__(self, out: io.StringIO):
        super().__init__()
        self.out = out

    def readline(self, *args):
        return "q\n" if self.out.getvalue().endswith("press Enter for the next round (q to quit): ") \
            else "1\n"


def test_pause_between_rounds_and_quit_there():
    from sevenrocks_env.agents import make_agent
    from sevenrocks_env.play import Session

    out = io.StringIO()
    agents = {s: make_agent("random", seed=s) for s in (1, 2, 3)}
    session = Session(0, agents, seed=3, target=250, stdin=_QuitAtPause(out), stdout=out,
                      echo=False, pause=True)
    assert session.run() is False
    text = out.getvalue()
    assert text.count("press Enter for the next round") == 1 and "scores: team 0" in text
    match = session.match
    assert not match.over and match.history[0].result is not None and not match.history[-1].moves


def test_a_terminal_s_answer_that_is_not_utf8_is_asked_again_piped_input_ends():
    """A Latin-1 terminal sends an accented letter as the byte 0xE9 (read as U+DCE9): the game
    ended there ("input is not UTF-8 text"); at a terminal that answer alone is refused."""
    agents = {s: make_agent("random", seed=s) for s in (1, 2, 3)}
    out = io.StringIO()
    session = Session(0, agents, seed=3, target=250, stdin=io.StringIO("\udce9\nq\n"),
                      stdout=out, echo=False, pause=True)
    assert session.ask("? ") == "q\n"
    assert out.getvalue().count("not accepted: not UTF-8 text") == 1
    out = io.StringIO()  # longer than an answer may be: the rest dropped, then asked again
    session = Session(0, agents, seed=3, target=250, stdin=io.StringIO("x" * 70 + "\udce9\nq\n"),
                      stdout=out, echo=False, pause=True)
    assert session.ask("? ") == "q\n"
    assert out.getvalue().count("not accepted: not UTF-8 text") == 0  # (its first 65: UTF-8)
    assert out.getvalue().count("not accepted: an answer is at most 64 characters") == 1
    out = io.StringIO()
    session = Session(0, agents, seed=3, target=250, stdin=io.StringIO("\udce9" * 70 + "\nq\n"),
                      stdout=out, echo=False, pause=True)
    assert session.ask("? ") == "q\n"
    assert out.getvalue().count("not accepted: not UTF-8 text") == 1
    piped = Session(0, agents, seed=3, target=250, stdin=io.StringIO("\udce9\nq\n"),
                    stdout=io.StringIO(), echo=True, pause=False)
    with pytest.raises(UnicodeDecodeError):
        piped.ask("? ")


def test_agents_are_never_asked_about_forced_moves():
    from sevenrocks_env.agents import RandomAgent
    from sevenrocks_env.play import Session

    class Strict(RandomAgent):
        name = "strict"

        def act(self, observation, action_mask):
            assert action_mask.sum() > 1, "a forced move reached an agent"
            return super().act(observation, action_mask)

    out = io.StringIO()
    session = Session(2, {s: Strict(seed=s) for s in (0, 1, 3)}, seed=11, target=100,
                      stdin=io.StringIO("1\n" * 400), stdout=out, echo=False)
    assert session.run() is True and session.match.over
    assert "seat 1 (strict)" in out.getvalue()


def test_a_drawn_seed_comes_from_all_2_to_the_63_seeds(tmp_path, monkeypatch):
    """The seed deals every hand: drawn from a small range, a player could find it from their
    own hand and know the others' (the web page draws from the same range)."""
    import secrets

    asked = []
    monkeypatch.setattr(secrets, "randbelow", lambda n: asked.append(n) or 12345)
    code, out = run(["--opponents", "random", "--record", str(tmp_path / "g.json")], "q\n")
    assert code == 0 and asked == [2**63]
    assert records.load(tmp_path / "g.json")["rounds"][0]["hands"] == [
        [tile_name(t) for t in tiles_of(hand)] for hand in Match.new(12345).history[0].hands]


def test_no_pause_after_the_round_that_ends_the_match():
    out = io.StringIO()
    agents = {s: make_agent("random", seed=s) for s in (1, 2, 3)}
    session = Session(0, agents, seed=3, target=30, stdin=io.StringIO("1\n" * 400 + "\n" * 50),
                      stdout=out, echo=False, pause=True)
    assert session.run() is True
    text = out.getvalue()
    rounds = len(session.match.history)
    assert text.count("press Enter for the next round") == rounds - 1 >= 1


def test_two_opponent_specs_are_left_then_right(tmp_path):
    """``--opponents LEFT RIGHT``: left is the next seat clockwise (seat + 1), right seat + 3."""
    code, out = run(["--seat", "0", "--seed", "3", "--partner", "heuristic", "--opponents",
                     "random", "greedy", "--target", "60", "--record", str(tmp_path / "g.json")],
                    "1\n" * 2000)
    assert code == 0
    assert "opponents seat 1 = random, seat 3 = greedy" in out
    assert "seat 1 (random)" in out and "seat 3 (greedy)" in out
    assert "seat 1 (greedy)" not in out and "seat 3 (random)" not in out


@pytest.mark.parametrize("word", ["quit", "Q", " exit "])
def test_the_pause_between_rounds_takes_every_quit_word_the_move_prompt_takes(word):
    """'quit' at the pause started the next round (only an exact 'q' was taken there)."""
    out = io.StringIO()

    class QuitWordAtPause(_QuitAtPause):
        def readline(self, *args):
            return word + "\n" if super().readline() == "q\n" else "1\n"

    agents = {s: make_agent("random", seed=s) for s in (1, 2, 3)}
    session = Session(0, agents, seed=3, target=250, stdin=QuitWordAtPause(out), stdout=out,
                      echo=False, pause=True)
    assert session.run() is False
    assert out.getvalue().count("press Enter for the next round") == 1


def test_the_moves_are_numbered_from_1_and_a_piped_answer_is_echoed(tmp_path):
    """The list starts at 1 (the number answered); a piped answer is echoed after its prompt,
    so a transcript reads as a dialogue."""
    code, out = run(["--seat", "0", "--seed", "3", "--opponents", "random", "--record",
                     str(tmp_path / "g.json")], "1\nq\n")
    assert code == 0
    assert "\n   1. " in out and "\n   0. " not in out
    assert "or q to quit: 1\n" in out


def test_bots_are_seeded_from_the_seed_and_their_seat(tmp_path, monkeypatch):
    from sevenrocks_env import play

    made = []
    real = play.make_agent
    monkeypatch.setattr(play, "make_agent", lambda spec, seed: made.append(seed) or
                        real(spec, seed=seed))
    run(["--seat", "1", "--seed", "5", "--opponents", "random", "--record",
         str(tmp_path / "g.json")], "q\n")
    assert sorted(made) == [20, 22, 23]  # 5 * 4 + seat, for seats 0, 2 and 3
